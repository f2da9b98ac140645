package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/txntest"
	"github.com/unilog/unilog/producerstate"
	"github.com/unilog/unilog/txn"
)

// produceTxns runs n transactions of perTxn records each through a
// transactional producer, committing the even ones and aborting the odd,
// and returns the committed values.
func produceTxns(t *testing.T, cl *kgo.Client, topic string, from, n, perTxn int) map[string]bool {
	t.Helper()
	ctx := testCtx(t)
	committed := make(map[string]bool)
	for i := from; i < from+n; i++ {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatalf("begin %d: %v", i, err)
		}
		for j := range perTxn {
			v := fmt.Sprintf("txn%d-%d", i, j)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(j % 3), Value: []byte(v)}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce %s: %v", v, err)
				}
			})
			if i%2 == 0 {
				committed[v] = true
			}
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := txntest.End(ctx, cl, kgo.TransactionEndTry(i%2 == 0), topic); err != nil {
			t.Fatalf("end %d: %v", i, err)
		}
	}
	return committed
}

// countValues reads the topic from the start until it has seen n
// records at the isolation level, and returns how often each value came.
func countValues(t *testing.T, addr, topic string, n int, committed bool) map[string]int {
	t.Helper()
	opts := []kgo.Opt{}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	seen := make(map[string]int)
	for _, r := range consumeN(t, addr, topic, n, opts...) {
		seen[string(r.Value)]++
	}
	return seen
}

func checkExactlyOnce(t *testing.T, seen map[string]int, committed map[string]bool) {
	t.Helper()
	for v, c := range seen {
		switch {
		case !committed[v]:
			t.Errorf("read_committed consumer saw %s of an aborted transaction", v)
		case c != 1:
			t.Errorf("read_committed consumer saw %s %d times", v, c)
		}
	}
	if len(seen) != len(committed) {
		t.Errorf("read_committed consumer saw %d distinct records, want %d", len(seen), len(committed))
	}
}

// TestTransactionsExactlyOnce: a franz-go transactional producer commits
// and aborts transactions spread over three partitions; a read_committed
// consumer sees every committed record once and no aborted one, and so
// after a restart from the producer-state snapshot and after one that
// rebuilds the aborted index from the log.
func TestTransactionsExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	b, err := Open(cfg, testStore())
	if err != nil {
		t.Fatal(err)
	}
	const topic, txns, perTxn = "eos", 10, 6
	admin := newClient(t, b.Addr())
	createTopic(t, admin, topic, 3)
	pr := newClient(t, b.Addr(), kgo.TransactionalID("eos-producer"), kgo.TransactionTimeout(30*time.Second))
	committed := produceTxns(t, pr, topic, 0, txns, perTxn)
	pr.Close()

	checkExactlyOnce(t, countValues(t, b.Addr(), topic, len(committed), true), committed)
	// read_uncommitted sees the aborted records too, and the markers
	// (one per partition per transaction) are skipped.
	if all := countValues(t, b.Addr(), topic, txns*perTxn, false); len(all) != txns*perTxn {
		t.Errorf("read_uncommitted saw %d distinct records, want %d", len(all), txns*perTxn)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, snapshot := range []bool{true, false} {
		if !snapshot {
			if err := os.Remove(filepath.Join(dir, producerstate.FileName)); err != nil {
				t.Fatal(err)
			}
		}
		b = startBroker(t, testConfig(t, dir))
		checkExactlyOnce(t, countValues(t, b.Addr(), topic, len(committed), true), committed)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// latestOffset asks ListOffsets for the partition's latest offset at the
// isolation level.
func latestOffset(t *testing.T, cl *kgo.Client, topic string, partition int32, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatal(err)
	}
	return p.Offset
}

// TestLastStableOffset: an open transaction holds the last stable offset
// at its first record: read_committed ListOffsets answers it and
// read_committed consumers stop there, while a later committed record of
// another producer waits behind it; the commit releases both.
func TestLastStableOffset(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "lso", 1)
	ctx := testCtx(t)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "lso", Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	open := newClient(t, b.Addr(), kgo.TransactionalID("open"))
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, &kgo.Record{Topic: "lso", Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	other := newClient(t, b.Addr(), kgo.TransactionalID("other"))
	committed := produceTxns(t, other, "lso", 0, 1, 1)
	if m := scrape(t, b); !strings.Contains(m, `unilog_transactional_ids{state="Ongoing"} 1`) || !strings.Contains(m, `unilog_transactional_ids{state="CompleteCommit"} 1`) {
		t.Errorf("/metrics with one transaction open, one committed:\n%s", m)
	}
	if got := latestOffset(t, cl, "lso", 0, readCommitted); got != 1 {
		t.Errorf("read_committed latest %d, want 1 (the open transaction's first offset)", got)
	}
	if got := latestOffset(t, cl, "lso", 0, 0); got != 4 {
		t.Errorf("read_uncommitted latest %d, want 4 (plain, open, other's record and marker)", got)
	}
	if seen := countValues(t, b.Addr(), "lso", 1, true); seen["plain"] != 1 || len(seen) != 1 {
		t.Errorf("read_committed before the commit: %v, want only plain", seen)
	}
	if err := txntest.End(ctx, open, kgo.TryCommit, "lso"); err != nil {
		t.Fatal(err)
	}
	if got := latestOffset(t, cl, "lso", 0, readCommitted); got != 5 {
		t.Errorf("read_committed latest after the commit %d, want 5", got)
	}
	committed["plain"], committed["open"] = true, true
	seen := countValues(t, b.Addr(), "lso", 3, true)
	checkExactlyOnce(t, seen, committed)
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("read_committed after the commit: %v", keys)
}

// TestTxnLogRefusesBeforeRole: a node restarting in a replica group
// (Config.AwaitRole) opens its transaction coordinator from its own log,
// whose timeout scan may abort, finish or forget transactions at once.
// Until Promote or Demote says it leads, its log may be a deposed
// leader's: the transaction log appends nothing, as the offsets log does
// not, so no state or marker is written (or sent to other groups) that
// the group's leader never sees.
func TestTxnLogRefusesBeforeRole(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.AwaitRole = true
	b := startBroker(t, cfg)
	end := b.LogEndOffset()
	_, err := txnLog{b}.Append(testCtx(t), 0, txn.Record{Key: []byte("k"), Value: []byte("v")}, nil)
	if !errors.Is(err, txn.ErrNotCoordinator) {
		t.Errorf("Append before the role is known: %v, want ErrNotCoordinator", err)
	}
	if got := b.LogEndOffset(); got != end {
		t.Errorf("the log grew from %d to %d before the role is known", end, got)
	}
}
