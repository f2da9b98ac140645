package group

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/unilog/unilog/internal/framed"
)

// snapshotFormat frames the snapshot's body (layout in the package doc).
var snapshotFormat = framed.Format{Name: "offsets snapshot", Magic: "ULGS", Version: 1, Shape: framed.Prefixed}

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
	return snapshotFormat.Append(make([]byte, 0, snapshotFormat.Overhead()+len(body)), body)
}

func decodeSnapshot(b []byte) (snapshot, error) {
	var s snapshot
	_, body, err := snapshotFormat.Decode(b)
	if err != nil {
		return s, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	r := framed.NewReader(body)
	parts := r.U32()
	if r.Err() != nil || int(parts) > r.Len()/8 {
		return s, fmt.Errorf("%w: partition count", ErrBadSnapshot)
	}
	for range parts {
		s.next = append(s.next, int64(r.U64()))
	}
	n := r.U32()
	for i := uint32(0); i < n && r.Err() == nil; i++ {
		k, err := decodeKey(r.Bytes(int(r.U32())))
		if err != nil {
			return s, fmt.Errorf("%w: entry %d: %w", ErrBadSnapshot, i, err)
		}
		v, err := decodeValue(r.Bytes(int(r.U32())))
		if err != nil {
			return s, fmt.Errorf("%w: entry %d: %w", ErrBadSnapshot, i, err)
		}
		s.entries = append(s.entries, snapshotEntry{k, v, int64(r.U64())})
	}
	if err := fieldsEnd(r, "snapshot"); err != nil {
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
