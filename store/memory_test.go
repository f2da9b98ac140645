package store

import (
	"fmt"
	"testing"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/heaptest"
)

// BenchmarkPartitionMemory measures the heap a data directory keeps per
// partition: 2 topics of 50,000 partitions, 2 records in each (every
// queue small, in the journal, as in the 1,000,000-partition row of
// docs/BENCHMARKS.md), dispatched, every partition's bounds read once (as
// retention does); then the same after a clean reopen. It reports the
// live heap after a GC, per partition.
//
//	go test -run '^$' -bench PartitionMemory -benchtime 1x ./store/
func BenchmarkPartitionMemory(b *testing.B) {
	const topics, parts = 2, 50_000
	for range b.N {
		dir := b.TempDir()
		opts := benchOptions(dir)
		base := heaptest.Live()
		d := mustOpen(b, opts)
		ms := make([]commitlog.Message, 0, 256)
		body := []byte("value")
		for range 2 {
			for t := range topics {
				for p := range parts {
					ms = append(ms, commitlog.Message{Topic: fmt.Sprintf("m%d", t), Partition: int32(p), Body: body})
					if len(ms) == cap(ms) {
						if _, err := d.log.AppendBatch(ms); err != nil {
							b.Fatal(err)
						}
						ms = ms[:0]
					}
				}
			}
		}
		if _, err := d.log.AppendBatch(ms); err != nil {
			b.Fatal(err)
		}
		waitDispatched(b, d)
		readBounds := func(d *Store) {
			for t := range topics {
				for p := range parts {
					if _, max := d.Bounds(fmt.Sprintf("m%d", t), int32(p)); max != 2 {
						b.Fatalf("m%d/%d: MaxOffset %d, want 2", t, p, max)
					}
				}
			}
		}
		readBounds(d)
		b.ReportMetric(float64(heaptest.Live()-base)/(topics*parts), "B/partition")
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
		base = heaptest.Live()
		d = mustOpen(b, opts)
		readBounds(d)
		b.ReportMetric(float64(heaptest.Live()-base)/(topics*parts), "B/partition-reopened")
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
