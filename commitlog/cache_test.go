package commitlog

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestFlushDropsCacheBehindWindow: after a flush, the pages more than
// CacheWindow before FlushedOffset are out of the page cache, the window
// stays cached, and every record still reads back (from the disk).
//
// Files of a size that is no multiple of the zero chunk (one more page)
// put the files' zero chunks, and so their folios, off the log's chunk
// boundaries: the drop point is a chunk boundary of its file.
func TestFlushDropsCacheBehindWindow(t *testing.T) {
	const (
		window = 2 << 20
		total  = 3*dropStep + 4<<20
	)
	page := int64(os.Getpagesize())
	for _, tc := range []struct {
		name     string
		fileSize int64
		window   int64
		// dropped: the pages before the window must be out of the page
		// cache after the flush.
		dropped bool
	}{
		{"window", 8 << 20, window, true},
		{"disabled", 8 << 20, -1, false},
		{"file of chunks and a page", 8<<20 + page, window, true},
		{"file of a chunk and a page", zeroChunk + page, window, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t, "", tc.fileSize)
			opts.CacheWindow = tc.window
			l := openLog(t, opts)
			defer l.Close()
			var ms []Message
			var at []Position
			for i := 0; l.WriteOffset() < total; i++ {
				m := testMessage(i, 60<<10)
				p, err := l.Append(&m)
				if err != nil {
					t.Fatal(err)
				}
				ms, at = append(ms, m), append(at, p)
				if p.End() < total/2 && l.WriteOffset() >= total/2 {
					// A drop that ends inside a zero chunk's folio: the
					// next one must still drop that folio.
					if err := l.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			flushed := l.FlushedOffset()
			if tc.dropped {
				checkDropPoint(t, l)
			}
			behind, kept := residentPages(t, l, 0, flushed-window-dropStep), residentPages(t, l, flushed-window/2, flushed)
			t.Logf("flushed %d MiB; resident: %d of the pages before the window, %d of its second half", flushed>>20, behind, kept)
			if tc.dropped && behind != 0 {
				t.Errorf("%d pages before the window still in the page cache, want none", behind)
			}
			if !tc.dropped && behind == 0 {
				t.Errorf("no page before the window in the page cache with CacheWindow %d: the log dropped them", tc.window)
			}
			if kept == 0 {
				t.Error("the window's pages were dropped too")
			}
			for i := range ms {
				v, err := l.Read(at[i].PhysOffset)
				if err != nil {
					t.Fatalf("read record %d at %d: %v", i, at[i].PhysOffset, err)
				}
				if diff := sameMessage(v.Record(), &ms[i]); diff != "" {
					t.Fatalf("record %d: %s", i, diff)
				}
				v.Release()
			}
		})
	}
}

// checkDropPoint fails the test unless the log's drop point is a zero
// chunk boundary of the file it falls in: on a kernel that keeps a folio
// a drop covers in part, any other point leaves one folio behind at each
// drop.
func checkDropPoint(t *testing.T, l *Log) {
	t.Helper()
	l.flushMu.Lock()
	to := l.droppedTo
	l.flushMu.Unlock()
	for _, s := range l.chain() {
		if s.base <= to && to < s.end() && (to-s.base)%zeroChunk != 0 {
			t.Errorf("dropped up to %d, %d bytes into the file at %d: no zero chunk boundary of it", to, to-s.base, s.base)
		}
	}
}

// residentPages counts the pages of [from, to) of the log in the page
// cache (mincore on the read-only mappings).
func residentPages(t *testing.T, l *Log, from, to int64) int {
	t.Helper()
	page := int64(os.Getpagesize())
	n := 0
	for _, s := range l.chain() {
		lo, hi := max(from, s.base)-s.base, min(to, s.end())-s.base
		lo, hi = lo/page*page, hi/page*page
		if lo >= hi {
			continue
		}
		vec := make([]byte, (hi-lo)/page)
		b := s.ro[lo:hi]
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			t.Fatalf("mincore %s: %v", s.path, errno)
		}
		for _, v := range vec {
			n += int(v & 1)
		}
	}
	return n
}

// TestTruncateDropsRewrittenPages: the bytes written again after a
// truncation below what earlier flushes dropped are dropped in turn once
// they fall behind the window.
func TestTruncateDropsRewrittenPages(t *testing.T) {
	const (
		fileSize = 8 << 20
		window   = 2 << 20
		total    = 3*dropStep + 4<<20
	)
	opts := testOptions(t, "", fileSize)
	opts.CacheWindow = window
	l := openLog(t, opts)
	defer l.Close()
	write := func(from int) {
		t.Helper()
		for i := from; l.WriteOffset() < total; i++ {
			m := testMessage(i, 60<<10)
			if _, err := l.Append(&m); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	m := testMessage(0, 60<<10)
	first, err := l.Append(&m)
	if err != nil {
		t.Fatal(err)
	}
	write(1)
	if err := l.Truncate(first.End()); err != nil {
		t.Fatal(err)
	}
	write(1)
	flushed := l.FlushedOffset()
	if behind := residentPages(t, l, first.End(), flushed-window-dropStep); behind != 0 {
		t.Errorf("%d rewritten pages before the window still in the page cache, want none", behind)
	}
}
