package producerstate

import (
	"encoding/binary"
	"slices"

	"github.com/unilog/unilog/commitlog"
)

// Encoder lays a snapshot out (package doc) partition by partition from
// the live state, without a copy of it first: the broker adds each
// partition under that partition's lock. A partition's state is encoded
// once per change: its bytes are kept in the Partition and any change
// drops them (Partition.changed), so a snapshot taken while only some
// partitions changed re-encodes those and copies the others' bytes. The
// file is still written whole; its format is the one Snapshot.Encode
// writes, byte for byte.
type Encoder struct {
	b     []byte // the frame, from its start
	count uint32
}

// countAt is where the partition count is in the frame: magic and
// version, reserved, LogOffset.
const countAt = 4 + 2 + 2 + 8

// NewEncoder starts a snapshot at logOffset in room's storage, which
// grows (doubling) only if the snapshot does not fit. A caller taking
// snapshots periodically passes the last one's bytes once written, or
// room for its length and a little more: growing a fresh buffer every
// period (a copy per doubling, into memory never touched before) was a
// tenth of the broker's CPU during a first produce to 40,000 partitions.
func NewEncoder(logOffset int64, room []byte) *Encoder {
	e := &Encoder{b: slices.Grow(room[:0], countAt+8)}
	e.b = snapshotFormat.Open(e.b)
	e.b = binary.BigEndian.AppendUint16(e.b, 0) // reserved
	e.b = binary.BigEndian.AppendUint64(e.b, uint64(logOffset))
	e.b = binary.BigEndian.AppendUint32(e.b, 0) // count, set by Finish
	return e
}

// Add appends a partition's state, encoding it only if it changed since
// it was last added to a snapshot. The caller holds p still until it
// returns.
func (e *Encoder) Add(topic string, id commitlog.TopicID, partition int32, p *Partition) {
	if p.enc == nil {
		// Exactly sized, and never reused: a copy of the Partition may
		// share the old bytes.
		p.enc = p.appendState(make([]byte, 0, p.stateLen()))
	}
	e.add(topic, id, partition, p.enc)
}

func (e *Encoder) add(topic string, id commitlog.TopicID, partition int32, state []byte) {
	if need := 2 + len(topic) + len(id) + 4 + len(state); cap(e.b)-len(e.b) < need {
		// Doubled: append grows a large slice by a quarter, which copied
		// a snapshot larger than its hint five times over.
		e.b = slices.Grow(e.b, max(need, cap(e.b)))
	}
	e.b = binary.BigEndian.AppendUint16(e.b, uint16(len(topic)))
	e.b = append(e.b, topic...)
	e.b = append(e.b, id[:]...)
	e.b = binary.BigEndian.AppendUint32(e.b, uint32(partition))
	e.b = append(e.b, state...)
	e.count++
}

// Finish returns the snapshot file's bytes. The Encoder is done.
func (e *Encoder) Finish() []byte {
	binary.BigEndian.PutUint32(e.b[countAt:], e.count)
	return snapshotFormat.Seal(e.b, 0)
}

// stateLen is the length of appendState's bytes.
func (p *Partition) stateLen() int {
	n := 4 + 4 + 16*len(p.Open) + 4 + 24*len(p.Aborted)
	for _, ps := range p.Producers {
		n += 8 + 2 + 1 + 24*len(ps.Batches)
	}
	return n
}

// appendState appends the partition's state as a snapshot entry holds it
// after the partition's name: producers, open and aborted transactions.
func (p *Partition) appendState(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(p.Producers)))
	for _, ps := range p.Producers {
		b = binary.BigEndian.AppendUint64(b, uint64(ps.ID))
		b = binary.BigEndian.AppendUint16(b, uint16(ps.Epoch))
		b = append(b, byte(len(ps.Batches)))
		for _, sb := range ps.Batches {
			b = binary.BigEndian.AppendUint32(b, uint32(sb.FirstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(sb.LastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(sb.Base))
			b = binary.BigEndian.AppendUint64(b, uint64(sb.End))
		}
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(p.Open)))
	// In producer order, so that the same state is always the same bytes.
	var few [8]int64
	ids := few[:0]
	for id := range p.Open {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint64(b, uint64(p.Open[id]))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(p.Aborted)))
	for _, a := range p.Aborted {
		b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
		b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
	}
	return b
}
