package commitlog

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"

	"github.com/unilog/unilog/internal/framed"
)

// Record layout constants. The package doc has the tables.
const (
	// RecordMagic is byte 4 of every record.
	RecordMagic = 0xC1
	// BlankMagic is byte 4 of the end-of-file marker that fills the tail of
	// a file when the next record does not fit.
	BlankMagic = 0xB1
	// Version is the record format version written by this package.
	// Version 1 records, written by older builds, are still read.
	Version = 2
	// MinRecordSize is the size of the smallest record of any version: a
	// version 1 record with empty topic, nil key, no headers and an empty
	// body. The smallest version 2 record is TopicIDSize bytes longer.
	MinRecordSize = fixedSizeV1 + 4 + 2 + 4
	// BlankSize is the size of an end-of-file marker's own fields; a tail
	// shorter than this stays zero and readers roll by position.
	BlankSize = 8
	// TopicIDSize is the size of a TopicID.
	TopicIDSize = 16

	// blankVersion is the version of the end-of-file marker, unchanged
	// since version 1 of the record.
	blankVersion = 1

	offMagic      = 4
	offVersion    = 5
	offFlags      = 6
	offCRC        = 8
	offPhys       = 12
	offQueue      = 20
	offCount      = 28
	offPartition  = 32
	offStoreTS    = 36
	offProducerTS = 44
	offTopicID    = 52 // version 2 only
	offTopicLenV1 = 52
	offTopicLen   = offTopicID + TopicIDSize
	fixedSizeV1   = offTopicLenV1 + 2 // through TopicLen
	fixedSize     = offTopicLen + 2
)

// TopicID names one incarnation of a topic: a topic deleted and created
// again under the same name gets a new id, so the log can tell the records
// of the dead incarnation from those of the live one. The zero TopicID is
// what version 1 records, which carry none, decode to.
type TopicID [TopicIDSize]byte

// IsZero reports whether id is the zero TopicID.
func (id TopicID) IsZero() bool { return id == TopicID{} }

// String is the id as 32 lowercase hex digits.
func (id TopicID) String() string { return hex.EncodeToString(id[:]) }

// FlagStampOffset asks the log to write the assigned QueueOffset as a
// big-endian int64 into Body[0:8] of the stored copy before the CRC is
// computed (a Kafka record batch starts with its baseOffset, which only the
// log knows). The caller's Body is not modified.
const FlagStampOffset uint16 = 1 << 0

var (
	be          = binary.BigEndian
	maxHeaderKV = math.MaxUint16
)

// Header is one record header (Kafka header or RocketMQ property).
type Header struct {
	Key   string
	Value []byte
}

// MaxCountPerByte bounds a record's Count by its body: a record spans at
// most this many logical offsets per byte of body (of one byte for an
// empty body). Every offset costs the reader of the log an index entry, so
// a count no body could hold (a Kafka batch claiming 2^31-1 records in 70
// bytes) is refused when appended (ErrInvalid) and is corrupt when read
// (ErrCorrupt) instead of being indexed without end. The densest honest
// Kafka batches measured, 100,000 empty records compressed with zstd, hold
// 1.7 records per byte.
const MaxCountPerByte = 16

// countFits reports whether count offsets fit a body of n bytes.
func countFits(count int32, n int) bool {
	return int64(count) <= MaxCountPerByte*max(int64(n), 1)
}

// Message is what callers append. Count is the number of logical offsets
// the record spans (a Kafka batch of N records -> N); 0 means 1.
type Message struct {
	Topic             string
	TopicID           TopicID
	Partition         int32
	Count             int32
	Flags             uint16
	ProducerTimestamp int64
	Key               []byte
	Headers           []Header
	Body              []byte
	// BodyCRCFrom > 0 vouches that BodyCRC is the CRC32C of
	// Body[BodyCRCFrom:], as the caller has checked (a Kafka batch's own
	// CRC covers it from byte 21 on): the record's CRC is then derived from
	// it (framed.Combine) instead of reading those bytes once more. A wrong
	// BodyCRC stores a record with a wrong CRC, which a recovery that scans
	// it takes for damage (ErrDamaged before the flushed mark). With
	// FlagStampOffset it must be at least 8, past the stamped bytes.
	BodyCRCFrom int32
	BodyCRC     uint32
}

