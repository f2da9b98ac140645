package producerstate

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/framed"
	"github.com/unilog/unilog/internal/intern"
	"github.com/unilog/unilog/internal/slab"
)

// FileName is the snapshot file in a data directory.
const FileName = "producer-state"

// Version is the snapshot version written.
const Version = 3

var snapshotFormat = framed.Format{Name: "producer-state snapshot", Magic: "UPST", Version: Version, Oldest: 1, Shape: framed.Sealed}

// ErrSnapshot marks a snapshot that fails a check; the broker then
// rebuilds from the whole log.
var ErrSnapshot = errors.New("producerstate: snapshot not usable")

// Snapshot is the state of every partition as of a log position.
type Snapshot struct {
	Version   uint16 // as read; Encode writes Version
	LogOffset int64  // every idempotent batch stored below it is in the snapshot
	Parts     []PartitionSnapshot
}

// PartitionSnapshot is one partition's state in a snapshot.
type PartitionSnapshot struct {
	Topic     string
	Partition int32
	// ID is the incarnation the state belongs to (the topic id its records
	// carry); a version 1 snapshot has none and decodes to the zero id.
	ID    commitlog.TopicID
	State Partition
}

// Encode lays the snapshot out as the package doc says, at Version.
func (s Snapshot) Encode() []byte {
	e := NewEncoder(s.LogOffset, nil)
	var state []byte
	for _, p := range s.Parts {
		state = p.State.appendState(state[:0])
		e.add(p.Topic, p.ID, p.Partition, state)
	}
	return e.Finish()
}

// Decode reads a snapshot file's bytes; any failed check wraps ErrSnapshot.
func Decode(b []byte) (Snapshot, error) {
	v, payload, err := snapshotFormat.Decode(b)
	if err != nil {
		return Snapshot{}, fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	r := framed.NewReader(payload)
	r.U16() // reserved
	s := Snapshot{Version: v, LogOffset: int64(r.U64())}
	nparts := r.U32()
	// Sized once: appending a million partitions copied the slice twenty
	// times, a third of a decode. The count cannot size it beyond what
	// the payload could hold (a partition takes at least minPart bytes).
	minPart := 10
	if v >= 2 {
		minPart += commitlog.TopicIDSize
	}
	s.Parts = make([]PartitionSnapshot, 0, min(int(nparts), r.Len()/minPart))
	topics := intern.New()
	var producers slab.Slab[Producer]
	var batches slab.Slab[Stored]
	for i := uint32(0); i < nparts && r.Err() == nil; i++ {
		var p PartitionSnapshot
		p.Topic = topics.Get(r.Bytes(int(r.U16())))
		if v >= 2 {
			copy(p.ID[:], r.Bytes(commitlog.TopicIDSize))
		}
		p.Partition = int32(r.U32())
		nprod := r.U32()
		// A producer takes at least 11 bytes: the count cannot size an
		// allocation beyond what the payload could hold.
		p.State.Producers = producers.Take(int(min(nprod, uint32(r.Len()/11))))
		for j := uint32(0); j < nprod && r.Err() == nil; j++ {
			id := int64(r.U64())
			ps := Producer{ID: id, Epoch: int16(r.U16())}
			n := r.U8()
			if n == 0 || n > DedupWindow {
				return Snapshot{}, fmt.Errorf("%w: producer %d of %s/%d has %d batches", ErrSnapshot, id, p.Topic, p.Partition, n)
			}
			ps.Batches = batches.Take(int(n))
			for range n {
				ps.Batches = append(ps.Batches, Stored{
					FirstSeq: int32(r.U32()),
					LastSeq:  int32(r.U32()),
					Base:     int64(r.U64()),
					End:      int64(r.U64()),
				})
			}
			p.State.Producers = append(p.State.Producers, ps)
		}
		if err := p.State.sortProducers(); err != nil {
			return Snapshot{}, fmt.Errorf("%w: %s/%d: %w", ErrSnapshot, p.Topic, p.Partition, err)
		}
		if v >= 3 {
			decodeTxns(r, &p.State)
		}
		s.Parts = append(s.Parts, p)
	}
	if r.Done() != nil {
		return Snapshot{}, fmt.Errorf("%w: its length does not match its counts", ErrSnapshot)
	}
	return s, nil
}

// Reach is the furthest log offset the snapshot names, its LogOffset or
// a batch's end, or -1 if a batch ends below 0. The snapshot describes
// only data a log ending at w holds (a crash may have lost the unflushed
// tail it was taken over) exactly when Reach is in [0, w]. Taken first, it
// lets a broker decode and trim a snapshot (Partition.Through) before
// recovery has decided where the log ends.
func (s Snapshot) Reach() int64 {
	reach := s.LogOffset
	for _, p := range s.Parts {
		for _, ps := range p.State.Producers {
			end := ps.Batches[len(ps.Batches)-1].End
			if end < 0 {
				return -1
			}
			reach = max(reach, end)
		}
	}
	return reach
}

// TellsIncarnations refuses a version 1 snapshot holding state of a topic
// whose records carry ids (tagged reports those): its entries name no
// incarnation, so they may be a deleted one's. Entries of topics with
// untagged records, or of topics gone, are unambiguous.
func (s Snapshot) TellsIncarnations(tagged func(topic string) bool) error {
	if s.Version >= 2 {
		return nil
	}
	for _, p := range s.Parts {
		if tagged(p.Topic) {
			return fmt.Errorf("%w: version 1 names no incarnation of topic %s", ErrSnapshot, p.Topic)
		}
	}
	return nil
}

// decodeTxns reads a version 3 partition's open transactions and aborted
// index; counts cannot size allocations beyond what the payload holds.
func decodeTxns(r *framed.Reader, p *Partition) {
	if n := r.U32(); n > 0 {
		p.Open = make(map[int64]int64, min(n, uint32(r.Len()/16)))
		for ; n > 0 && r.Err() == nil; n-- {
			id := int64(r.U64())
			p.Open[id] = int64(r.U64())
		}
	}
	for n := r.U32(); n > 0 && r.Err() == nil && r.Len() >= 24; n-- {
		p.Aborted = append(p.Aborted, AbortedTxn{ProducerID: int64(r.U64()), FirstOffset: int64(r.U64()), LastOffset: int64(r.U64())})
	}
}

// sortProducers orders a decoded partition's producers by ID: this build
// writes them in that order, older ones in a map's. A producer listed
// twice is an error.
func (p *Partition) sortProducers() error {
	if !slices.IsSortedFunc(p.Producers, compareProducers) {
		slices.SortFunc(p.Producers, compareProducers)
	}
	for i := 1; i < len(p.Producers); i++ {
		if p.Producers[i].ID == p.Producers[i-1].ID {
			return fmt.Errorf("producer %d listed twice", p.Producers[i].ID)
		}
	}
	return nil
}

func compareProducers(a, b Producer) int { return cmp.Compare(a.ID, b.ID) }
