package commitlog

import (
	"fmt"
	"sort"
)

// View is one record read from the log. It holds a reference on the mapped
// file, so the bytes stay valid (even if retention deletes the file) until
// Release. A View is not safe for concurrent use.
type View struct {
	seg *segment
	rec Record
	raw []byte
}

// Record returns the decoded record; its Key, Headers' values and Body
// alias the mapping and are valid until Release.
func (v *View) Record() *Record { return &v.rec }

// Bytes returns the raw record bytes in the mapping, valid until Release.
func (v *View) Bytes() []byte { return v.raw }

// Next returns the physical offset of the record after this one.
func (v *View) Next() int64 { return v.rec.End() }

// Release drops the View's reference on the file. Calling it again is a
// no-op.
func (v *View) Release() {
	if v.seg != nil {
		v.seg.release()
		v.seg = nil
		v.raw = nil
	}
}

// Read returns the record at phys, verifying its CRC. If phys is at an
// end-of-file marker or in the zero tail of a file, the record returned is
// the first one of the next file (so a reader advancing by View.Next never
// needs to know about file boundaries); Record().PhysOffset says where it
// is. It returns ErrOutOfRange below MinOffset or at or past WriteOffset,
// ErrCorrupt if phys is not the start of a valid record, and never blocks
// the writer.
func (l *Log) Read(phys int64) (*View, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	for {
		w := l.writeOff.Load()
		if phys < 0 || phys >= w {
			return nil, fmt.Errorf("commitlog: read %d: write offset %d: %w", phys, w, ErrOutOfRange)
		}
		segs := l.chain()
		i := sort.Search(len(segs), func(i int) bool { return segs[i].end() > phys })
		if i == len(segs) || phys < segs[i].base || !segs[i].tryAcquire() {
			return nil, fmt.Errorf("commitlog: read %d: min offset %d: %w", phys, l.MinOffset(), ErrOutOfRange)
		}
		s := segs[i]
		pos := phys - s.base
		if rem := s.size - pos; rem < BlankSize || isBlank(s.m[pos:], rem) {
			s.release()
			phys = s.end()
			continue
		}
		v := &View{seg: s}
		// Never look past what the writer has published.
		limit := min(s.size, w-s.base)
		if err := decodeInto(s.m[pos:limit], &v.rec, l.intern, true); err != nil {
			s.release()
			return nil, fmt.Errorf("commitlog: read %d: %w", phys, err)
		}
		if v.rec.PhysOffset != phys {
			s.release()
			return nil, fmt.Errorf("commitlog: read %d: record says it is at %d: %w", phys, v.rec.PhysOffset, ErrCorrupt)
		}
		v.raw = s.m[pos : pos+int64(v.rec.TotalSize) : pos+int64(v.rec.TotalSize)]
		return v, nil
	}
}

// isBlank reports whether b starts with a valid end-of-file marker for a
// tail of rem bytes.
func isBlank(b []byte, rem int64) bool {
	return len(b) >= BlankSize && b[offMagic] == BlankMagic && b[offVersion] == blankVersion &&
		int64(be.Uint32(b)) == rem && be.Uint16(b[offFlags:]) == 0
}
