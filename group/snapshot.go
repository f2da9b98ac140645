package group

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Snapshot layout, version 1 (see the package doc).
const (
	snapshotMagic      = "ULGS"
	snapshotVersion    = 1
	snapshotHeaderSize = 14
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrBadSnapshot marks snapshot bytes that fail a check; Open then replays
// the whole offsets topic instead.
var ErrBadSnapshot = errors.New("group: bad offsets snapshot")

// snapshot is the view at one point of the offsets topic: every live
// commit and, per partition, the offset replay continues from.
type snapshot struct {
	next    []int64
	entries []snapshotEntry
}

type snapshotEntry struct {
	key   offsetKey
	value Offset
	end   int64
}

func encodeSnapshot(s snapshot) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(len(s.next)))
	for _, n := range s.next {
		body = binary.BigEndian.AppendUint64(body, uint64(n))
	}
	body = binary.BigEndian.AppendUint32(body, uint32(len(s.entries)))
	for _, e := range s.entries {
		k, v := encodeKey(e.key), encodeValue(e.value)
		body = binary.BigEndian.AppendUint32(body, uint32(len(k)))
		body = append(body, k...)
		body = binary.BigEndian.AppendUint32(body, uint32(len(v)))
		body = append(body, v...)
		body = binary.BigEndian.AppendUint64(body, uint64(e.end))
	}
	out := make([]byte, 0, snapshotHeaderSize+len(body))
	out = append(out, snapshotMagic...)
	out = binary.BigEndian.AppendUint16(out, snapshotVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(len(body)))
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(body, castagnoli))
	return append(out, body...)
}

func decodeSnapshot(b []byte) (snapshot, error) {
	var s snapshot
	switch {
	case len(b) < snapshotHeaderSize || string(b[:4]) != snapshotMagic:
		return s, fmt.Errorf("%w: no header", ErrBadSnapshot)
	case binary.BigEndian.Uint16(b[4:]) != snapshotVersion:
		return s, fmt.Errorf("%w: version %d", ErrBadSnapshot, binary.BigEndian.Uint16(b[4:]))
	case int64(binary.BigEndian.Uint32(b[6:])) != int64(len(b)-snapshotHeaderSize):
		return s, fmt.Errorf("%w: body length %d, %d bytes present", ErrBadSnapshot, binary.BigEndian.Uint32(b[6:]), len(b)-snapshotHeaderSize)
	case crc32.Checksum(b[snapshotHeaderSize:], castagnoli) != binary.BigEndian.Uint32(b[10:]):
		return s, fmt.Errorf("%w: CRC mismatch", ErrBadSnapshot)
	}
	r := reader{b: b[snapshotHeaderSize:]}
	parts := r.u32()
	if r.bad || int(parts) > len(r.b)/8 {
		return s, fmt.Errorf("%w: partition count", ErrBadSnapshot)
	}
	for range parts {
		s.next = append(s.next, int64(r.u64()))
	}
	n := r.u32()
	for i := uint32(0); i < n && !r.bad; i++ {
		k, err := decodeKey(r.take(int(r.u32())))
		if err != nil {
			return s, fmt.Errorf("%w: entry %d: %w", ErrBadSnapshot, i, err)
		}
		v, err := decodeValue(r.take(int(r.u32())))
		if err != nil {
			return s, fmt.Errorf("%w: entry %d: %w", ErrBadSnapshot, i, err)
		}
		s.entries = append(s.entries, snapshotEntry{k, v, int64(r.u64())})
	}
	if err := r.end("snapshot"); err != nil {
		return s, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	return s, nil
}

// Snapshot returns the committed offsets as snapshot bytes for Options.
// Snapshot of a later Open. It waits until the log is durable through
// every record the snapshot covers, so a crash can never leave a snapshot
// that claims records the log lost (replay would then skip what is
// appended in their place).
func (c *Coordinator) Snapshot(ctx context.Context) ([]byte, error) {
	s, last := c.offs.snapshot()
	if last > 0 {
		if err := c.opts.Log.WaitDurable(ctx, last); err != nil {
			return nil, fmt.Errorf("group: snapshot: wait durable: %w", err)
		}
	}
	return encodeSnapshot(s), nil
}
