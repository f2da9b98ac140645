package producerstate

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestCheck walks one producer through Kafka's sequence rules, each step
// checked and, when accepted, recorded.
func TestCheck(t *testing.T) {
	var p Partition
	type step struct {
		name    string
		b       Batch
		dupBase int64 // >= 0: a duplicate of the batch stored there
		err     error
	}
	base := int64(0)
	for _, s := range []step{
		{"first batch of a new producer", Batch{1, 0, 0, 5}, -1, nil},
		{"next in sequence", Batch{1, 0, 5, 3}, -1, nil},
		{"retry of the first", Batch{1, 0, 0, 5}, 0, nil},
		{"retry of the last", Batch{1, 0, 5, 3}, 5, nil},
		{"gap", Batch{1, 0, 9, 1}, -1, ErrOutOfOrderSequence},
		{"overlap that is no retry", Batch{1, 0, 6, 2}, -1, ErrOutOfOrderSequence},
		{"older epoch", Batch{1, -1, 8, 1}, -1, ErrInvalidEpoch},
		{"newer epoch not at 0", Batch{1, 1, 8, 1}, -1, ErrOutOfOrderSequence},
		{"newer epoch at 0", Batch{1, 1, 0, 2}, -1, nil},
		{"other producer, any sequence", Batch{2, 0, 77, 1}, -1, nil},
	} {
		c, err := p.Check(s.b)
		switch {
		case !errors.Is(err, s.err):
			t.Fatalf("%s: error %v, want %v", s.name, err, s.err)
		case c.Dup != (s.dupBase >= 0) || c.Dup && c.Orig.Base != s.dupBase:
			t.Fatalf("%s: duplicate %v of %+v, want base %d", s.name, c.Dup, c.Orig, s.dupBase)
		case err == nil && !c.Dup:
			p.RecordChecked(c, s.b, base, base*10+100)
			base += int64(s.b.Records)
		}
	}
	if ps := p.Producer(1); ps.Epoch != 1 || len(ps.Batches) != 1 {
		t.Fatalf("a new epoch keeps only its own batches: %+v", ps)
	}
}

func TestDedupWindow(t *testing.T) {
	var p Partition
	for i := int32(0); i < DedupWindow+2; i++ {
		p.Record(Batch{1, 0, i, 1}, int64(i), int64(i)+1)
	}
	if n := len(p.Producer(1).Batches); n != DedupWindow {
		t.Fatalf("%d batches kept, want %d", n, DedupWindow)
	}
	if c, _ := p.Check(Batch{1, 0, 1, 1}); c.Dup {
		t.Fatal("a batch older than the window is still a duplicate")
	}
	if c, _ := p.Check(Batch{1, 0, 2, 1}); !c.Dup || c.Orig.Base != 2 {
		t.Fatalf("the oldest batch in the window: %+v", c)
	}
}

func TestSequenceWraps(t *testing.T) {
	b := Batch{ProducerID: 1, FirstSeq: math.MaxInt32 - 1, Records: 3}
	if got := b.LastSeq(); got != 0 {
		t.Fatalf("last sequence %d, want 0 after the wrap", got)
	}
	var p Partition
	p.Record(b, 0, 10)
	if _, err := p.Check(Batch{ProducerID: 1, FirstSeq: 1, Records: 1}); err != nil {
		t.Fatalf("the batch after the wrap: %v", err)
	}
	var q Partition
	q.Record(Batch{ProducerID: 1, FirstSeq: math.MaxInt32, Records: 1}, 0, 10)
	if _, err := q.Check(Batch{ProducerID: 1, FirstSeq: 0, Records: 1}); err != nil {
		t.Fatalf("sequence 0 after math.MaxInt32: %v", err)
	}
}

func TestReplayAndThrough(t *testing.T) {
	var p Partition
	p.Record(Batch{1, 0, 0, 1}, 10, 100)
	p.Replay(Batch{1, 0, 0, 1}, 10, 100)
	p.Replay(Batch{1, 0, 1, 1}, 11, 200)
	if n := len(p.Producer(1).Batches); n != 2 {
		t.Fatalf("replay kept %d batches, want 2 (the first was held already)", n)
	}
	c := p.Clone()
	if !c.Through(150) || len(c.Producer(1).Batches) != 1 {
		t.Fatalf("through 150: %+v", c.Producer(1))
	}
	if len(p.Producer(1).Batches) != 2 {
		t.Fatal("Through on a clone changed the original")
	}
	if c.Through(50) {
		t.Fatalf("through 50 left %+v", c.Producers)
	}
}

type reserver struct{ next, calls int64 }

