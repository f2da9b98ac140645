package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkPromote measures how long a follower takes to become leader
// against the size of the log it replicated, with its producer state
// caught up by its own catch-up (as a follower keeps it) and, for
// comparison, with none, which Promote must then rebuild from the whole
// log (as it did before followers kept it).
//
//	go test -run '^$' -bench Promote -benchtime 3x ./broker/
func BenchmarkPromote(b *testing.B) {
	for _, mib := range []int{16, 64, 256} {
		cfg := testConfig(b, b.TempDir())
		so := testStore()
		so.CommitLog.FileSize = 64 << 20
		br := startBrokerWith(b, cfg, so)
		createTopic(b, newClient(b, br.Addr()), "bench", 8)
		batches := fillIdempotent(b, br, "bench", 8, int64(mib)<<20)
		for _, caughtUp := range []bool{true, false} {
			b.Run(fmt.Sprintf("log=%dMiB/caught-up=%v", mib, caughtUp), func(b *testing.B) {
				ctx := context.Background()
				for range b.N {
					b.StopTimer()
					br.Demote()
					br.replica.mu.Lock()
					if caughtUp {
						if err := br.catchUpLocked(); err != nil {
							b.Fatal(err)
						}
					} else {
						br.replica.parts, br.replica.replayed = make(partitionStates), 0
					}
					br.replica.mu.Unlock()
					b.StartTimer()
					if err := br.Promote(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(batches), "batches")
			})
		}
	}
}

// fillIdempotent appends idempotent batches of 10 records of 100 bytes,
// round robin over partitions and 16 producers, until the log holds size
// bytes, straight into storage (no network), and returns how many.
func fillIdempotent(tb testing.TB, br *Broker, topic string, partitions int32, size int64) int {
	tb.Helper()
	seq := map[[2]int64]int32{}
	n := 0
	for ; br.st.WriteOffset() < size; n++ {
		pid, part := int64(n%16), int32(n)%partitions
		k := [2]int64{pid, int64(part)}
		batch := idempotentBatch(pid, seq[k], 10, 100)
		seq[k] += 10
		if _, err := br.st.Append(nil, []StorageBatch{{Topic: topic, Partition: part, Count: 10, Records: batch}}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := br.st.WaitDispatched(context.Background(), br.st.WriteOffset()); err != nil {
		tb.Fatal(err)
	}
	return n
}

// idempotentBatch is a v2 batch of n records of size bytes from producer
// pid (epoch 0) starting at sequence first.
func idempotentBatch(pid int64, first, n int32, size int) []byte {
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i].Value = make([]byte, size)
	}
	b := newBatch(recs, 0, 0)
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		panic(err)
	}
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = pid, 0, first
	return rb.AppendTo(nil)
}
