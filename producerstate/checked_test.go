package producerstate

import (
	"slices"
	"testing"
)

// TestRecordChecked: a Checked records its batch where Check found the
// producer, and one the partition changed under since (a producer added
// before it, or it replaced) is looked up again, never recorded against
// another producer.
func TestRecordChecked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		before  []int64 // producers recorded first, one batch each at sequence 0
		checked Batch
		between []int64 // producers recorded between Check and RecordChecked
		want    []int64 // the producers after, each with its batches
		batches map[int64]int
	}{
		{"new producer, nothing between", []int64{5}, Batch{ProducerID: 9}, nil, []int64{5, 9}, map[int64]int{5: 1, 9: 1}},
		{"known producer, nothing between", []int64{5, 9}, Batch{ProducerID: 9, FirstSeq: 1}, nil, []int64{5, 9}, map[int64]int{5: 1, 9: 2}},
		{"new producer, one added before it", []int64{5}, Batch{ProducerID: 9}, []int64{7}, []int64{5, 7, 9}, map[int64]int{5: 1, 7: 1, 9: 1}},
		{"new producer, itself added meanwhile", []int64{5}, Batch{ProducerID: 9, FirstSeq: 1}, []int64{9}, []int64{5, 9}, map[int64]int{5: 1, 9: 2}},
		{"known producer, one added before it", []int64{5, 9}, Batch{ProducerID: 9, FirstSeq: 1}, []int64{1}, []int64{1, 5, 9}, map[int64]int{1: 1, 5: 1, 9: 2}},
		{"new producer, one added after it", []int64{5}, Batch{ProducerID: 3}, []int64{4}, []int64{3, 4, 5}, map[int64]int{3: 1, 4: 1, 5: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Partition
			for _, id := range tc.before {
				p.Record(Batch{ProducerID: id, Records: 1}, 0, 1)
			}
			batch := Batch{ProducerID: tc.checked.ProducerID, FirstSeq: tc.checked.FirstSeq, Records: 1}
			c, err := p.Check(batch)
			if err != nil || c.Dup {
				t.Fatalf("check: %+v, %v", c, err)
			}
			for _, id := range tc.between {
				p.Record(Batch{ProducerID: id, Records: 1}, 0, 1)
			}
			p.RecordChecked(c, batch, 10, 11)
			var got []int64
			for _, ps := range p.Producers {
				got = append(got, ps.ID)
				if len(ps.Batches) != tc.batches[ps.ID] {
					t.Errorf("producer %d: %d batches, want %d", ps.ID, len(ps.Batches), tc.batches[ps.ID])
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("producers %v, want %v", got, tc.want)
			}
			if last := p.Producer(tc.checked.ProducerID).Batches; last[len(last)-1].Base != 10 {
				t.Fatalf("producer %d: %+v, want the checked batch last", tc.checked.ProducerID, last)
			}
		})
	}
}

// TestRecordAllocations: a producer's first 8 batches in a partition take
// four allocations, the producer and its batches growing 1, 2, then
// DedupWindow slots (append's doubling took 1, 2, 4, 8: five, and three
// slots never used), and a new epoch reuses the batches' slots.
func TestRecordAllocations(t *testing.T) {
	var p Partition
	fill := func() {
		p = Partition{}
		for seq := range int32(8) {
			batch := Batch{ProducerID: 1, FirstSeq: seq, Records: 1}
			c, err := p.Check(batch)
			if err != nil || c.Dup {
				t.Fatalf("sequence %d: %+v, %v", seq, c, err)
			}
			p.RecordChecked(c, batch, int64(seq), int64(seq)+1)
		}
	}
	if n := testing.AllocsPerRun(10, fill); n != 4 {
		t.Fatalf("8 batches: %v allocations, want 4", n)
	}
	if ps := p.Producer(1); cap(ps.Batches) != DedupWindow || len(ps.Batches) != DedupWindow || ps.Batches[0].Base != 3 {
		t.Fatalf("window: %+v (cap %d), want batches 3-7", ps.Batches, cap(ps.Batches))
	}
	epoch := int16(0)
	if n := testing.AllocsPerRun(10, func() { epoch++; p.Record(Batch{ProducerID: 1, Epoch: epoch, Records: 1}, 100, 101) }); n != 0 {
		t.Fatalf("new epoch: %v allocations, want 0", n)
	}
	if ps := p.Producer(1); ps.Epoch != epoch || len(ps.Batches) != 1 || ps.Batches[0].Base != 100 {
		t.Fatalf("after a new epoch: %+v", ps)
	}
}

// TestWarm: the hints ahead of Check (PrefetchProducers, Warm) take any
// producer id, on a partition with producers or none, allocate nothing and
// change nothing.
func TestWarm(t *testing.T) {
	var p, empty Partition
	p.Record(Batch{ProducerID: 4, Records: 1}, 10, 11)
	p.Record(Batch{ProducerID: 4, FirstSeq: 1, Records: 1}, 20, 21)
	p.Record(Batch{ProducerID: 9, Records: 1}, 30, 31)
	before := slices.Clone(p.Producers)
	for _, q := range []*Partition{&p, &empty} {
		for _, id := range []int64{4, 9, 5, -1} {
			if n := testing.AllocsPerRun(10, func() { q.PrefetchProducers(); q.Warm(id) }); n != 0 {
				t.Errorf("hints for producer %d: %v allocations, want 0", id, n)
			}
		}
	}
	if len(empty.Producers) != 0 || len(p.Producers) != len(before) {
		t.Fatalf("the hints changed the producers: %+v, %+v", p.Producers, empty.Producers)
	}
	for i := range before {
		if p.Producers[i].ID != before[i].ID || !slices.Equal(p.Producers[i].Batches, before[i].Batches) {
			t.Fatalf("producer %d after the hints: %+v, before %+v", i, p.Producers[i], before[i])
		}
	}
}
