package kafkalayout

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/unilog/unilog/commitlog"
)

// load opens an existing partition directory: older segments as they are,
// the active one recovered against its .log.
func (p *partition) load() (err error) {
	bases, err := segmentBases(p.dir)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			for _, s := range p.segments {
				s.close()
			}
			p.segments = nil
		}
	}()
	if len(bases) == 0 {
		seg, err := createSegment(p.dir, 0, p.opts)
		if err != nil {
			return err
		}
		p.segments = []*segment{seg}
		return nil
	}
	for i, base := range bases {
		active := i == len(bases)-1
		seg, err := openSegment(p.dir, base, active, p.opts)
		if err != nil {
			return err
		}
		p.segments = append(p.segments, seg)
		if !active {
			continue
		}
		next, err := seg.recover(p.opts.IndexIntervalBytes)
		if err != nil {
			return err
		}
		p.next = next
	}
	return nil
}

func segmentBases(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("kafkalayout: open partition: %w", err)
	}
	var bases []int64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok || len(name) != 20 {
			continue
		}
		base, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			continue
		}
		bases = append(bases, base)
	}
	slices.Sort(bases)
	return bases, nil
}

// openSegment opens an existing segment. The active one's indexes are mapped
// at full size again so that they can grow, as Kafka resizes the active
// segment's indexes when it loads a log.
func openSegment(dir string, base int64, active bool, opts *Options) (*segment, error) {
	prefix := filepath.Join(dir, segmentName(base))
	f, err := os.OpenFile(prefix+".log", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("kafkalayout: open segment: %w", err)
	}
	s := &segment{base: base, log: f}
	fi, err := f.Stat()
	if err != nil {
		s.close()
		return nil, fmt.Errorf("kafkalayout: open segment: %w", err)
	}
	s.size = fi.Size()
	offSize, timeSize := opts.MaxIndexSize, opts.MaxIndexSize
	if !active {
		offSize, timeSize = fileSize(prefix+".index"), fileSize(prefix+".timeindex")
	}
	if err := s.openIndexes(prefix, offSize, timeSize, opts.RandomIndexAccess); err != nil {
		s.close()
		return nil, err
	}
	s.index.entries = s.index.usedPrefix()
	s.timeIndex.entries = s.timeIndex.usedPrefix(1<<31 - 1)
	return s, nil
}

func fileSize(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return int(fi.Size())
}

// recover checks the active segment against its .log: it keeps the index
// entries that point at the record they name, rescans the .log from the last
// of them, rebuilding the index tail, and cuts the .log at the first torn or
// corrupt record. It returns the log end offset.
func (s *segment) recover(interval int) (int64, error) {
	written := s.index.entries
	for s.index.entries > 0 {
		rel, pos := s.index.at(s.index.entries - 1)
		rec, err := recordAt(s.log, int64(pos), s.size)
		if err == nil && rec.QueueOffset+int64(max(rec.Count, 1))-1 == s.base+int64(rel) {
			break
		}
		s.index.entries--
	}
	// Stale entries past the kept ones are zeroed so that a later open cannot
	// count them again; only the written part is touched, the sparse rest of
	// the preallocated file stays unallocated.
	clear(s.index.data[s.index.entries*offsetEntrySize : written*offsetEntrySize])

	pos, next, first := int64(0), s.base, true
	if s.index.entries > 0 {
		rel, ipos := s.index.at(s.index.entries - 1)
		pos = int64(ipos)
		writtenTime := s.timeIndex.entries
		s.timeIndex.entries = s.timeIndex.usedPrefix(rel)
		clear(s.timeIndex.data[s.timeIndex.entries*timeEntrySize : writtenTime*timeEntrySize])
		if s.timeIndex.entries > 0 {
			ts, trel := s.timeIndex.at(s.timeIndex.entries - 1)
			s.maxTimestamp, s.offsetOfMaxTS = ts, s.base+int64(trel)
		}
	} else {
		clear(s.timeIndex.data[:s.timeIndex.entries*timeEntrySize])
		s.timeIndex.entries = 0
	}
	sc := newScanner(s.log, pos, s.size, 1<<20)
	for {
		at := sc.pos
		rec, n, err := sc.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil && !first && rec.QueueOffset != next {
			err = fmt.Errorf("kafkalayout: %s at %d: offset %d, want %d: %w", s.log.Name(), at, rec.QueueOffset, next, commitlog.ErrCorrupt)
		}
		if err == nil && first && pos == 0 && rec.QueueOffset != s.base {
			err = fmt.Errorf("kafkalayout: %s: first offset %d, want base %d: %w", s.log.Name(), rec.QueueOffset, s.base, commitlog.ErrCorrupt)
		}
		if err != nil {
			if !errors.Is(err, commitlog.ErrCorrupt) {
				return 0, err
			}
			if err := s.truncate(at); err != nil {
				return 0, err
			}
			break
		}
		last := rec.QueueOffset + int64(max(rec.Count, 1)) - 1
		if first && pos > 0 {
			// The indexed record itself: its entry exists already.
			if rec.StoreTimestamp > s.maxTimestamp {
				s.maxTimestamp, s.offsetOfMaxTS = rec.StoreTimestamp, last
			}
			s.bytesSinceIndex = n
		} else {
			s.noteRecord(at, last, n, rec.StoreTimestamp, interval)
		}
		first = false
		next = last + 1
	}
	return next, nil
}

func (s *segment) truncate(size int64) error {
	if err := s.log.Truncate(size); err != nil {
		return fmt.Errorf("kafkalayout: truncate %s: %w", s.log.Name(), err)
	}
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("kafkalayout: truncate %s: %w", s.log.Name(), err)
	}
	s.size = size
	return nil
}
