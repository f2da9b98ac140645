package consumequeue

import (
	"os"
	"runtime"
	"syscall"
	"testing"
)

// TestZeroAheadKeepsEntries appends across many zero-ahead chunks while
// the file is unmapped and mapped again, truncated back, and reopened,
// each of which moves where the zeros ahead may start; every entry must
// read back, and every byte past the last one must be zero.
func TestZeroAheadKeepsEntries(t *testing.T) {
	const epf = 40_000 // 1.28 MB files: five zero-ahead chunks each
	chunkEntries := int64(zeroAhead / EntrySize)
	truncated := map[int64]bool{}
	tests := []struct {
		name string
		// step runs after every append of offset off to queue q of s
		// and returns the store to go on with (a reopen replaces it).
		step func(t *testing.T, dir string, s *Store, q *Queue, off int64) (*Store, *Queue)
	}{
		{"appends only", nil},
		{"unmapped every 3,001 entries", func(t *testing.T, _ string, s *Store, q *Queue, off int64) (*Store, *Queue) {
			if off%3001 == 0 {
				for _, f := range q.snapshot() {
					f.mu.Lock()
					if err := f.unmapLocked(true); err != nil {
						t.Fatal(err)
					}
					f.mu.Unlock()
				}
			}
			return s, q
		}},
		{"truncated back at every chunk's middle", func(t *testing.T, _ string, s *Store, q *Queue, off int64) (*Store, *Queue) {
			if off%chunkEntries == chunkEntries/2 && !truncated[off] {
				truncated[off] = true
				if err := q.TruncateFrom(entryAt(off - 100).PhysOffset); err != nil {
					t.Fatal(err)
				}
			}
			return s, q
		}},
		{"reopened every 5,003 entries", func(t *testing.T, dir string, s *Store, q *Queue, off int64) (*Store, *Queue) {
			if off%5003 != 0 {
				return s, q
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, dir, epf, 0)
			return s, mustQueue(t, s, "t", 0)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, epf, 0)
			q := mustQueue(t, s, "t", 0)
			const n = 2*epf + epf/3
			for off := int64(0); off < n; {
				next := q.MaxOffset()
				if err := q.Append(next, entryAt(next)); err != nil {
					t.Fatalf("append %d: %v", next, err)
				}
				off = next + 1
				if tc.step != nil {
					s, q = tc.step(t, dir, s, q, next)
				}
			}
			checkRange(t, q, 0, n)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			path, pos := slotAt(QueueDir(dir, ID{Topic: "t", Partition: 0}), epf, n)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for i := pos; i < int64(len(b)); i++ {
				if b[i] != 0 {
					t.Fatalf("%s: byte %d past the last entry is %#x", path, i, b[i])
				}
			}
		})
	}
}

// TestZeroAheadMapsPages checks that the pages of the chunk ahead of the
// entries are mapped writable before any store reaches them: storing the
// entries that fill the chunk's remaining pages takes (almost) no page
// fault on the storing thread.
func TestZeroAheadMapsPages(t *testing.T) {
	s := openStore(t, t.TempDir(), 40_000, 0)
	storeThroughMapping(s)
	q := mustQueue(t, s, "t", 0)
	const n = 5000 // 160 KB of entries: the file has grown past them
	appendRange(t, q, 0, n)
	f := q.snapshot()[0]
	f.mu.RLock()
	zeroed := f.zeroed
	f.mu.RUnlock()
	page := int64(pageSize)
	from := (HeaderSize + n*EntrySize + page - 1) / page * page
	if zeroed < from+8*page {
		t.Fatalf("zeroed up to %d, want 8 pages past the entries' end at %d", zeroed, from)
	}
	end := (zeroed - HeaderSize) / EntrySize // the last entry ends at zeroed

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := rusage(t, syscall.RUSAGE_THREAD).Minflt
	appendRange(t, q, n, end)
	faults := rusage(t, syscall.RUSAGE_THREAD).Minflt - before
	if pages := (zeroed - from) / page; faults > pages/4 {
		t.Fatalf("%d page faults storing entries into %d pages made ahead", faults, pages)
	}
}