// Record is a decoded record. Its slices (and, when it comes from Recover
// or a View, possibly Topic's backing array) alias the bytes it was decoded
// from; copy what must outlive them.
type Record struct {
	TotalSize         int32
	Version           uint8
	Flags             uint16
	CRC               uint32
	PhysOffset        int64
	QueueOffset       int64
	Count             int32
	Partition         int32
	StoreTimestamp    int64
	ProducerTimestamp int64
	Topic             string
	TopicID           TopicID // zero in a version 1 record
	Key               []byte
	Headers           []Header
	Body              []byte
}

// Position returns where the record is and which offsets it holds.
func (r *Record) Position() Position {
	return Position{PhysOffset: r.PhysOffset, Size: r.TotalSize, QueueOffset: r.QueueOffset, Count: r.Count, StoreTimestamp: r.StoreTimestamp}
}

// End returns the physical offset just after the record.
func (r *Record) End() int64 { return r.PhysOffset + int64(r.TotalSize) }

// Position says where an appended record was stored.
type Position struct {
	PhysOffset     int64
	Size           int32
	QueueOffset    int64
	Count          int32
	StoreTimestamp int64
}

// End returns the physical offset just after the record: the value to pass
// to WaitDurable.
func (p Position) End() int64 { return p.PhysOffset + int64(p.Size) }

// EncodedSize returns the number of bytes Encode writes for m.
func EncodedSize(m *Message) int {
	n := MinRecordSize + TopicIDSize + len(m.Topic) + len(m.Key) + len(m.Body)
	for i := range m.Headers {
		n += 2 + len(m.Headers[i].Key) + 4 + len(m.Headers[i].Value)
	}
	return n
}

// validate checks what Encode cannot represent and returns the encoded size.
func validate(m *Message) (int, error) {
	switch {
	case len(m.Topic) > maxHeaderKV:
		return 0, fmt.Errorf("commitlog: topic of %d bytes: %w", len(m.Topic), ErrInvalid)
	case len(m.Headers) > maxHeaderKV:
		return 0, fmt.Errorf("commitlog: %d headers: %w", len(m.Headers), ErrInvalid)
	case m.Count < 0:
		return 0, fmt.Errorf("commitlog: count %d: %w", m.Count, ErrInvalid)
	case !countFits(m.Count, len(m.Body)):
		return 0, fmt.Errorf("commitlog: count %d with a body of %d bytes (at most %d offsets per byte): %w", m.Count, len(m.Body), MaxCountPerByte, ErrInvalid)
	case m.Partition < 0:
		return 0, fmt.Errorf("commitlog: partition %d: %w", m.Partition, ErrInvalid)
	case m.Flags&FlagStampOffset != 0 && len(m.Body) < 8:
		return 0, fmt.Errorf("commitlog: FlagStampOffset with a %d-byte body: %w", len(m.Body), ErrInvalid)
	case m.BodyCRCFrom < 0 || int(m.BodyCRCFrom) > len(m.Body) || m.BodyCRCFrom > 0 && m.BodyCRCFrom < 8 && m.Flags&FlagStampOffset != 0:
		return 0, fmt.Errorf("commitlog: body CRC from %d of a %d-byte body (flags %#x): %w", m.BodyCRCFrom, len(m.Body), m.Flags, ErrInvalid)
	}
	for i := range m.Headers {
		if len(m.Headers[i].Key) > maxHeaderKV {
			return 0, fmt.Errorf("commitlog: header key of %d bytes: %w", len(m.Headers[i].Key), ErrInvalid)
		}
	}
	n := EncodedSize(m)
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("commitlog: record of %d bytes: %w", n, ErrTooLarge)
	}
	return n, nil
}

// Encode appends the record for m, stored at phys with the given queue
// offset and store timestamp, to dst. m must be valid: Log.Append rejects
// what Encode cannot represent (see ErrInvalid) before encoding.
func Encode(dst []byte, m *Message, phys, queueOffset, storeTS int64) []byte {
	n := EncodedSize(m)
	l := len(dst)
	if cap(dst)-l < n {
		grown := make([]byte, l, l+n)
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:l+n]
	encodeInto(dst[l:], n, m, phys, queueOffset, storeTS)
	return dst
}

