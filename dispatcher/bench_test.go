package dispatcher

import (
	"context"
	"fmt"
	"testing"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
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

// BenchmarkDispatchPass indexes one-record messages round robin over many
// partitions through a whole pass (the cursor, the read-ahead and Index),
// as the dispatcher runs beside a producer's linger: into queues that
// already have their files, and into queues still in the journal (those
// of a topic of 10,000 partitions that bench produce fills, 30 entries
// each). One op is one record.
func BenchmarkDispatchPass(b *testing.B) {
	for _, small := range []bool{false, true} {
		for _, parts := range []int32{1_000, 10_000} {
			b.Run(fmt.Sprintf("small=%t/partitions=%d", small, parts), func(b *testing.B) {
				benchDispatchPass(b, parts, small)
			})
		}
	}
}

func benchDispatchPass(b *testing.B, parts int32, small bool) {
	l, err := commitlog.Open(commitlog.Options{Dir: b.TempDir(), FileSize: 64 << 20, Logger: quietLogger(), RetentionAge: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Recover(0, nil); err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 100)
	appendN := func(n int) {
		for i := range n {
			if _, err := l.Append(&commitlog.Message{Topic: "t", Partition: int32(i) % parts, Count: 1, Body: body}); err != nil {
				b.Fatal(err)
			}
		}
	}
	opts := consumequeue.Options{Dir: b.TempDir(), SmallEntries: consumequeue.DefaultSmallEntries}
	if small {
		// No queue reaches its promotion point, however long the run.
		opts.SmallEntries, opts.SmallEntriesMax, opts.SmallBudget = 1<<30, 1<<30, 1<<40
	}
	qs := openQueuesWith(b, opts)
	d := New(Options{Log: l, Queues: qs, Logger: quietLogger()})
	d.cursor = l.Cursor(0)
	defer d.cursor.Close()
	// Every queue declared; unless small, past its promotion point and
	// promoted.
	warm := int(parts)
	if !small {
		warm *= consumequeue.DefaultSmallEntries
	}
	appendN(warm)
	if err := d.DispatchTo(l.WriteOffset()); err != nil {
		b.Fatal(err)
	}
	if err := qs.WaitPromotions(context.Background()); err != nil {
		b.Fatal(err)
	}
	appendN(b.N)
	b.ReportAllocs()
	b.ResetTimer()
	if err := d.DispatchTo(l.WriteOffset()); err != nil {
		b.Fatal(err)
	}
}
