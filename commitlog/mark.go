package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/unilog/unilog/internal/framed"
)

// FlushedMarkName is the name of the flushed-mark file in the log's
// directory; see "Flushed mark" in the package doc.
const FlushedMarkName = "flushed"

const (
	markName = FlushedMarkName
	markSize = 20
)

// markFormat frames the mark: a reserved uint16 (zero) and the offset.
var markFormat = framed.Format{Name: "flushed mark", Magic: "UFLM", Version: 1, Shape: framed.Sealed}

// encodeMark lays out the flushed-mark file for offset off in b, which is
// markSize bytes long, and returns it.
func encodeMark(b []byte, off int64) []byte {
	var p [10]byte
	binary.BigEndian.PutUint64(p[2:], uint64(off))
	return markFormat.Append(b[:0], p[:])
}

func decodeMark(b []byte) (int64, error) {
	if len(b) != markSize {
		return 0, fmt.Errorf("%w: flushed mark is %d bytes, want %d", ErrCorrupt, len(b), markSize)
	}
	_, p, err := markFormat.Decode(b)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	r := framed.NewReader(p)
	reserved, off := r.U16(), int64(r.U64())
	if err := r.Done(); err != nil || reserved != 0 || off < 0 {
		return 0, fmt.Errorf("%w: flushed mark reserved field %#x or offset %d", ErrCorrupt, reserved, off)
	}
	return off, nil
}

// ReadFlushedMark returns the flushed mark that the log in dir recorded
// last: everything before it was durable when it was written. A missing
// file is an error wrapping fs.ErrNotExist, a damaged one wraps ErrCorrupt.
func ReadFlushedMark(dir string) (int64, error) {
	path := filepath.Join(dir, markName)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("commitlog: read flushed mark: %w", err)
	}
	off, err := decodeMark(b)
	if err != nil {
		return 0, fmt.Errorf("commitlog: %s: %w", path, err)
	}
	return off, nil
}

// recoveryMark is the flushed mark Recover holds the log to: the larger of
// the caller's (Options.Flushed) and the log's own file.
func (l *Log) recoveryMark() int64 {
	mark, err := ReadFlushedMark(l.opts.Dir)
	switch {
	case err == nil:
		return max(mark, l.opts.Flushed)
	case !errors.Is(err, fs.ErrNotExist):
		l.log.WithError(err).Warn("flushed mark unreadable; using the caller's")
	}
	return l.opts.Flushed
}

// openMark opens (creating) the flushed-mark file and makes it say end,
// durably: after a cut with RecoverTruncate the old mark would otherwise
// refuse the next start. Called by Recover before the flusher starts.
func (l *Log) openMark(end int64) error {
	path := filepath.Join(l.opts.Dir, markName)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("commitlog: open flushed mark: %w", err)
	}
	if _, err = f.WriteAt(encodeMark(make([]byte, markSize), end), 0); err == nil {
		err = l.opts.FS.Fdatasync(f)
	}
	if err == nil && errors.Is(statErr, fs.ErrNotExist) {
		err = l.opts.FS.SyncDir(l.opts.Dir)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("commitlog: write flushed mark %s: %w", path, err)
	}
	l.flushMu.Lock()
	l.markF = f
	l.flushMu.Unlock()
	return nil
}

// recordFlushed writes the new flushed offset into the mark file after a
// flush, without an fsync: the value is true whenever the write reaches
// the disk (the records before it were on disk before it was issued), and
// a mark that did not reach it only leaves recovery with an older one. One
// pwrite per flush round; flushMu is held.
func (l *Log) recordFlushed(off int64) {
	if l.markF == nil {
		return
	}
	if _, err := l.markF.WriteAt(encodeMark(l.markBuf[:], off), 0); err != nil && !l.markFailed {
		l.markFailed = true
		l.log.WithError(err).Warn("writing the flushed mark failed; recovery falls back to the caller's mark")
	}
}

// closeMark closes the mark file; flushMu is held.
func (l *Log) closeMark() error {
	if l.markF == nil {
		return nil
	}
	err := l.markF.Close()
	l.markF = nil
	if err != nil {
		return fmt.Errorf("commitlog: close flushed mark: %w", err)
	}
	return nil
}

// lowerMark rewrites the mark, durably, after Truncate or Restart moved
// the end of the log below it: a mark past the end would make the next
// start refuse the log as damaged. flushMu held.
func (l *Log) lowerMark(off int64) error {
	if l.markF == nil {
		return nil
	}
	_, err := l.markF.WriteAt(encodeMark(l.markBuf[:], off), 0)
	if err == nil {
		err = l.opts.FS.Fdatasync(l.markF)
	}
	if err != nil {
		return fmt.Errorf("commitlog: lower the flushed mark to %d: %w", off, err)
	}
	return nil
}
