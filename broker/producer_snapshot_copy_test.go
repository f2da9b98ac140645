package broker

import (
	"fmt"
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
				raw     []byte
				through int64
			}
			done := make(chan copied, 1)
			go func() {
				raw, through := b.encodeLeaderProducers(nil)
				done <- copied{raw, through}
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

			s, err := producerstate.Decode(got.raw)
			if err != nil || len(s.Parts) != 3 {
				t.Fatalf("snapshot of %d partitions, want 3: %+v, %v", len(s.Parts), s.Parts, err)
			}
			if s.LogOffset <= 0 || got.through < s.LogOffset {
				t.Errorf("snapshot at %d copied through %d", s.LogOffset, got.through)
			}
			if err := b.snapshotProducers(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// BenchmarkProducerSnapshotCopy copies and encodes the producer state of
// a topic of 10,000 partitions, each written by 4 idempotent producers
// (the state `unilog bench produce` leaves), after a new batch in every
// partition (all) or in one partition of a hundred (1pct): exact is the
// copy that holds the append lock, and so every produce, for its whole
// duration; concurrent is the periodic snapshot's, under each
// partition's lock only.
//
//	go test -run '^$' -bench ProducerSnapshotCopy -count 6 ./broker/
func BenchmarkProducerSnapshotCopy(b *testing.B) {
	const partitions, producers = 10_000, 4
	br := startBroker(b, testConfig(b, b.TempDir()))
	createTopic(b, newClient(b, br.Addr()), "snap", partitions)
	seq := int32(0)
	for ; seq < producerstate.DedupWindow; seq++ {
		for i := range int32(partitions) {
			p := br.partition("snap", i)
			for id := range int64(producers) {
				p.Record(producerstate.Batch{ProducerID: id, FirstSeq: seq, Records: 1}, int64(seq), int64(seq)+1)
			}
		}
	}
	var room []byte // the last snapshot's bytes, as snapshotProducers keeps them
	for _, bc := range []struct {
		name string
		copy func() []byte
	}{
		{"exact", func() []byte { raw := br.encodeLeaderProducersExact(room); room = raw; return raw }},
		{"concurrent", func() []byte { raw, _ := br.encodeLeaderProducers(room); room = raw; return raw }},
	} {
		for _, every := range []int32{1, 100} {
			b.Run(fmt.Sprintf("%s/changed=%d%%", bc.name, 100/every), func(b *testing.B) {
				b.ReportAllocs()
				var raw []byte
				for range b.N {
					b.StopTimer()
					for i := int32(0); i < partitions; i += every {
						p := br.partition("snap", i)
						p.mu.Lock()
						p.Record(producerstate.Batch{ProducerID: 0, FirstSeq: seq, Records: 1}, int64(seq), int64(seq)+1)
						p.mu.Unlock()
					}
					seq++
					b.StartTimer()
					raw = bc.copy()
				}
				b.StopTimer()
				if s, err := producerstate.Decode(raw); err != nil || len(s.Parts) != partitions {
					b.Fatalf("%d partitions copied: %v", len(s.Parts), err)
				}
			})
		}
	}
}
