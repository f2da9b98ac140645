package commitlog

import (
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// Recover scans the log forward from the physical offset from (clamped to
// MinOffset; it must be a record boundary, an end-of-file marker, or the end
// of the log), verifies every record's CRC and calls fn (if not nil) for
// each valid record in order. It stops at the first zero, torn or corrupt
// record; that is the end of the log.
//
// The flushed mark is the larger of Options.Flushed and the log's own mark
// file (see "Flushed mark" in the package doc). An end at or after it is a
// torn tail: everything after it is removed (the rest of its file is
// zeroed, blocks staying allocated, and later files are deleted), so no
// stale record can ever reappear behind new appends. An end before it is
// damage to records that were durable: Recover returns an error wrapping ErrDamaged that names the file,
// the offset and what is wrong, and changes nothing, unless
// Options.RecoverTruncate is set, in which case it cuts there as well and
// logs what was lost. In that case, and when the last file is shorter than
// FileSize (cut), the file holding the end is scanned again from its start,
// so that the end is its first damage even if that lies before from (which
// may then be past the returned end). The write position is set to the end,
// which is returned, and everything before it is made durable.
//
// The *Record passed to fn is reused: it and its slices are valid only
// during the call. If fn returns an error, Recover returns it (wrapped)
// with the offset of that record and changes nothing; the Log then stays
// unusable for appends. Recover does not touch queue offsets: the caller
// restores them with SetQueueOffset (fn sees every record to do so).
//
// Recover must run exactly once, before any Append, and starts the
// background flusher, preallocator and retention.
func (l *Log) Recover(from int64, fn func(r *Record) error) (int64, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	if l.recovered {
		return 0, fmt.Errorf("commitlog: recover: already recovered")
	}
	start := time.Now()
	l.segMu.Lock()
	defer l.segMu.Unlock()
	segs := l.chain()
	mark := l.recoveryMark()

	if len(segs) == 0 {
		if mark > max(from, 0) && !l.opts.RecoverTruncate {
			return 0, fmt.Errorf("commitlog: recover %s: no file left, but the log was flushed to %d: %w", l.opts.Dir, mark, ErrDamaged)
		}
		base := max(from, 0)
		s, err := createSegment(l.opts.FS, l.opts.Dir, base, l.opts.FileSize, &l.mapped)
		if err != nil {
			return 0, fmt.Errorf("commitlog: recover: %w", err)
		}
		if err := l.openMark(base); err != nil {
			os.Remove(s.path)
			s.release()
			return 0, fmt.Errorf("commitlog: recover: %w", err)
		}
		l.setChain([]*segment{s})
		l.trustedFrom.Store(base)
		l.startWriting(s, 0)
		l.log.WithFields(logrus.Fields{"dir": l.opts.Dir, "offset": base}).Info("created new commit log")
		return base, nil
	}

	from = max(from, segs[0].base)
	last := segs[len(segs)-1]
	if from > last.end() && mark <= last.end() {
		return 0, fmt.Errorf("commitlog: recover from %d: log ends at %d: %w", from, last.end(), ErrOutOfRange)
	}
	// A from past the files (cut or removed ones) is checked against the
	// flushed mark below like any other early end.
	end := min(from, last.end())
	i := sort.Search(len(segs), func(i int) bool { return segs[i].end() > end })
	sc := scanner{fn: fn, intern: l.intern}
	if from == end && i < len(segs) {
		var err error
		end, err = sc.scan(segs[i:], from)
		if err != nil {
			return end, fmt.Errorf("commitlog: recover: %w", err)
		}
	}
	stop := sc.stop
	// A scan that started past a cut in the last file would not see it.
	if end < mark || l.cutLast && from > last.base {
		var k int
		end, k, stop = earliestDamage(segs, end, stop)
		i = min(i, k)
	}
	if end < mark {
		damage := l.damage(segs, end, mark, stop)
		if !l.opts.RecoverTruncate {
			return end, damage
		}
		l.log.WithError(damage).WithFields(logrus.Fields{"end": end, "flushed": mark, "lost_bytes": mark - end}).
			Error("cutting the commit log at damage before the flushed mark (RecoverTruncate): records acknowledged as durable are lost")
	}
	// The file holding end: the last scanned one, or, when end is exactly
	// the end of the chain, a new one.
	j := sort.Search(len(segs), func(j int) bool { return segs[j].end() > end })

	var removed []*segment
	if j < len(segs) {
		removed = segs[j+1:]
		segs = segs[:j+1]
	}
	for _, s := range removed {
		if err := os.Remove(s.path); err != nil {
			return end, fmt.Errorf("commitlog: recover: remove %s after the end %d: %w", s.path, end, err)
		}
		s.release()
	}
	// Only now drop them from the chain; a failed removal above leaves the
	// log as it was, still unrecovered.
	segs = append([]*segment(nil), segs...)
	l.setChain(segs)
	if len(removed) > 0 {
		if err := l.opts.FS.SyncDir(l.opts.Dir); err != nil {
			return end, fmt.Errorf("commitlog: recover: %w", err)
		}
	}
	var zeroed int64
	if j < len(segs) {
		s := segs[j]
		var err error
		if fault := guard(func() { zeroed, err = s.zeroFrom(end - s.base) }); fault != nil {
			err = fault
		}
		if err != nil {
			return end, fmt.Errorf("commitlog: recover: clear %s after the end %d: %w", s.path, end, err)
		}
		s.dropTail(end - s.base)
	} else {
		s, err := createSegment(l.opts.FS, l.opts.Dir, end, l.opts.FileSize, &l.mapped)
		if err != nil {
			return end, fmt.Errorf("commitlog: recover: %w", err)
		}
		segs = append(segs, s)
		l.setChain(segs)
	}
	for k := min(i, len(segs)-1); k < len(segs); k++ {
		if err := l.opts.FS.Fdatasync(segs[k].f); err != nil {
			return end, fmt.Errorf("commitlog: recover: sync %s: %w", segs[k].path, err)
		}
	}
	if err := l.openMark(end); err != nil {
		return end, fmt.Errorf("commitlog: recover: %w", err)
	}
	cur := segs[len(segs)-1]
	l.trustedFrom.Store(from)
	l.startWriting(cur, end-cur.base)

	took := time.Since(start)
	fields := logrus.Fields{
		"from": from, "end": end, "flushed": mark, "records": sc.records, "scanned_bytes": sc.bytes,
		"zeroed_bytes": zeroed, "removed_files": len(removed), "took": took,
	}
	if sc.stop != nil {
		fields["stopped_by"] = sc.stop.Error()
	}
	l.log.WithFields(fields).Info("commit log recovered")
	return end, nil
}

// earliestDamage rescans from its start the file in which a scan ended at
// end, before the flushed mark: the scan started at the caller's offset,
// and damage before it in the same file (a file cut short, zeroed pages)
// would otherwise be left behind the new end, where a later recovery
// from an earlier offset would stop and take everything after it. It
// returns the end of the valid records of that file if it is earlier, with
// what stopped it, and the index of the file.
func earliestDamage(segs []*segment, end int64, stop error) (int64, int, error) {
	k := sort.Search(len(segs), func(k int) bool { return segs[k].end() > end })
	k = min(k, len(segs)-1)
	s := segs[k]
	var sc scanner
	e, rolled, _ := sc.scanFile(s.base, s.ro[:s.size], 0)
	if rolled || e >= end {
		return end, k, stop
	}
	return e, k, sc.stop
}

// damage describes a log that ends at end, before the flushed mark; stop
// is what the scan found there (nil for zero bytes or the end of the files).
func (l *Log) damage(segs []*segment, end, mark int64, stop error) error {
	j := sort.Search(len(segs), func(j int) bool { return segs[j].end() > end })
	if j == len(segs) {
		return fmt.Errorf("commitlog: recover %s: the files end at %d, but the log was flushed to %d: %w",
			l.opts.Dir, end, mark, ErrDamaged)
	}
	s := segs[j]
	what := "zero bytes where a record should be"
	if stop != nil {
		what = stop.Error()
	}
	return fmt.Errorf("commitlog: recover: file %s at %d (offset %d): %s; the log was flushed to %d: %w",
		s.path, end-s.base, end, what, mark, ErrDamaged)
}

// startWriting sets the write position and starts the background work.
// wmu is held.
func (l *Log) startWriting(cur *segment, pos int64) {
	l.cur = cur
	l.wpos = pos
	l.writeOff.Store(cur.base + pos)
	l.flushed.Store(cur.base + pos)
	l.recovered = true
	l.wg.Add(3)
	go l.preallocate()
	go l.flusher()
	go l.retainer()
	l.requestNext()
}

// scanner is the recovery loop, shared with Reader: it decodes records in
// place, checks their CRC and reuses one Record, so a record costs no
// allocation unless fn makes one.
type scanner struct {
	fn      func(*Record) error
	intern  *interner
	rec     Record
	records int64
	bytes   int64
	stop    error // why the scan ended inside a file; nil at a zero region or the end of the chain
	used    int64 // where the records of the last file scanned end, from its start
}

// scan walks the chain segs from phys and returns the end of the valid
// log. Only an error from fn is returned as an error.
func (sc *scanner) scan(segs []*segment, phys int64) (int64, error) {
	for k, s := range segs {
		pos := phys - s.base
		if pos < s.size {
			// Populate the page tables of the rest of the file in one call
			// (reading it from disk if it is not cached) instead of taking
			// a fault every few pages of the scan. Best effort.
			unix.Madvise(s.ro[pos:], unix.MADV_POPULATE_READ)
		}
		next, ok, err := sc.scanFile(s.base, s.ro[:s.size], pos)
		if err != nil || !ok {
			return next, err
		}
		// Rolled past the end of s: continue at the start of the next file.
		phys = next
		if k == len(segs)-1 {
			return phys, nil
		}
	}
	return phys, nil
}

// scanFile scans the bytes m of the file that starts at physical offset
// base, from pos. It returns the physical offset where the scan stopped and
// ok = true if it stopped by rolling to the next file (an end-of-file
// marker, or a tail too short for one).
func (sc *scanner) scanFile(base int64, m []byte, pos int64) (int64, bool, error) {
	size := int64(len(m))
	sc.stop = nil
	for {
		sc.used = pos
		rem := size - pos
		if rem < BlankSize {
			sc.bytes += rem
			return base + size, true, nil
		}
		if m[pos+offMagic] == BlankMagic {
			if isBlank(m[pos:], rem) {
				sc.bytes += rem
				return base + size, true, nil
			}
			sc.stop = fmt.Errorf("%w: bad end-of-file marker", ErrCorrupt)
			return base + pos, false, nil
		}
		if be.Uint32(m[pos:]) == 0 {
			return base + pos, false, nil
		}
		if err := decodeInto(m[pos:], &sc.rec, sc.intern, true); err != nil {
			sc.stop = err
			return base + pos, false, nil
		}
		if sc.rec.PhysOffset != base+pos {
			sc.stop = fmt.Errorf("%w: record says it is at %d", ErrCorrupt, sc.rec.PhysOffset)
			return base + pos, false, nil
		}
		if sc.fn != nil {
			if err := sc.fn(&sc.rec); err != nil {
				return base + pos, false, fmt.Errorf("record at %d: %w", base+pos, err)
			}
		}
		sc.records++
		n := int64(sc.rec.TotalSize)
		sc.bytes += n
		pos += n
	}
}
