package consumequeue

import (
	"fmt"
	"io"
)

// windowSize is the buffer a journal is read through. Reading a journal
// whole cost its size in fresh heap, and the first touch of each page
// is dear (0.45-0.57 s of system time to read 128 MB into fresh memory on
// the 2-core VM of docs/BENCHMARKS.md); a window is touched once and
// reused for both of a replay's passes.
const windowSize = 1 << 20

// window reads a journal's records through one buffer: at each record it
// holds at least a whole record's worth of the file, unless the file
// ends first, so records are decoded from it as from the file's bytes.
type window struct {
	r      io.Reader
	buf    []byte
	lo, hi int   // buf[lo:hi] is unread
	pos    int64 // the file offset of buf[lo]
	eof    bool
	err    error // a read failure, not the end of the file
}

// newWindow reads the journal file f, whose size is size, from after its
// header, through buf.
func newWindow(f io.ReaderAt, size int64, buf []byte) *window {
	return &window{r: io.NewSectionReader(f, JournalHeaderSize, size-JournalHeaderSize), buf: buf, pos: JournalHeaderSize}
}

// next returns the unread bytes: at least a record's largest frame of
// them, or all that is left of the file.
func (w *window) next() []byte {
	const need = recordHeaderSize + maxRecordBody
	if w.hi-w.lo < need && !w.eof {
		w.hi = copy(w.buf, w.buf[w.lo:w.hi])
		w.lo = 0
		for w.hi < len(w.buf) && !w.eof {
			n, err := w.r.Read(w.buf[w.hi:])
			w.hi += n
			switch {
			case err == io.EOF:
				w.eof = true
			case err != nil:
				w.err = fmt.Errorf("consumequeue: read journal at %d: %w", w.pos+int64(w.hi-w.lo), err)
				w.eof = true
			}
		}
	}
	return w.buf[w.lo:w.hi]
}

// skip consumes n bytes of what next returned.
func (w *window) skip(n int) {
	w.lo += n
	w.pos += int64(n)
}
