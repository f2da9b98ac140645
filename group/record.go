package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/unilog/unilog/internal/framed"
)

// Record is one key/value record of the offsets topic. A nil Value is a
// tombstone: the key's committed offset was deleted.
type Record struct {
	Key   []byte
	Value []byte
}

// Versions of the offsets topic's record key and value (see the package
// doc). They are Kafka's own __consumer_offsets versions, so the topic
// reads the same to tools that know Kafka's.
const (
	offsetKeyVersion   = 1
	offsetValueVersion = 3
)

// ErrCorrupt marks an offsets-topic record that does not decode.
var ErrCorrupt = errors.New("group: corrupt offsets record")

// ErrUnsupportedVersion marks an offsets-topic record of a version this
// package does not read.
var ErrUnsupportedVersion = errors.New("group: unsupported offsets record version")

// Offset is a committed offset of one partition.
type Offset struct {
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	CommitMs    int64 // when the coordinator accepted it, unix ms
}

// offsetKey names a committed offset.
type offsetKey struct {
	group     string
	topic     string
	partition int32
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func encodeKey(k offsetKey) []byte {
	b := make([]byte, 0, 2+2+len(k.group)+2+len(k.topic)+4)
	b = binary.BigEndian.AppendUint16(b, offsetKeyVersion)
	b = appendString(b, k.group)
	b = appendString(b, k.topic)
	return binary.BigEndian.AppendUint32(b, uint32(k.partition))
}

func encodeValue(o Offset) []byte {
	b := make([]byte, 0, 2+8+4+2+len(o.Metadata)+8)
	b = binary.BigEndian.AppendUint16(b, offsetValueVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(o.Offset))
	b = binary.BigEndian.AppendUint32(b, uint32(o.LeaderEpoch))
	b = appendString(b, o.Metadata)
	return binary.BigEndian.AppendUint64(b, uint64(o.CommitMs))
}

// readString reads a uint16 length and that many bytes.
func readString(r *framed.Reader) string { return string(r.Bytes(int(r.U16()))) }

// fieldsEnd reports an error unless the fields ended exactly with the bytes.
func fieldsEnd(r *framed.Reader, what string) error {
	if r.Done() != nil {
		return fmt.Errorf("%w: %s length does not match its fields", ErrCorrupt, what)
	}
	return nil
}

func decodeKey(b []byte) (offsetKey, error) {
	r := framed.NewReader(b)
	if v := r.U16(); r.Err() == nil && v != offsetKeyVersion {
		return offsetKey{}, fmt.Errorf("%w: key version %d", ErrUnsupportedVersion, v)
	}
	k := offsetKey{group: readString(r), topic: readString(r), partition: int32(r.U32())}
	return k, fieldsEnd(r, "key")
}

func decodeValue(b []byte) (Offset, error) {
	r := framed.NewReader(b)
	if v := r.U16(); r.Err() == nil && v != offsetValueVersion {
		return Offset{}, fmt.Errorf("%w: value version %d", ErrUnsupportedVersion, v)
	}
	o := Offset{Offset: int64(r.U64()), LeaderEpoch: int32(r.U32()), Metadata: readString(r), CommitMs: int64(r.U64())}
	return o, fieldsEnd(r, "value")
}

// PartitionFor is the offsets-topic partition holding a group's commits:
// FNV-1a of the group id modulo the partition count, so one group's
// commits stay in one partition, in order.
func PartitionFor(group string, partitions int32) int32 {
	h := fnv.New32a()
	h.Write([]byte(group))
	return int32(h.Sum32() % uint32(partitions))
}
