package producerstate

import (
	"errors"
	"maps"
	"math"
	"slices"
	"unsafe"

	"github.com/unilog/unilog/internal/prefetch"
)

// DedupWindow is how many recent batches per producer and partition are
// remembered, as Kafka: a client retries at most 5 in-flight batches.
const DedupWindow = 5

// The outcomes of Check that refuse a batch; the broker answers them with
// Kafka's INVALID_PRODUCER_EPOCH and OUT_OF_ORDER_SEQUENCE_NUMBER.
var (
	ErrInvalidEpoch       = errors.New("producerstate: producer epoch older than the last seen")
	ErrOutOfOrderSequence = errors.New("producerstate: sequence does not follow the last batch")
)

// Batch is what an idempotent batch says of its producer.
type Batch struct {
	ProducerID int64
	Epoch      int16
	FirstSeq   int32
	Records    int32
}

// LastSeq is the sequence of the batch's last record.
func (b Batch) LastSeq() int32 { return addSeq(b.FirstSeq, b.Records-1) }

// addSeq is seq+n as Kafka counts sequences: past math.MaxInt32 they go on
// from 0 (DefaultRecordBatch.incrementSequence), not from math.MinInt32.
func addSeq(seq, n int32) int32 {
	if seq > math.MaxInt32-n {
		return n - (math.MaxInt32 - seq) - 1
	}
	return seq + n
}

// Stored is an appended batch, what a retry of it is answered with.
type Stored struct {
	FirstSeq, LastSeq int32
	Base              int64
	// End is the physical end of the stored record, which a retry of the
	// batch waits on before it is acknowledged like the original.
	End int64
}

// Producer is one producer's recent batches in one partition.
type Producer struct {
	ID      int64
	Epoch   int16
	Batches []Stored // oldest first, at most DedupWindow
}

// Partition is the idempotent producers of one partition and its
// transactions. It is not safe for concurrent use: the broker serializes
// a partition's appends.
type Partition struct {
	// Producers is sorted by ID, found by binary search. A map per
	// partition cost about 200 bytes and two heap objects for the usual one
	// producer, 200 MB at 1,000,000 partitions; adding a producer to a
	// partition moves the ones after it, which happens once per producer.
	Producers []Producer
	// Open maps each producer with an open transaction in the partition
	// to the transaction's first offset here (txn.go).
	Open map[int64]int64
	// Aborted is the aborted-transaction index, in marker order.
	Aborted []AbortedTxn
	// enc is the state's encoding as the last snapshot holds it (Encoder),
	// nil when the state changed since: every method that changes the
	// state calls changed. A change made through the exported fields is
	// not seen, so none is made to a state once snapshotted (only Decode
	// and tests set them).
	enc []byte
}

// changed drops the state's encoding, which no longer describes it.
func (p *Partition) changed() { p.enc = nil }

// Producer returns the state of producer id, nil if the partition has
// none. It is valid until the next change of the partition.
func (p *Partition) Producer(id int64) *Producer {
	if i, ok := p.find(id); ok {
		return &p.Producers[i]
	}
	return nil
}

// find returns where producer id is in Producers, or would be. Written
// out rather than slices.BinarySearchFunc, whose comparison call copied a
// Producer per step: the search was half of Check at 10,000 partitions.
func (p *Partition) find(id int64) (int, bool) {
	lo, hi := 0, len(p.Producers)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p.Producers[m].ID < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(p.Producers) && p.Producers[lo].ID == id
}

// PrefetchProducers and Warm ask the CPU for what Check of a batch reads,
// without waiting for it. At 10,000 partitions a partition's state is a
// chain of three misses (the state, its producers, their batches), which
// Check took one after the other for every batch. A caller about to check
// the batches of many partitions calls PrefetchProducers on each state it
// holds (its producers' lines come in), then Warm on each (the producer is
// found in what came in, and its batches' lines are asked for), then
// Check: the misses of many partitions are in flight at once, and none is
// waited for twice. (Warm used to walk the batches itself, waiting for
// each partition's chain in turn.)
func (p *Partition) PrefetchProducers() {
	if n := len(p.Producers); n > 0 {
		prefetch.ReadRange(uintptr(unsafe.Pointer(&p.Producers[0])), uintptr(n)*unsafe.Sizeof(p.Producers[0]))
	}
}

// Warm: see PrefetchProducers.
func (p *Partition) Warm(id int64) {
	i, ok := p.find(id)
	if !ok {
		return
	}
	if b := p.Producers[i].Batches; len(b) > 0 {
		prefetch.ReadRange(uintptr(unsafe.Pointer(&b[0])), uintptr(len(b))*unsafe.Sizeof(b[0]))
	}
}

// Checked is Check's answer to a batch it accepts: a retry of Orig when
// Dup, otherwise a batch to store, which RecordChecked records where Check
// found its producer instead of searching again. Small, as the broker
// keeps one per pending batch.
type Checked struct {
	Orig Stored
	Dup  bool
	has  bool  // the producer is at at
	at   int32 // where the producer is in Producers, or would be
}

