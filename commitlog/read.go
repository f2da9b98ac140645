package commitlog

import (
	"fmt"
	"os"
	"sort"
	"unsafe"
)

// View is one record read from the log. It holds a reference on the mapped
// file, so the bytes stay valid (even if retention deletes the file) until
// Release. Its slices alias a read-only mapping: a store into them faults.
// Loading from them faults too if the disk cannot return the page or the
// file was truncated under the log; AppendBody copies the body out with
// such a fault turned into ErrIO. A View is not safe for concurrent use.
type View struct {
	seg *segment
	rec Record
	raw []byte
}

// Record returns the decoded record; its Key, Headers' values and Body
// alias the mapping and are valid until Release.
func (v *View) Record() *Record { return &v.rec }

// Bytes returns the raw record bytes in the read-only mapping, valid
// until Release.
func (v *View) Bytes() []byte { return v.raw }

// AppendBody appends the record's body to dst. A fault while copying (see
// View) returns dst unchanged and an error wrapping ErrIO.
func (v *View) AppendBody(dst []byte) ([]byte, error) {
	n := len(dst)
	err := guard(func() { dst = append(dst, v.rec.Body...) })
	if err != nil {
		return dst[:n], fmt.Errorf("commitlog: copy record at %d: %w", v.rec.PhysOffset, err)
	}
	return dst, nil
}

// Expect tells ReadInto the topic the record read into v next most likely
// has: a record of that topic then takes this string instead of the
// interner's (a hash and a lock per record), which a fetch reading one
// partition's batches one by one would pay for every batch.
func (v *View) Expect(topic string) { v.rec.Topic = topic }

// Pin moves the View's reference on its file into the Pin returned, for a
// reader that keeps only the slices it took from the record (a fetch keeps
// the body): they stay valid until the Pin's Release. The View is released.
func (v *View) Pin() Pin {
	p := Pin{seg: v.seg}
	v.seg, v.raw = nil, nil
	return p
}

// Pin is a reference on a log file taken from a View (View.Pin).
type Pin struct{ seg *segment }

// FileRange returns the log file the Pin holds and the offset in it of
// b, a slice of a record read through that file (View.Record), for a
// reader that hands the bytes to sendfile(2) instead of loading them. ok
// is false when b does not lie in the file's mapping. The file is open
// until Release.
func (p *Pin) FileRange(b []byte) (f *os.File, off int64, ok bool) {
	if p.seg == nil || len(b) == 0 || len(p.seg.ro) == 0 {
		return nil, 0, false
	}
	off = int64(uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(p.seg.ro))))
	if off < 0 || off+int64(len(b)) > p.seg.size {
		return nil, 0, false
	}
	return p.seg.f, off, true
}

// Release drops the reference. Calling it again, or on the zero Pin, is a
// no-op.
func (p *Pin) Release() {
	if p.seg != nil {
		p.seg.release()
		p.seg = nil
	}
}

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

// Read returns the record at phys, verifying its CRC if it lies before
// where Recover started (from there on every record was CRC-checked by
// Recover or encoded by this process, as Cursor trusts). If phys is at an
// end-of-file marker or in the zero tail of a file, the record returned is
// the first one of the next file (so a reader advancing by View.Next never
// needs to know about file boundaries); Record().PhysOffset says where it
// is. It returns ErrOutOfRange below MinOffset or at or past WriteOffset,
// ErrCorrupt if phys is not the start of a valid record, ErrIO if the
// mapping faults, and never blocks the writer.
func (l *Log) Read(phys int64) (*View, error) {
	v := new(View)
	if err := l.ReadInto(phys, v); err != nil {
		return nil, err
	}
	return v, nil
}

// ReadInto is Read into a View the caller holds, which it releases: a
// reader of many records (a fetch over thousands of partitions reads one
// per batch) keeps its Views on the stack instead of allocating one per
// record. v must hold no file.
func (l *Log) ReadInto(phys int64, v *View) error {
	if l.closed.Load() {
		return ErrClosed
	}
	for {
		w := l.writeOff.Load()
		if phys < 0 || phys >= w {
			return fmt.Errorf("commitlog: read %d: write offset %d: %w", phys, w, ErrOutOfRange)
		}
		segs := l.chain()
		i := sort.Search(len(segs), func(i int) bool { return segs[i].end() > phys })
		if i == len(segs) || phys < segs[i].base || !segs[i].tryAcquire() {
			return fmt.Errorf("commitlog: read %d: min offset %d: %w", phys, l.MinOffset(), ErrOutOfRange)
		}
		s := segs[i]
		var blank bool
		var err error
		verify := phys < l.trustedFrom.Load()
		if ferr := guard(func() { blank, err = s.decodeAt(phys, w, &v.rec, l.intern, verify) }); ferr != nil {
			err = ferr
		}
		if blank {
			s.release()
			phys = s.end()
			continue
		}
		if err != nil {
			s.release()
			return fmt.Errorf("commitlog: read %d in %s: %w", phys, s.path, err)
		}
		pos := phys - s.base
		v.seg = s
		v.raw = s.ro[pos : pos+int64(v.rec.TotalSize) : pos+int64(v.rec.TotalSize)]
		return nil
	}
}

// decodeAt decodes into rec the record at phys in s, never looking past the
// write offset w, through the read-only mapping. blank reports an
// end-of-file marker or a tail too short for one: the record is in the
// next file. Run it under guard.
func (s *segment) decodeAt(phys, w int64, rec *Record, in *interner, verify bool) (blank bool, err error) {
	pos := phys - s.base
	if rem := s.size - pos; rem < BlankSize || isBlank(s.ro[pos:], rem) {
		return true, nil
	}
	limit := min(s.size, w-s.base)
	if err := decodeInto(s.ro[pos:limit], rec, in, verify); err != nil {
		return false, err
	}
	if rec.PhysOffset != phys {
		return false, fmt.Errorf("record says it is at %d: %w", rec.PhysOffset, ErrCorrupt)
	}
	return false, nil
}

// isBlank reports whether b starts with a valid end-of-file marker for a
// tail of rem bytes.
func isBlank(b []byte, rem int64) bool {
	return len(b) >= BlankSize && b[offMagic] == BlankMagic && b[offVersion] == blankVersion &&
		int64(be.Uint32(b)) == rem && be.Uint16(b[offFlags:]) == 0
}
