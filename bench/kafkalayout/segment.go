package kafkalayout

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// segment is one <base>.log with its two indexes.
type segment struct {
	base      int64
	log       *os.File
	size      int64 // bytes of valid records in the .log
	index     offsetIndex
	timeIndex timeIndex

	bytesSinceIndex int   // appended since the last offset-index entry
	maxTimestamp    int64 // largest store timestamp in the segment
	offsetOfMaxTS   int64
}

func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

// createSegment makes a new active segment at base with preallocated,
// mapped indexes.
func createSegment(dir string, base int64, opts *Options) (*segment, error) {
	prefix := filepath.Join(dir, segmentName(base))
	f, err := os.OpenFile(prefix+".log", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kafkalayout: create segment: %w", err)
	}
	s := &segment{base: base, log: f}
	if err := s.openIndexes(prefix, opts.MaxIndexSize, opts.MaxIndexSize, opts.RandomIndexAccess); err != nil {
		s.close()
		os.Remove(prefix + ".log")
		return nil, err
	}
	return s, nil
}

func (s *segment) openIndexes(prefix string, offsetSize, timeSize int, random bool) error {
	ix, err := openIndex(prefix+".index", offsetEntrySize, offsetSize, random)
	if err != nil {
		return err
	}
	s.index = offsetIndex{ix}
	tix, err := openIndex(prefix+".timeindex", timeEntrySize, timeSize, random)
	if err != nil {
		return err
	}
	s.timeIndex = timeIndex{tix}
	return nil
}

// noteRecord updates the sparse indexes for a record about to be written at
// pos, with the rule of LogSegment.append: an entry once more than interval
// bytes went by since the last one.
func (s *segment) noteRecord(pos int64, lastOffset int64, size int, storeTS int64, interval int) {
	if storeTS > s.maxTimestamp {
		s.maxTimestamp, s.offsetOfMaxTS = storeTS, lastOffset
	}
	if s.bytesSinceIndex > interval {
		s.index.append(int32(lastOffset-s.base), int32(pos))
		s.timeIndex.maybeAppend(s.maxTimestamp, int32(s.offsetOfMaxTS-s.base))
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += size
}

// fits reports whether n more bytes and entries up to lastOffset keep the
// segment within its limits; otherwise the log rolls first.
func (s *segment) fits(n int64, lastOffset int64, segmentBytes int64) bool {
	if s.size > 0 && s.size+n > segmentBytes {
		return false
	}
	if s.index.full() || s.timeIndex.entries >= s.timeIndex.maxEntries()-1 {
		return false
	}
	return lastOffset-s.base <= 1<<31-1
}

// deactivate is onBecomeInactiveSegment: a last time-index entry, then both
// indexes trimmed to their used size.
func (s *segment) deactivate() error {
	if s.maxTimestamp > 0 {
		s.timeIndex.maybeAppend(s.maxTimestamp, int32(s.offsetOfMaxTS-s.base))
	}
	if err := s.index.trim(); err != nil {
		return err
	}
	return s.timeIndex.trim()
}

// flush is LogSegment.flush: the .log, then both indexes.
func (s *segment) flush() error {
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("kafkalayout: fsync %s: %w", s.log.Name(), err)
	}
	if err := s.index.flush(); err != nil {
		return err
	}
	return s.timeIndex.flush()
}

func (s *segment) close() error {
	var errs []error
	if s.index.mappedIndex != nil {
		errs = append(errs, s.index.close())
	}
	if s.timeIndex.mappedIndex != nil {
		errs = append(errs, s.timeIndex.close())
	}
	if s.log != nil {
		errs = append(errs, s.log.Close())
	}
	return errors.Join(errs...)
}
