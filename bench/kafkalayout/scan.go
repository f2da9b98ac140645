package kafkalayout

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/unilog/unilog/commitlog"
)

// maxRecordSize bounds what a scan believes a length prefix; anything larger is
// treated as corruption rather than allocated.
const maxRecordSize = 64 << 20

// scanner reads whole records from a .log forward from a position.
type scanner struct {
	f   *os.File
	r   *bufio.Reader
	pos int64
	end int64
	buf []byte
}

func newScanner(f *os.File, pos, end int64, bufSize int) *scanner {
	return &scanner{
		f:   f,
		r:   bufio.NewReaderSize(io.NewSectionReader(f, pos, end-pos), bufSize),
		pos: pos,
		end: end,
	}
}

// next returns the record at the scan position and its size; io.EOF at the
// end, an error wrapping commitlog.ErrCorrupt for a torn or damaged record.
// The record aliases an internal buffer valid until the next call.
func (s *scanner) next() (*commitlog.Record, int, error) {
	if s.pos >= s.end {
		return nil, 0, io.EOF
	}
	var hdr [4]byte
	if _, err := io.ReadFull(s.r, hdr[:]); err != nil {
		return nil, 0, s.torn(err)
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n < len(hdr) || n > maxRecordSize || s.pos+int64(n) > s.end {
		return nil, 0, fmt.Errorf("kafkalayout: %s at %d: record size %d: %w", s.f.Name(), s.pos, n, commitlog.ErrCorrupt)
	}
	if cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	b := s.buf[:n]
	copy(b, hdr[:])
	if _, err := io.ReadFull(s.r, b[len(hdr):]); err != nil {
		return nil, 0, s.torn(err)
	}
	rec, err := commitlog.Decode(b)
	if err != nil {
		return nil, 0, fmt.Errorf("kafkalayout: %s at %d: %w", s.f.Name(), s.pos, err)
	}
	s.pos += int64(n)
	return rec, n, nil
}

func (s *scanner) torn(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("kafkalayout: %s at %d: torn record: %w", s.f.Name(), s.pos, commitlog.ErrCorrupt)
	}
	return fmt.Errorf("kafkalayout: read %s: %w", s.f.Name(), err)
}

// recordAt decodes the single record at pos, used to check index entries.
func recordAt(f *os.File, pos, end int64) (*commitlog.Record, error) {
	rec, _, err := newScanner(f, pos, end, 4096).next()
	return rec, err
}
