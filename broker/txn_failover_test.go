package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnFailover: a follower promoted after replicating a leader's log
// takes over its transactions: a committed transaction is visible to
// read_committed, an aborted one is not, and one left open holds the
// last stable offset until the producer's successor (same transactional
// id, on the new leader) fences it, which aborts it.
func TestTxnFailover(t *testing.T) {
	leaderDir := t.TempDir()
	so := testStore()
	so.CommitLog.FileSize = replicaFileSize
	b := startBrokerWith(t, groupConfig(t, leaderDir), so)
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "fo", 3)
	ctx := testCtx(t)
	pr := newClient(t, b.Addr(), kgo.TransactionalID("fo-1"))
	committed := produceTxns(t, pr, "fo", 0, 2, 4) // one committed, one aborted
	open := newClient(t, b.Addr(), kgo.TransactionalID("fo-open"))
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if err := open.ProduceSync(ctx, &kgo.Record{Topic: "fo", Partition: p, Value: []byte("open")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	f := promotedFollower(t, b, leaderDir, t.TempDir())

	fcl := newClient(t, f.Addr())
	d, err := kadm.NewClient(fcl).DescribeTransactions(ctx, "fo-1", "fo-open")
	if err != nil {
		t.Fatal(err)
	}
	if s1, s2 := d["fo-1"].State, d["fo-open"].State; s1 != "CompleteAbort" || s2 != "Ongoing" {
		t.Fatalf("on the promoted follower: fo-1 %s, fo-open %s; want CompleteAbort and Ongoing", s1, s2)
	}
	// The open transaction's records come after all of fo-1's: the last
	// stable offset is their offset.
	for p := range int32(3) {
		if lso, hw := latestOffset(t, fcl, "fo", p, readCommitted), latestOffset(t, fcl, "fo", p, 0); lso != hw-1 {
			t.Errorf("fo/%d on the promoted follower: last stable offset %d, high watermark %d; want the open record's offset", p, lso, hw)
		}
	}
	next := newClient(t, f.Addr(), kgo.TransactionalID("fo-open"))
	after := produceTxns(t, next, "fo", 10, 1, 2) // fences and aborts the open one, then commits
	for v := range after {
		committed[v] = true
	}
	seen := countValues(t, f.Addr(), "fo", len(committed), true)
	checkExactlyOnce(t, seen, committed)
}