// Check validates an idempotent batch against its producer's history; an
// error refuses the batch.
func (p *Partition) Check(b Batch) (Checked, error) {
	i, ok := p.find(b.ProducerID)
	c := Checked{has: ok, at: int32(i)}
	if !ok {
		return c, nil
	}
	ps := &p.Producers[i]
	switch {
	case b.Epoch < ps.Epoch:
		return Checked{}, ErrInvalidEpoch
	case b.Epoch > ps.Epoch:
		if b.FirstSeq != 0 {
			return Checked{}, ErrOutOfOrderSequence
		}
		return c, nil
	}
	last := b.LastSeq()
	for _, sb := range ps.Batches {
		if sb.FirstSeq == b.FirstSeq && sb.LastSeq == last {
			c.Orig, c.Dup = sb, true
			return c, nil
		}
	}
	if n := len(ps.Batches); n > 0 && b.FirstSeq != addSeq(ps.Batches[n-1].LastSeq, 1) {
		return Checked{}, ErrOutOfOrderSequence
	}
	return c, nil
}

// RecordChecked remembers b, a batch Check accepted as c (and found no
// retry), appended at base and ending at end. A Checked taken before the
// partition last changed is looked up again.
func (p *Partition) RecordChecked(c Checked, b Batch, base, end int64) {
	i, ok := int(c.at), c.has
	if !p.still(i, ok, b.ProducerID) {
		i, ok = p.find(b.ProducerID)
	}
	p.record(i, ok, b, base, end)
}

// still reports whether producer id is at i in Producers (has), or would
// be inserted there.
func (p *Partition) still(i int, has bool, id int64) bool {
	if has {
		return i < len(p.Producers) && p.Producers[i].ID == id
	}
	return i <= len(p.Producers) &&
		(i == 0 || p.Producers[i-1].ID < id) &&
		(i == len(p.Producers) || p.Producers[i].ID > id)
}

// Record remembers an appended batch.
func (p *Partition) Record(b Batch, base, end int64) {
	i, ok := p.find(b.ProducerID)
	p.record(i, ok, b, base, end)
}

// record is Record with the producer's place in Producers found: at i,
// or to be inserted there.
func (p *Partition) record(i int, ok bool, b Batch, base, end int64) {
	p.changed()
	if !ok {
		p.Producers = slices.Insert(p.Producers, i, Producer{ID: b.ProducerID, Epoch: b.Epoch})
	}
	ps := &p.Producers[i]
	if b.Epoch != ps.Epoch {
		*ps = Producer{ID: b.ProducerID, Epoch: b.Epoch, Batches: ps.Batches[:0]}
	}
	switch n := len(ps.Batches); {
	case n == DedupWindow:
		copy(ps.Batches, ps.Batches[1:])
		ps.Batches = ps.Batches[:DedupWindow-1]
	case n == cap(ps.Batches) && n >= 2:
		// Straight to the window: append's doubling went 1, 2, 4, 8,
		// an allocation more per producer and partition and 3 slots
		// never used.
		grown := make([]Stored, n, DedupWindow)
		copy(grown, ps.Batches)
		ps.Batches = grown
	}
	ps.Batches = append(ps.Batches, Stored{FirstSeq: b.FirstSeq, LastSeq: b.LastSeq(), Base: base, End: end})
}

// Replay applies a batch read back from the log unless the state already
// holds it or a later batch of its producer (a snapshot may have been taken
// after some of the records it is replayed with).
func (p *Partition) Replay(b Batch, base, end int64) {
	i, ok := p.find(b.ProducerID)
	if ok {
		if bs := p.Producers[i].Batches; len(bs) > 0 && bs[len(bs)-1].Base >= base {
			return
		}
	}
	p.record(i, ok, b, base, end)
}

// Clone copies the state, for a snapshot taken while appends go on.
func (p *Partition) Clone() Partition {
	c := Partition{Producers: make([]Producer, len(p.Producers)), Open: maps.Clone(p.Open), Aborted: slices.Clone(p.Aborted)}
	for i, ps := range p.Producers {
		c.Producers[i] = Producer{ID: ps.ID, Epoch: ps.Epoch, Batches: slices.Clone(ps.Batches)}
	}
	return c
}

// Through drops the batches stored past logOffset (a leader's snapshot may
// hold some appended while it was copied): replaying from logOffset adds
// them back if the log still holds them, and only then. It reports whether
// any state is left. Transactions are kept: replaying their batches and
// markers again changes nothing (see EndTxn).
func (p *Partition) Through(logOffset int64) bool {
	p.changed()
	kept := p.Producers[:0]
	for _, ps := range p.Producers {
		n := len(ps.Batches)
		for n > 0 && ps.Batches[n-1].End > logOffset {
			n--
		}
		if n > 0 {
			ps.Batches = ps.Batches[:n]
			kept = append(kept, ps)
		}
	}
	clear(p.Producers[len(kept):])
	p.Producers = kept
	return !p.Empty()
}
