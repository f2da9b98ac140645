package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/producerstate"
)

// TestProducerSnapshotDoesNotStopAppends: a leader copies its producer
// state for the periodic snapshot without the append lock, so produce is
// never held up by a copy over every partition, unless a transaction
// opened after the copy's offset makes the copy take it again exactly,
// with appends stopped. Either way the snapshot holds the state.
func TestProducerSnapshotDoesNotStopAppends(t *testing.T) {
	for _, tc := range []struct {
		name string
		// openPast opens a transaction past the log's end in the state,
		// as one opened while the copy runs would be.
		openPast bool
		exact    bool // the copy waits for the append lock
	}{
		{name: "idempotent batches", openPast: false, exact: false},
		{name: "a transaction opened past the copy's offset", openPast: true, exact: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBroker(t, testConfig(t, t.TempDir()))
			cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic("snap"), kgo.RequiredAcks(kgo.AllISRAcks()))
			createTopic(t, cl, "snap", 3)
			for i := range 3 {
				if err := cl.ProduceSync(testCtx(t), &kgo.Record{Partition: int32(i), Value: []byte("v")}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			if tc.openPast {
				p := b.partition("snap", 0)
				p.mu.Lock()
				p.BeginTxn(424242, b.st.WriteOffset()+1)
				p.mu.Unlock()
			}

			b.appendMu.Lock() // an append in progress, as long as the test likes
			type copied struct {
				s       producerstate.Snapshot
				through int64
			}
			done := make(chan copied, 1)
			go func() {
				s, through := b.copyLeaderProducers()
				done <- copied{s, through}
			}()
			wait := 30 * time.Second // only against a hang
			if tc.exact {
				wait = 200 * time.Millisecond
			}
			var got copied
			select {
			case got = <-done:
				b.appendMu.Unlock()
				if tc.exact {
					t.Fatal("the exact copy did not wait for the append lock")
				}
			case <-time.After(wait):
				b.appendMu.Unlock()
				if !tc.exact {
					t.Fatal("the snapshot copy waited for the append lock")
				}
				got = <-done
			}

			if len(got.s.Parts) != 3 {
				t.Fatalf("snapshot of %d partitions, want 3: %+v", len(got.s.Parts), got.s.Parts)
			}
			if got.s.LogOffset <= 0 || got.through < got.s.LogOffset {
				t.Errorf("snapshot at %d copied through %d", got.s.LogOffset, got.through)
			}
			if err := b.snapshotProducers(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// BenchmarkProducerSnapshotCopy copies the producer state of a topic of
// 10,000 partitions, each written by 4 idempotent producers (the state
// `unilog bench produce` leaves): exact is the copy that used to hold the
// append lock, and so every produce, for its whole duration every 10 s;
// concurrent is the copy a snapshot makes now, under each partition's
// lock only.
//
//	go test -run '^$' -bench ProducerSnapshotCopy -benchtime 20x ./broker/
func BenchmarkProducerSnapshotCopy(b *testing.B) {
	const partitions, producers = 10_000, 4
	br := startBroker(b, testConfig(b, b.TempDir()))
	createTopic(b, newClient(b, br.Addr()), "snap", partitions)
	for i := range int32(partitions) {
		p := br.partition("snap", i)
		for id := range int64(producers) {
			for seq := range int32(producerstate.DedupWindow) {
				p.Record(producerstate.Batch{ProducerID: id, FirstSeq: seq, Records: 1}, int64(seq), int64(seq)+1)
			}
		}
	}
	for _, bc := range []struct {
		name string
		copy func() producerstate.Snapshot
	}{
		{"exact", br.copyLeaderProducersExact},
		{"concurrent", func() producerstate.Snapshot { s, _ := br.copyLeaderProducers(); return s }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if s := bc.copy(); len(s.Parts) != partitions {
					b.Fatalf("%d partitions copied", len(s.Parts))
				}
			}
		})
	}
}
