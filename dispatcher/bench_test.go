package dispatcher

import (
	"fmt"
	"testing"

	"github.com/unilog/unilog/commitlog"
)

// BenchmarkIndex indexes one-record batches round robin over many
// partitions, as a producer's linger spreads them (franz-go sends about one
// record per partition per batch): each topic takes 300,000 records, as
// bench produce writes, so at 10,000 partitions every queue stays in the
// journal (30 entries) and at 1,000 each is promoted to files (300). One op
// is one record.
func BenchmarkIndex(b *testing.B) {
	for _, parts := range []int{10_000, 1_000} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			const perTopic = 300_000
			live := make(map[string]commitlog.TopicID)
			d := New(Options{Queues: openQueues(b, b.TempDir()), Logger: quietLogger(), Live: func(topic string) (commitlog.TopicID, bool) {
				id, ok := live[topic]
				return id, ok
			}})
			var r commitlog.Record
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				k := i % perTopic
				if k == 0 {
					r.Topic = fmt.Sprintf("t%d", i/perTopic)
					r.TopicID = commitlog.TopicID{byte(len(live) + 1)}
					live[r.Topic] = r.TopicID
				}
				r.TotalSize, r.PhysOffset, r.Count = 1100, int64(i)*1100, 1
				r.Partition, r.QueueOffset, r.ProducerTimestamp = int32(k%parts), int64(k/parts), int64(k)
				if err := d.Index(&r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