func (r *reserver) ReserveProducerIDs(n int64) (int64, error) {
	r.calls++
	first := r.next
	r.next += n
	return first, nil
}

func TestIDs(t *testing.T) {
	r := &reserver{next: 5000}
	ids := NewIDs(r)
	for i := int64(0); i < idBlock+1; i++ {
		id, err := ids.Allocate()
		if err != nil || id != 5000+i {
			t.Fatalf("id %d: %d, %v", i, id, err)
		}
	}
	if r.calls != 2 {
		t.Fatalf("%d reservations for %d ids, want 2", r.calls, idBlock+1)
	}
}

// TestTransactions walks two producers' transactions through the last
// stable offset and the aborted index, with the repeats a replay or a
// coordinator's recovery makes.
func TestTransactions(t *testing.T) {
	var p Partition
	if _, ok := p.FirstUnstable(); ok {
		t.Fatal("no transaction yet, but unstable")
	}
	p.BeginTxn(1, 10)
	p.BeginTxn(1, 12) // a later batch of the same transaction
	p.BeginTxn(2, 11)
	if off, ok := p.FirstUnstable(); !ok || off != 10 {
		t.Fatalf("first unstable %d %v, want 10", off, ok)
	}
	p.EndTxn(1, 0, false, 13)
	p.EndTxn(1, 0, false, 14) // a marker written again: no transaction open
	if off, _ := p.FirstUnstable(); off != 11 {
		t.Fatalf("first unstable %d after 1 aborted, want 11", off)
	}
	p.EndTxn(2, 0, true, 15)
	if _, ok := p.FirstUnstable(); ok {
		t.Fatal("all ended, but unstable")
	}
	want := []AbortedTxn{{1, 10, 13}}
	if got := p.AbortedIn(nil, 0, 100); !slices.Equal(got, want) {
		t.Fatalf("aborted %v, want %v", got, want)
	}
	// A replay of the same batch and marker adds nothing.
	p.BeginTxn(1, 10)
	p.EndTxn(1, 0, false, 13)
	for _, c := range []struct {
		from, to int64
		n        int
	}{{0, 10, 0}, {0, 11, 1}, {13, 20, 1}, {14, 20, 0}} {
		if got := p.AbortedIn(nil, c.from, c.to); len(got) != c.n {
			t.Fatalf("aborted in [%d,%d): %v, want %d", c.from, c.to, got, c.n)
		}
	}
	// An abort under a bumped epoch fences the older one here.
	p.Record(Batch{3, 0, 0, 1}, 16, 160)
	p.BeginTxn(3, 16)
	p.EndTxn(3, 1, false, 17)
	if _, err := p.Check(Batch{3, 0, 1, 1}); !errors.Is(err, ErrInvalidEpoch) {
		t.Fatalf("epoch 0 after the abort at epoch 1: %v, want ErrInvalidEpoch", err)
	}
	if _, err := p.Check(Batch{3, 2, 0, 1}); err != nil {
		t.Fatalf("epoch 2 from sequence 0: %v", err)
	}
	c := p.Clone()
	p.DropAbortedBefore(14)
	if len(p.Aborted) != 1 || len(c.Aborted) != 2 {
		t.Fatalf("drop: %v, clone %v", p.Aborted, c.Aborted)
	}
}

// TestManyProducers: producers arriving in any order are each found,
// checked and replaced on a new epoch without disturbing the others.
func TestManyProducers(t *testing.T) {
	var p Partition
	order := []int64{50, 3, 99, -1, 42, 7, 0, 1000}
	for i, id := range order {
		p.Record(Batch{ProducerID: id, Epoch: 1, FirstSeq: 0, Records: 1}, int64(i), int64(i)+1)
	}
	for i, id := range order {
		if c, err := p.Check(Batch{ProducerID: id, Epoch: 1, FirstSeq: 0, Records: 1}); !c.Dup || err != nil {
			t.Errorf("producer %d: retry not found as a duplicate (%v)", id, err)
		}
		if _, err := p.Check(Batch{ProducerID: id, Epoch: 1, FirstSeq: 5, Records: 1}); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Errorf("producer %d (%d): gap answered %v", id, i, err)
		}
	}
	p.Record(Batch{ProducerID: 42, Epoch: 2, FirstSeq: 0, Records: 3}, 20, 21)
	if ps := p.Producer(42); ps.Epoch != 2 || len(ps.Batches) != 1 || ps.Batches[0].LastSeq != 2 {
		t.Fatalf("after a new epoch: %+v", ps)
	}
	if len(p.Producers) != len(order) || p.Producer(43) != nil {
		t.Fatalf("%d producers, want %d", len(p.Producers), len(order))
	}
}
