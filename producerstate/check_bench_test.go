package producerstate

import "testing"

// BenchmarkCheckRecord is the producer state's share of a produce to
// 10,000 partitions by 4 idempotent producers (the 10,000-partition rows
// of docs/BENCHMARKS.md): each batch checked, then recorded, every
// partition's state touched once per round, as a request's one-record
// batches touch them. Fresh partitions fill their dedup windows during
// the first rounds, as a first produce does.
//
//	go test -run '^$' -bench CheckRecord -count 6 ./producerstate/
func BenchmarkCheckRecord(b *testing.B) {
	const parts, producers, rounds = 10_000, 4, 32
	for range b.N {
		ps := make([]Partition, parts)
		seq := make([]int32, parts*producers)
		for r := range rounds {
			id := int64(r % producers)
			for i := range ps {
				s := &seq[i*producers+int(id)]
				batch := Batch{ProducerID: 1000 + id, FirstSeq: *s, Records: 1}
				c, err := ps[i].Check(batch)
				if err != nil || c.Dup {
					b.Fatalf("round %d partition %d: %+v, %v", r, i, c, err)
				}
				ps[i].RecordChecked(c, batch, int64(r), int64(r)+1)
				*s++
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*parts*rounds), "ns/batch")
}
