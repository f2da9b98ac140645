package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
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

// reader decodes the big-endian fields of a key or value.
type reader struct {
	b   []byte
	bad bool
}

// take returns the next n bytes. Short of them it marks the reader bad
// and returns zeros, never more than a fixed-size field needs: n comes from
// the input and must not size an allocation.
func (r *reader) take(n int) []byte {
	if r.bad || len(r.b) < n {
		r.bad = true
		return make([]byte, min(n, 8))
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u16() uint16 { return binary.BigEndian.Uint16(r.take(2)) }
func (r *reader) u32() uint32 { return binary.BigEndian.Uint32(r.take(4)) }
func (r *reader) u64() uint64 { return binary.BigEndian.Uint64(r.take(8)) }
func (r *reader) str() string { return string(r.take(int(r.u16()))) }

// end reports an error unless the fields ended exactly with the bytes.
func (r *reader) end(what string) error {
	if r.bad || len(r.b) != 0 {
		return fmt.Errorf("%w: %s length does not match its fields", ErrCorrupt, what)
	}
	return nil
}

func decodeKey(b []byte) (offsetKey, error) {
	r := reader{b: b}
	if v := r.u16(); !r.bad && v != offsetKeyVersion {
		return offsetKey{}, fmt.Errorf("%w: key version %d", ErrUnsupportedVersion, v)
	}
	k := offsetKey{group: r.str(), topic: r.str(), partition: int32(r.u32())}
	return k, r.end("key")
}

func decodeValue(b []byte) (Offset, error) {
	r := reader{b: b}
	if v := r.u16(); !r.bad && v != offsetValueVersion {
		return Offset{}, fmt.Errorf("%w: value version %d", ErrUnsupportedVersion, v)
	}
	o := Offset{Offset: int64(r.u64()), LeaderEpoch: int32(r.u32()), Metadata: r.str(), CommitMs: int64(r.u64())}
	return o, r.end("value")
}

// PartitionFor is the offsets-topic partition holding a group's commits:
// FNV-1a of the group id modulo the partition count, so one group's
// commits stay in one partition, in order.
func PartitionFor(group string, partitions int32) int32 {
	h := fnv.New32a()
	h.Write([]byte(group))
	return int32(h.Sum32() % uint32(partitions))
}
