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
// record; that is the end of the log. Everything after the end is removed:
// the rest of its file is zeroed (blocks stay allocated) and later files
// are deleted, so no stale record can ever reappear behind new appends.
// The write position is set to the end, which is returned, and everything
// before it is made durable.
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

	if len(segs) == 0 {
		base := max(from, 0)
		s, err := createSegment(l.opts.fs, l.opts.Dir, base, l.opts.FileSize, &l.mapped)
		if err != nil {
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
	if from > last.end() {
		return 0, fmt.Errorf("commitlog: recover from %d: log ends at %d: %w", from, last.end(), ErrOutOfRange)
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].end() > from })
	sc := scanner{fn: fn, intern: l.intern}
	var end int64
	if i == len(segs) {
		end = from
	} else {
		var err error
		end, err = sc.scan(segs[i:], from)
		if err != nil {
			return end, err
		}
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
		if err := syncDir(l.opts.Dir); err != nil {
			return end, fmt.Errorf("commitlog: recover: %w", err)
		}
	}
	var zeroed int64
	if j < len(segs) {
		s := segs[j]
		zeroed = s.zeroFrom(end - s.base)
	} else {
		s, err := createSegment(l.opts.fs, l.opts.Dir, end, l.opts.FileSize, &l.mapped)
		if err != nil {
			return end, fmt.Errorf("commitlog: recover: %w", err)
		}
		segs = append(segs, s)
		l.setChain(segs)
	}
	for k := min(i, len(segs)-1); k < len(segs); k++ {
		if err := l.opts.fs.Fdatasync(segs[k].f); err != nil {
			return end, fmt.Errorf("commitlog: recover: sync %s: %w", segs[k].path, err)
		}
	}
	cur := segs[len(segs)-1]
	l.trustedFrom.Store(from)
	l.startWriting(cur, end-cur.base)

	took := time.Since(start)
	fields := logrus.Fields{
		"from": from, "end": end, "records": sc.records, "scanned_bytes": sc.bytes,
		"zeroed_bytes": zeroed, "removed_files": len(removed), "took": took,
	}
	if sc.stop != nil {
		fields["stopped_by"] = sc.stop.Error()
	}
	l.log.WithFields(fields).Info("commit log recovered")
	return end, nil
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

// scanner is the recovery loop: it decodes records in place, checks their
// CRC and reuses one Record, so a record costs no allocation unless fn
// makes one.
type scanner struct {
	fn      func(*Record) error
	intern  *interner
	rec     Record
	records int64
	bytes   int64
	stop    error // why the scan ended, nil at a clean end
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
			unix.Madvise(s.m[pos:], unix.MADV_POPULATE_READ)
		}
		next, ok, err := sc.scanFile(s, pos)
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

// scanFile scans one file from pos. It returns the physical offset where
// the scan stopped and ok = true if it stopped by rolling to the next file.
func (sc *scanner) scanFile(s *segment, pos int64) (int64, bool, error) {
	m := s.m
	for {
		rem := s.size - pos
		if rem < BlankSize {
			sc.bytes += rem
			return s.end(), true, nil
		}
		if m[pos+offMagic] == BlankMagic {
			if isBlank(m[pos:], rem) {
				sc.bytes += rem
				return s.end(), true, nil
			}
			sc.stop = fmt.Errorf("%w: bad end-of-file marker at %d", ErrCorrupt, s.base+pos)
			return s.base + pos, false, nil
		}
		if be.Uint32(m[pos:]) == 0 {
			sc.stop = nil
			return s.base + pos, false, nil
		}
		if err := decodeInto(m[pos:], &sc.rec, sc.intern, true); err != nil {
			sc.stop = fmt.Errorf("at %d: %w", s.base+pos, err)
			return s.base + pos, false, nil
		}
		if sc.rec.PhysOffset != s.base+pos {
			sc.stop = fmt.Errorf("%w: record at %d says it is at %d", ErrCorrupt, s.base+pos, sc.rec.PhysOffset)
			return s.base + pos, false, nil
		}
		if sc.fn != nil {
			if err := sc.fn(&sc.rec); err != nil {
				return s.base + pos, false, fmt.Errorf("commitlog: recover: record at %d: %w", s.base+pos, err)
			}
		}
		sc.records++
		size := int64(sc.rec.TotalSize)
		sc.bytes += size
		pos += size
	}
}