// encodeInto writes the first len(b) bytes of the size-byte record of m
// into b: all of it, or all but a tail of the body that the writer writes
// from m.Body itself (externalBody). b holds the stamped Body[0:8] with
// FlagStampOffset.
func encodeInto(b []byte, size int, m *Message, phys, queueOffset, storeTS int64) {
	count := m.Count
	if count == 0 {
		count = 1
	}
	be.PutUint32(b[0:], uint32(size))
	b[offMagic] = RecordMagic
	b[offVersion] = Version
	be.PutUint16(b[offFlags:], m.Flags)
	be.PutUint64(b[offPhys:], uint64(phys))
	be.PutUint64(b[offQueue:], uint64(queueOffset))
	be.PutUint32(b[offCount:], uint32(count))
	be.PutUint32(b[offPartition:], uint32(m.Partition))
	be.PutUint64(b[offStoreTS:], uint64(storeTS))
	be.PutUint64(b[offProducerTS:], uint64(m.ProducerTimestamp))
	copy(b[offTopicID:], m.TopicID[:])
	be.PutUint16(b[offTopicLen:], uint16(len(m.Topic)))
	p := fixedSize + copy(b[fixedSize:], m.Topic)
	if m.Key == nil {
		be.PutUint32(b[p:], math.MaxUint32) // -1
		p += 4
	} else {
		be.PutUint32(b[p:], uint32(len(m.Key)))
		p += 4 + copy(b[p+4:], m.Key)
	}
	be.PutUint16(b[p:], uint16(len(m.Headers)))
	p += 2
	for i := range m.Headers {
		h := &m.Headers[i]
		be.PutUint16(b[p:], uint16(len(h.Key)))
		p += 2 + copy(b[p+2:], h.Key)
		if h.Value == nil {
			be.PutUint32(b[p:], math.MaxUint32)
			p += 4
		} else {
			be.PutUint32(b[p:], uint32(len(h.Value)))
			p += 4 + copy(b[p+4:], h.Value)
		}
	}
	be.PutUint32(b[p:], uint32(len(m.Body)))
	p += 4
	copy(b[p:], m.Body)
	if m.Flags&FlagStampOffset != 0 && len(m.Body) >= 8 {
		be.PutUint64(b[p:], uint64(queueOffset))
	}
	be.PutUint32(b[offCRC:], encodedCRC(b, size, m))
}

// combineMin is the shortest vouched body suffix worth a CRC combination:
// Combine costs about what CRC32C of 1.5 KiB does here (BenchmarkCombine
// in internal/framed: 85-105 ns against 66 ns for 1 KiB).
const combineMin = 2 << 10

// encodedCRC is recordCRC of the size-byte record of m whose first
// len(b) bytes are b and the rest m.Body's tail, derived from the CRC m
// vouches for (Message.BodyCRCFrom) where that saves reading the bytes.
// The body ends the record, and the stamp leaves Body[BodyCRCFrom:] as m
// has it.
func encodedCRC(b []byte, size int, m *Message) uint32 {
	inB := len(m.Body) - (size - len(b)) // body bytes in b
	bodyAt := len(b) - inB
	from := len(m.Body)
	if m.BodyCRCFrom > 0 && len(m.Body)-int(m.BodyCRCFrom) >= combineMin {
		from = int(m.BodyCRCFrom)
	}
	crc := framed.Update(framed.Update(0, b[:offCRC]), b[offPhys:bodyAt+min(inB, from)])
	if from > inB {
		crc = framed.Update(crc, m.Body[inB:from])
	}
	if from == len(m.Body) {
		return crc
	}
	return framed.Combine(crc, m.BodyCRC, int64(len(m.Body)-from))
}

// recordCRC is the CRC32C of every byte of the record except the CRC field
// itself, so the size, magic, version and flags are covered too.
func recordCRC(b []byte) uint32 {
	return framed.Update(framed.Update(0, b[:offCRC]), b[offPhys:])
}

// Decode decodes the record at the start of b (b may extend past it) and
// verifies its CRC. Errors wrap ErrCorrupt.
func Decode(b []byte) (*Record, error) {
	r := new(Record)
	if err := decodeInto(b, r, nil, true); err != nil {
		return nil, err
	}
	return r, nil
}

