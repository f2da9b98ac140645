package txn

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/unilog/unilog/internal/framed"
)

// Versions of the transaction-state record (see the package doc). The key
// is Kafka's own __transaction_state key; the value is unilog's, since it
// also carries the groups and the offsets committed in the transaction.
const (
	keyVersion   = 0
	valueVersion = 1
)

// ErrCorrupt marks a transaction-state record that does not decode.
var ErrCorrupt = errors.New("txn: corrupt transaction-state record")

// Record is one key/value record of the transaction-state topic; a nil
// Value is a tombstone: the id expired.
type Record struct {
	Key   []byte
	Value []byte
}

// TopicPartition names a partition written in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Offset is a group offset committed in a transaction (TxnOffsetCommit):
// the group sees it only when the transaction commits.
type Offset struct {
	Group       string
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// Txn is the coordinator's state of one transactional id: what each
// transaction-state record holds whole, the last record of an id being its
// state.
type Txn struct {
	ID         string
	ProducerID int64
	Epoch      int16
	// PrevEpoch is the epoch before a bump the coordinator made on its
	// own (a timeout's abort), which the producer may still use to end
	// that transaction and re-initialize (KIP-360); -1 otherwise.
	PrevEpoch  int16
	TimeoutMs  int32
	State      State
	StartMs    int64 // when the transaction became Ongoing
	UpdateMs   int64
	Partitions []TopicPartition // sorted
	Groups     []string         // sorted
	Offsets    []Offset
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func readString(r *framed.Reader) string { return string(r.Bytes(int(r.U16()))) }

func encodeKey(id string) []byte {
	return appendString(binary.BigEndian.AppendUint16(nil, keyVersion), id)
}

func decodeKey(b []byte) (string, error) {
	r := framed.NewReader(b)
	if v := r.U16(); r.Err() == nil && v != keyVersion {
		return "", fmt.Errorf("%w: key version %d", ErrCorrupt, v)
	}
	id := readString(r)
	if r.Done() != nil {
		return "", fmt.Errorf("%w: key length does not match its fields", ErrCorrupt)
	}
	return id, nil
}

func (t *Txn) record() Record {
	b := binary.BigEndian.AppendUint16(nil, valueVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(t.ProducerID))
	b = binary.BigEndian.AppendUint16(b, uint16(t.Epoch))
	b = binary.BigEndian.AppendUint16(b, uint16(t.PrevEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(t.TimeoutMs))
	b = append(b, byte(t.State))
	b = binary.BigEndian.AppendUint64(b, uint64(t.StartMs))
	b = binary.BigEndian.AppendUint64(b, uint64(t.UpdateMs))
	b = binary.BigEndian.AppendUint32(b, uint32(len(t.Partitions)))
	for _, p := range t.Partitions {
		b = appendString(b, p.Topic)
		b = binary.BigEndian.AppendUint32(b, uint32(p.Partition))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(t.Groups)))
	for _, g := range t.Groups {
		b = appendString(b, g)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(t.Offsets)))
	for _, o := range t.Offsets {
		b = appendString(b, o.Group)
		b = appendString(b, o.Topic)
		b = binary.BigEndian.AppendUint32(b, uint32(o.Partition))
		b = binary.BigEndian.AppendUint64(b, uint64(o.Offset))
		b = binary.BigEndian.AppendUint32(b, uint32(o.LeaderEpoch))
		b = appendString(b, o.Metadata)
	}
	return Record{Key: encodeKey(t.ID), Value: b}
}

// decodeRecord reads a record; a tombstone (nil value: the id expired)
// decodes to the id in state Dead.
func decodeRecord(rec Record) (Txn, error) {
	id, err := decodeKey(rec.Key)
	if err != nil {
		return Txn{}, err
	}
	if rec.Value == nil {
		return Txn{ID: id, State: Dead}, nil
	}
	r := framed.NewReader(rec.Value)
	if v := r.U16(); r.Err() == nil && v != valueVersion {
		return Txn{}, fmt.Errorf("%w: value version %d of %q", ErrCorrupt, v, id)
	}
	t := Txn{
		ID:         id,
		ProducerID: int64(r.U64()),
		Epoch:      int16(r.U16()),
		PrevEpoch:  int16(r.U16()),
		TimeoutMs:  int32(r.U32()),
		State:      State(r.U8()),
		StartMs:    int64(r.U64()),
		UpdateMs:   int64(r.U64()),
	}
	// Every element takes at least 2 bytes: a count cannot size more
	// iterations than the value could hold.
	for n := r.U32(); n > 0 && r.Err() == nil && r.Len() >= 2; n-- {
		t.Partitions = append(t.Partitions, TopicPartition{Topic: readString(r), Partition: int32(r.U32())})
	}
	for n := r.U32(); n > 0 && r.Err() == nil && r.Len() >= 2; n-- {
		t.Groups = append(t.Groups, readString(r))
	}
	for n := r.U32(); n > 0 && r.Err() == nil && r.Len() >= 2; n-- {
		t.Offsets = append(t.Offsets, Offset{Group: readString(r), Topic: readString(r), Partition: int32(r.U32()),
			Offset: int64(r.U64()), LeaderEpoch: int32(r.U32()), Metadata: readString(r)})
	}
	if r.Done() != nil || t.State < Empty || t.State > Dead {
		return Txn{}, fmt.Errorf("%w: value of %q does not match its fields", ErrCorrupt, id)
	}
	return t, nil
}

// PartitionFor is the transaction-state partition holding an id's
// records: FNV-1a of the id modulo the partition count, as
// group.PartitionFor places a group's.
func PartitionFor(id string, partitions int32) int32 {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int32(h.Sum32() % uint32(partitions))
}

func (t *Txn) addPartition(tp TopicPartition) {
	i, found := slices.BinarySearchFunc(t.Partitions, tp, func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	if !found {
		t.Partitions = slices.Insert(t.Partitions, i, tp)
	}
}

func (t *Txn) addGroup(g string) {
	if i, found := slices.BinarySearch(t.Groups, g); !found {
		t.Groups = slices.Insert(t.Groups, i, g)
	}
}

// addOffset keeps the latest offset committed per group partition.
func (t *Txn) addOffset(o Offset) {
	for i := range t.Offsets {
		if p := &t.Offsets[i]; p.Group == o.Group && p.Topic == o.Topic && p.Partition == o.Partition {
			*p = o
			return
		}
	}
	t.Offsets = append(t.Offsets, o)
}

func (t *Txn) clone() Txn {
	c := *t
	c.Partitions = slices.Clone(t.Partitions)
	c.Groups = slices.Clone(t.Groups)
	c.Offsets = slices.Clone(t.Offsets)
	return c
}
