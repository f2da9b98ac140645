package framed

import (
	"encoding/binary"
	"fmt"
)

// Reader decodes big-endian fields from a payload. Reading past the end
// sets a sticky shortfall: the read returns zeros (or nil) and Err
// reports it.
type Reader struct {
	b     []byte
	short bool
}

// NewReader reads b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Bytes returns the next n bytes (aliasing the payload), or nil if fewer
// remain or n is negative.
func (r *Reader) Bytes(n int) []byte {
	if r.short || n < 0 || n > len(r.b) {
		r.short = true
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// U8 reads one byte.
func (r *Reader) U8() uint8 {
	if b := r.Bytes(1); b != nil {
		return b[0]
	}
	return 0
}

// U16 reads a big-endian uint16.
func (r *Reader) U16() uint16 {
	if b := r.Bytes(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

// U32 reads a big-endian uint32.
func (r *Reader) U32() uint32 {
	if b := r.Bytes(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

// U64 reads a big-endian uint64.
func (r *Reader) U64() uint64 {
	if b := r.Bytes(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// Len is the number of bytes not read yet.
func (r *Reader) Len() int { return len(r.b) }

// Err reports a read past the end, wrapping ErrDamaged.
func (r *Reader) Err() error {
	if r.short {
		return fmt.Errorf("payload ends early: %w", ErrDamaged)
	}
	return nil
}

// Done is Err, and also reports bytes left over: a payload must be read
// exactly.
func (r *Reader) Done() error {
	if err := r.Err(); err != nil {
		return err
	}
	if len(r.b) > 0 {
		return fmt.Errorf("%d bytes after the payload: %w", len(r.b), ErrDamaged)
	}
	return nil
}