// decodeInto decodes into r, reusing r.Headers' backing array. Strings come
// from in when it is not nil (recovery and readers see the same few topics
// millions of times), otherwise they are allocated. verify = false skips the
// CRC check, for bytes known good (see Cursor); every other check remains.
func decodeInto(b []byte, r *Record, in *interner, verify bool) error {
	if len(b) < MinRecordSize {
		return fmt.Errorf("%w: %d bytes, shorter than the minimum record", ErrCorrupt, len(b))
	}
	total := int64(be.Uint32(b))
	if total < MinRecordSize || total > int64(len(b)) {
		return fmt.Errorf("%w: size %d outside [%d, %d]", ErrCorrupt, total, MinRecordSize, len(b))
	}
	if b[offMagic] != RecordMagic {
		return fmt.Errorf("%w: magic %#x", ErrCorrupt, b[offMagic])
	}
	topicLenAt := offTopicLen
	switch v := b[offVersion]; {
	case v == 1:
		topicLenAt = offTopicLenV1
	case v != Version:
		return fmt.Errorf("%w: version %d", ErrCorrupt, v)
	case total < MinRecordSize+TopicIDSize:
		return fmt.Errorf("%w: size %d below the version %d minimum %d", ErrCorrupt, total, v, MinRecordSize+TopicIDSize)
	}
	b = b[:total]
	crc := be.Uint32(b[offCRC:])
	if verify {
		if got := recordCRC(b); got != crc {
			return fmt.Errorf("%w: crc %#08x, computed %#08x", ErrCorrupt, crc, got)
		}
	}
	r.TotalSize = int32(total)
	r.Version = b[offVersion]
	r.Flags = be.Uint16(b[offFlags:])
	r.CRC = crc
	r.PhysOffset = int64(be.Uint64(b[offPhys:]))
	r.QueueOffset = int64(be.Uint64(b[offQueue:]))
	r.Count = int32(be.Uint32(b[offCount:]))
	r.Partition = int32(be.Uint32(b[offPartition:]))
	r.StoreTimestamp = int64(be.Uint64(b[offStoreTS:]))
	r.ProducerTimestamp = int64(be.Uint64(b[offProducerTS:]))
	if r.PhysOffset < 0 || r.QueueOffset < 0 || r.Count < 1 || r.Partition < 0 {
		return fmt.Errorf("%w: phys %d queue offset %d count %d partition %d", ErrCorrupt, r.PhysOffset, r.QueueOffset, r.Count, r.Partition)
	}
	if topicLenAt == offTopicLen {
		copy(r.TopicID[:], b[offTopicID:offTopicLen])
	} else {
		r.TopicID = TopicID{}
	}
	d := decoder{b: b, p: topicLenAt}
	topic := d.bytes16()
	r.Key = d.bytes32()
	hc := d.uint16()
	r.Headers = r.Headers[:0]
	for i := 0; i < hc && d.err == nil; i++ {
		k := d.bytes16()
		v := d.bytes32()
		if d.err == nil {
			r.Headers = append(r.Headers, Header{Key: in.string(k), Value: v})
		}
	}
	bodyLen := d.uint32()
	if d.err == nil && (bodyLen < 0 || d.p+bodyLen != len(b)) {
		return fmt.Errorf("%w: body of %d bytes in %d left", ErrCorrupt, bodyLen, len(b)-d.p)
	}
	if d.err != nil {
		return d.err
	}
	r.Body = b[d.p:len(b):len(b)]
	if !countFits(r.Count, len(r.Body)) {
		return fmt.Errorf("%w: count %d with a body of %d bytes (at most %d offsets per byte)", ErrCorrupt, r.Count, len(r.Body), MaxCountPerByte)
	}
	if r.Topic != string(topic) { // a reused Record usually has the same topic
		r.Topic = in.string(topic)
	}
	return nil
}

// decoder reads length-prefixed fields, remembering the first overrun.
type decoder struct {
	b   []byte
	p   int
	err error
}

func (d *decoder) need(n int) bool {
	if d.err != nil {
		return false
	}
	if n < 0 || len(d.b)-d.p < n {
		d.err = fmt.Errorf("%w: field of %d bytes at %d overruns a %d-byte record", ErrCorrupt, n, d.p, len(d.b))
		return false
	}
	return true
}

func (d *decoder) uint16() int {
	if !d.need(2) {
		return 0
	}
	v := int(be.Uint16(d.b[d.p:]))
	d.p += 2
	return v
}

// uint32 reads a signed 32-bit length.
func (d *decoder) uint32() int {
	if !d.need(4) {
		return 0
	}
	v := int(int32(be.Uint32(d.b[d.p:])))
	d.p += 4
	return v
}

func (d *decoder) bytes16() []byte {
	n := d.uint16()
	if !d.need(n) {
		return nil
	}
	v := d.b[d.p : d.p+n : d.p+n]
	d.p += n
	return v
}

// bytes32 reads an int32-length-prefixed field; -1 is nil.
func (d *decoder) bytes32() []byte {
	n := d.uint32()
	if d.err != nil || n == -1 {
		return nil
	}
	if !d.need(n) {
		return nil
	}
	v := d.b[d.p : d.p+n : d.p+n]
	d.p += n
	return v
}
