package producerstate

import (
	"runtime"
	"testing"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/heaptest"
)

// BenchmarkPartitionMemory measures the heap the state of 100,000
// partitions keeps when one idempotent producer wrote one batch to each
// (the 1,000,000-partition row of docs/BENCHMARKS.md, per partition),
// once a snapshot encoded it, and after a snapshot round trip.
//
//	go test -run '^$' -bench PartitionMemory -benchtime 1x ./producerstate/
func BenchmarkPartitionMemory(b *testing.B) {
	const parts = 100_000
	for range b.N {
		base := heaptest.Live()
		ps := make([]Partition, parts)
		for i := range ps {
			ps[i].Record(Batch{ProducerID: 7, Epoch: 0, FirstSeq: 0, Records: 2}, 0, int64(i+1)*100)
		}
		b.ReportMetric(float64(heaptest.Live()-base)/parts, "B/partition")
		e := NewEncoder(parts*100, nil)
		for i := range ps {
			e.Add("m0", commitlog.TopicID{}, int32(i), &ps[i])
		}
		e.Finish()
		e = nil
		// What a partition keeps of the periodic snapshot: its encoding.
		b.ReportMetric(float64(heaptest.Live()-base)/parts, "B/partition-snapshotted")
		s := Snapshot{Version: Version, LogOffset: parts * 100}
		for i := range ps {
			s.Parts = append(s.Parts, PartitionSnapshot{Topic: "m0", Partition: int32(i), State: ps[i]})
		}
		raw := s.Encode()
		ps, s = nil, Snapshot{}
		base = heaptest.Live()
		d, err := Decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(heaptest.Live()-base)/parts, "B/partition-decoded")
		runtime.KeepAlive(d)
	}
}

// BenchmarkDecode decodes the snapshot of 1,000,000 partitions with one
// producer and two batches each, what a restart of `make bench-million`
// reads (issue 19).
//
//	go test -run '^$' -bench Decode -benchmem ./producerstate/
func BenchmarkDecode(b *testing.B) {
	const parts = 1_000_000
	s := Snapshot{Version: Version, LogOffset: parts * 100}
	for i := range parts {
		base := int64(i) * 100
		s.Parts = append(s.Parts, PartitionSnapshot{Topic: "m0", Partition: int32(i), State: Partition{
			Producers: []Producer{{ID: 7, Batches: []Stored{{0, 1, base, base + 50}, {2, 3, base + 50, base + 100}}}},
		}})
	}
	raw := s.Encode()
	s = Snapshot{}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}
