package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/framed"
)

const (
	frameHello   = 1
	frameStart   = 2
	frameData    = 3
	frameAck     = 4
	frameFenced  = 5
	frameOffsets = 6
	frameAuth    = 7

	frameVersion = 3
	headerSize   = 14 // Length, Type, Version, Epoch
	dataHeader   = 24 // RecordEpoch, HighWatermark, Phys

	// MaxChunk is the most log bytes one Data frame carries (a record
	// larger than it travels alone).
	MaxChunk = 1 << 20
)

var be = binary.BigEndian

// ErrProtocol marks a frame that is not valid version 3 replication.
var ErrProtocol = errors.New("replication: protocol error")

// frame is one decoded frame; payload aliases the reader's buffer.
type frame struct {
	typ     byte
	epoch   int64
	payload []byte
}

// appendFrame appends a frame of typ whose payload is built by fill.
func appendFrame(dst []byte, typ byte, epoch int64, payload ...[]byte) []byte {
	n := headerSize - 4 + 4
	for _, p := range payload {
		n += len(p)
	}
	start := len(dst)
	dst = be.AppendUint32(dst, uint32(n))
	dst = append(dst, typ, frameVersion)
	dst = be.AppendUint64(dst, uint64(epoch))
	for _, p := range payload {
		dst = append(dst, p...)
	}
	return be.AppendUint32(dst, framed.Checksum(dst[start+4:]))
}

// frameReader reads frames into one reused buffer.
type frameReader struct {
	r   io.Reader
	buf []byte
	max int
}

// next reads one frame. The payload is valid until the next call.
func (fr *frameReader) next() (frame, error) {
	var lenb [4]byte
	if _, err := io.ReadFull(fr.r, lenb[:]); err != nil {
		return frame{}, err
	}
	n := int(be.Uint32(lenb[:]))
	if n < headerSize-4+4 || n > fr.max {
		return frame{}, fmt.Errorf("%w: frame of %d bytes (limit %d)", ErrProtocol, n, fr.max)
	}
	if cap(fr.buf) < n {
		fr.buf = make([]byte, n)
	}
	b := fr.buf[:n]
	if _, err := io.ReadFull(fr.r, b); err != nil {
		return frame{}, fmt.Errorf("replication: read frame: %w", io.ErrUnexpectedEOF)
	}
	body := b[:n-4]
	if got, want := framed.Checksum(body), be.Uint32(b[n-4:]); got != want {
		return frame{}, fmt.Errorf("%w: frame crc %#08x, computed %#08x", ErrProtocol, want, got)
	}
	if body[1] != frameVersion {
		return frame{}, fmt.Errorf("%w: frame version %d", ErrProtocol, body[1])
	}
	return frame{typ: body[0], epoch: int64(be.Uint64(body[2:])), payload: body[10:]}, nil
}

func int64s(vs ...int64) []byte {
	b := make([]byte, 0, 8*len(vs))
	for _, v := range vs {
		b = be.AppendUint64(b, uint64(v))
	}
	return b
}

// readInt64s decodes the first len(dst) int64s of p.
func readInt64s(p []byte, dst ...*int64) error {
	if len(p) < 8*len(dst) {
		return fmt.Errorf("%w: payload of %d bytes, want at least %d", ErrProtocol, len(p), 8*len(dst))
	}
	for i, d := range dst {
		*d = int64(be.Uint64(p[8*i:]))
	}
	return nil
}

type hello struct {
	end, lastEpoch int64
	node           string
	// nonce is what the leader proves itself over.
	nonce nonce
}

func encodeHello(epoch int64, h hello) []byte {
	name := be.AppendUint16(nil, uint16(len(h.node)))
	return appendFrame(nil, frameHello, epoch, int64s(h.end, h.lastEpoch), name, []byte(h.node), h.nonce[:])
}

