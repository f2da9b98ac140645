package consumequeue

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/unilog/unilog/internal/fileops/fileopstest"
)

// TestFlushUnmapsDirtyPages: a Flush that syncs file by file leaves no
// page of the files it wrote back in the store's page tables
// (unmapdirty.go) where at least unmapDirtyMin entries went into each
// since the last; files with fewer new entries keep their pages mapped,
// and so do all files when the Flush syncs the whole file system (past
// syncfsThreshold); the entries read back the same from the mapping and
// after a reopen.
func TestFlushUnmapsDirtyPages(t *testing.T) {
	for _, c := range []struct {
		name           string
		queues, recent int64
		kept           bool
	}{
		{"msync per file", 1, 20_000, false},
		{"syncfs", syncfsThreshold + 36, unmapDirtyMin, true},
		{"msync per file, few entries", 1, unmapDirtyMin - 1, true},
		{"syncfs, few entries", syncfsThreshold + 36, unmapDirtyMin - 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, 30_000, 0)
			storeThroughMapping(s)
			var qs []*Queue
			for p := range c.queues {
				q := mustQueue(t, s, "t", int32(p))
				appendRange(t, q, 0, c.recent)
				qs = append(qs, q)
			}
			mapped := func() (n int) {
				for _, q := range qs {
					for _, f := range q.snapshot() {
						f.mu.RLock()
						n += presentPages(t, f.m)
						f.mu.RUnlock()
					}
				}
				return n
			}
			if n := mapped(); n == 0 {
				t.Fatal("no written page is mapped before the Flush: the test would show nothing")
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			if n := mapped(); (n != 0) != c.kept {
				t.Errorf("%d pages of the flushed files mapped, want them kept: %v", n, c.kept)
			}
			for _, q := range qs {
				checkRange(t, q, 0, c.recent)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, dir, 30_000, 0)
			for p := range c.queues {
				checkRange(t, mustQueue(t, s, "t", int32(p)), 0, c.recent)
			}
		})
	}
}

// presentPages counts the pages of b present in this process's page
// tables (/proc/self/pagemap, bit 63).
func presentPages(t *testing.T, b []byte) int {
	t.Helper()
	if len(b) == 0 {
		return 0
	}
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no pagemap: %v", err)
	}
	defer pm.Close()
	ps := uintptr(os.Getpagesize())
	first := uintptr(unsafe.Pointer(&b[0])) / ps
	pages := (uintptr(len(b)) + ps - 1) / ps
	buf := make([]byte, 8*pages)
	if _, err := pm.ReadAt(buf, int64(first*8)); err != nil {
		t.Fatalf("read pagemap: %v", err)
	}
	n := 0
	for i := range pages {
		if binary.LittleEndian.Uint64(buf[8*i:])&(1<<63) != 0 {
			n++
		}
	}
	return n
}

// TestFlushHoldsNoAppend: while a Flush waits for the disk on a queue
// file, appends to that queue go on: sync holds none of the file's locks
// through the write-back, which under a checkpoint held every acks=-1
// produce to the partition.
func TestFlushHoldsNoAppend(t *testing.T) {
	s, _, faults, _ := faultyStore(t, t.TempDir(), 1000, 0)
	q := mustQueue(t, s, "t", 0)
	appendRange(t, q, 0, 100)
	inQueue := string(filepath.Separator) + filepath.Join("t", "0") + string(filepath.Separator)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	wait := func(path string) error {
		if strings.Contains(path, inQueue) {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
		}
		return nil
	}
	faults.Set(fileopstest.Msync, wait)
	faults.Set(fileopstest.Fdatasync, wait)
	flushed := make(chan error, 1)
	go func() { flushed <- s.Flush() }()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the Flush did not sync the queue file")
	}
	appended := make(chan error, 1)
	go func() { appended <- q.Append(100, entryAt(100)) }()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an append waited for the Flush's write-back")
	}
	unblock()
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	checkRange(t, q, 0, 101)
}

// TestFlushCountsEntriesFromTheLastFlush: the entries that decide whether
// a file's pages are dropped are those since the last flush on either
// path: after a syncfs flush, a file that took fewer than unmapDirtyMin
// more keeps its pages through the next, per-file, flush.
func TestFlushCountsEntriesFromTheLastFlush(t *testing.T) {
	s := openStore(t, t.TempDir(), 30_000, 0)
	var qs []*Queue
	for p := range int32(syncfsThreshold + 1) {
		q := mustQueue(t, s, "t", p)
		appendRange(t, q, 0, unmapDirtyMin-1)
		qs = append(qs, q)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	appendRange(t, qs[0], unmapDirtyMin-1, unmapDirtyMin+1)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	f := qs[0].snapshot()[0]
	f.mu.RLock()
	n := presentPages(t, f.m)
	f.mu.RUnlock()
	if n == 0 {
		t.Error("a file that took 2 entries since the last flush had its pages dropped")
	}
	checkRange(t, qs[0], 0, unmapDirtyMin+1)
}