func decodeHello(p []byte) (hello, error) {
	var h hello
	if err := readInt64s(p, &h.end, &h.lastEpoch); err != nil {
		return h, err
	}
	if len(p) < 18 || len(p) != 18+int(be.Uint16(p[16:]))+nonceSize {
		return h, fmt.Errorf("%w: hello of %d bytes", ErrProtocol, len(p))
	}
	h.node = string(p[18 : len(p)-nonceSize])
	copy(h.nonce[:], p[len(p)-nonceSize:])
	return h, nil
}

// offsets is one Offsets frame: next offsets of partitions as of the
// leader's log position at; last marks the handshake's final one.
type offsets struct {
	at    int64
	last  bool
	parts []commitlog.PartitionOffset
}

const (
	offsetsHeader = 13 // At, Last, Count
	// offsetsFixed is an entry's size without its topic name: TopicLen,
	// TopicID, Partition, Next.
	offsetsFixed = 2 + commitlog.TopicIDSize + 4 + 8
)

// appendOffsets appends the Offsets frames describing parts at at, each
// holding at most MaxChunk bytes of entries (always at least one frame).
func appendOffsets(dst []byte, epoch, at int64, parts []commitlog.PartitionOffset) []byte {
	for {
		n, size := 0, 0
		for n < len(parts) && (n == 0 || size+offsetsFixed+len(parts[n].Topic) <= MaxChunk) {
			size += offsetsFixed + len(parts[n].Topic)
			n++
		}
		dst = appendOffsetsFrame(dst, epoch, offsets{at: at, last: n == len(parts), parts: parts[:n]})
		if parts = parts[n:]; len(parts) == 0 {
			return dst
		}
	}
}

func appendOffsetsFrame(dst []byte, epoch int64, o offsets) []byte {
	p := be.AppendUint64(nil, uint64(o.at))
	last := byte(0)
	if o.last {
		last = 1
	}
	p = append(p, last)
	p = be.AppendUint32(p, uint32(len(o.parts)))
	for _, e := range o.parts {
		p = be.AppendUint16(p, uint16(len(e.Topic)))
		p = append(p, e.Topic...)
		p = append(p, e.TopicID[:]...)
		p = be.AppendUint32(p, uint32(e.Partition))
		p = be.AppendUint64(p, uint64(e.Next))
	}
	return appendFrame(dst, frameOffsets, epoch, p)
}

func decodeOffsets(p []byte) (offsets, error) {
	bad := func(format string, args ...any) (offsets, error) {
		return offsets{}, fmt.Errorf("%w: offsets: %s", ErrProtocol, fmt.Sprintf(format, args...))
	}
	if len(p) < offsetsHeader {
		return bad("%d bytes", len(p))
	}
	o := offsets{at: int64(be.Uint64(p))}
	switch p[8] {
	case 0:
	case 1:
		o.last = true
	default:
		return bad("last flag %d", p[8])
	}
	count := int(be.Uint32(p[9:]))
	p = p[offsetsHeader:]
	if o.at < 0 || count > len(p)/offsetsFixed {
		return bad("at %d, %d entries in %d bytes", o.at, count, len(p))
	}
	o.parts = make([]commitlog.PartitionOffset, count)
	for i := range o.parts {
		if len(p) < 2 || len(p) < offsetsFixed+int(be.Uint16(p)) {
			return bad("entry %d of %d cut short", i, count)
		}
		e := &o.parts[i]
		n := int(be.Uint16(p))
		e.Topic = string(p[2 : 2+n])
		p = p[2+n:]
		copy(e.TopicID[:], p)
		p = p[commitlog.TopicIDSize:]
		e.Partition = int32(be.Uint32(p))
		e.Next = int64(be.Uint64(p[4:]))
		p = p[12:]
		if e.Partition < 0 || e.Next < 0 {
			return bad("%s/%d at offset %d", e.Topic, e.Partition, e.Next)
		}
	}
	if len(p) != 0 {
		return bad("%d bytes after %d entries", len(p), count)
	}
	return o, nil
}
