package consumequeue

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestGetAcrossFileBoundaries(t *testing.T) {
	s := openStore(t, t.TempDir(), 4, 0)
	q := mustQueue(t, s, "orders", 3)
	appendRange(t, q, 0, 21)
	checkRange(t, q, 0, 21)
	want := []string{fileName(0), fileName(4), fileName(8), fileName(12), fileName(16), fileName(20)}
	if got := filesOf(t, s, "orders", 3); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	for _, off := range []int64{-1, 21, 100} {
		if _, err := q.Get(off); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("get %d: %v, want ErrOutOfRange", off, err)
		}
	}
}

func TestAppendRules(t *testing.T) {
	s := openStore(t, t.TempDir(), 8, 0)
	q := mustQueue(t, s, "t", 0)
	tests := []struct {
		name string
		off  int64
		e    Entry
		want error
	}{
		{"empty queue starts anywhere", 13, entryAt(13), nil},
		{"next offset", 14, entryAt(14), nil},
		{"gap", 16, entryAt(16), ErrOffsetGap},
		{"rewrite", 14, entryAt(14), ErrOffsetGap},
		{"backwards", 2, entryAt(2), ErrOffsetGap},
		{"zero size", 15, Entry{PhysOffset: 5}, ErrInvalidEntry},
		{"negative phys", 15, Entry{PhysOffset: -1, Size: 1}, ErrInvalidEntry},
		{"after errors", 15, entryAt(15), nil},
	}
	for _, tt := range tests {
		err := q.Append(tt.off, tt.e)
		if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("%s: append %d: %v, want %v", tt.name, tt.off, err, tt.want)
		}
	}
	checkRange(t, q, 13, 16)
	if _, err := q.Get(12); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("get below min: %v", err)
	}
	for _, name := range []string{"", ".", "..", "a/b", "nul\x00"} {
		if _, err := s.Queue(name, 0); !errors.Is(err, ErrInvalidName) {
			t.Errorf("queue %q: %v, want ErrInvalidName", name, err)
		}
	}
	if _, err := s.Queue("t", -1); !errors.Is(err, ErrInvalidName) {
		t.Errorf("negative partition: %v", err)
	}
}

func TestMinMaxAfterReopen(t *testing.T) {
	const epf = 8
	tests := []struct {
		name     string
		build    func(t *testing.T, q *Queue)
		min, max int64
	}{
		{"no entries", func(t *testing.T, q *Queue) {}, 0, 0},
		{"one entry", func(t *testing.T, q *Queue) { appendRange(t, q, 0, 1) }, 0, 1},
		{"partial file", func(t *testing.T, q *Queue) { appendRange(t, q, 0, 5) }, 0, 5},
		{"full file", func(t *testing.T, q *Queue) { appendRange(t, q, 0, 8) }, 0, 8},
		{"one into second file", func(t *testing.T, q *Queue) { appendRange(t, q, 0, 9) }, 0, 9},
		{"many files", func(t *testing.T, q *Queue) { appendRange(t, q, 0, 43) }, 0, 43},
		{"started mid file", func(t *testing.T, q *Queue) { appendRange(t, q, 5, 7) }, 5, 7},
		{"started mid file, crossed", func(t *testing.T, q *Queue) { appendRange(t, q, 5, 30) }, 5, 30},
		{"started at file boundary", func(t *testing.T, q *Queue) { appendRange(t, q, 16, 20) }, 16, 20},
		{"head deleted", func(t *testing.T, q *Queue) {
			appendRange(t, q, 0, 30)
			if err := q.deleteBefore(entryAt(11).PhysOffset); err != nil {
				t.Fatal(err)
			}
		}, 11, 30},
		{"everything deleted", func(t *testing.T, q *Queue) {
			appendRange(t, q, 0, 30)
			if err := q.deleteBefore(1 << 40); err != nil {
				t.Fatal(err)
			}
		}, 30, 30},
		{"everything deleted at boundary", func(t *testing.T, q *Queue) {
			appendRange(t, q, 0, 32)
			if err := q.deleteBefore(1 << 40); err != nil {
				t.Fatal(err)
			}
		}, 32, 32},
		{"truncated to empty", func(t *testing.T, q *Queue) {
			appendRange(t, q, 3, 30)
			if err := q.TruncateFrom(0); err != nil {
				t.Fatal(err)
			}
		}, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, epf, 0)
			q := mustQueue(t, s, "t", 1)
			tt.build(t, q)
			checkRange(t, q, tt.min, tt.max)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, dir, epf, 0)
			q, ok := s.Lookup("t", 1)
			if !ok {
				t.Fatal("lookup after reopen failed")
			}
			checkRange(t, q, tt.min, tt.max)
			// The queue continues where it was.
			appendRange(t, q, tt.max, tt.max+10)
			checkRange(t, q, tt.min, tt.max+10)
		})
	}
}

func TestOffsetForTime(t *testing.T) {
	s := openStore(t, t.TempDir(), 4, 0)
	q := mustQueue(t, s, "t", 0)
	// Offsets 10..39: timestamps 1003 (10, 11), 1004 (12, 13, 14), ... 1013 (39).
	appendRange(t, q, 10, 40)
	tests := []struct {
		name string
		ts   int64
		want int64
	}{
		{"before first", 0, 10},
		{"equal to first", 1003, 10},
		{"first of equal run", 1004, 12},
		{"middle of file", 1008, 24},
		{"between files", 1005, 15},
		{"equal to last", 1013, 39},
		{"after last", 1014, 40},
		{"far after last", 1 << 62, 40},
	}
	for _, tt := range tests {
		if got := q.OffsetForTime(tt.ts); got != tt.want {
			t.Errorf("%s: OffsetForTime(%d) = %d, want %d", tt.name, tt.ts, got, tt.want)
		}
	}
	empty := mustQueue(t, s, "t", 1)
	if got := empty.OffsetForTime(5); got != 0 {
		t.Errorf("empty queue: %d", got)
	}
	if err := q.deleteBefore(entryAt(21).PhysOffset); err != nil {
		t.Fatal(err)
	}
	if got := q.OffsetForTime(0); got != 21 {
		t.Errorf("after DeleteBefore: before first = %d, want 21", got)
	}
}

func TestDeleteTopic(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, 4, 0)
	for p := int32(0); p < 3; p++ {
		appendRange(t, mustQueue(t, s, "gone", p), 0, 10)
	}
	kept := mustQueue(t, s, "kept", 0)
	appendRange(t, kept, 0, 10)
	old, _ := s.Lookup("gone", 1)
	if err := s.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("topic directory still there: %v", err)
	}
	if _, ok := s.Lookup("gone", 1); ok {
		t.Fatal("deleted queue still found")
	}
	if _, err := old.Get(3); !errors.Is(err, ErrClosed) {
		t.Fatalf("get on deleted queue: %v", err)
	}
	if err := old.Append(10, entryAt(10)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append on deleted queue: %v", err)
	}
	if got := s.Queues(); !slices.Equal(got, []ID{{"kept", 0}}) {
		t.Fatalf("queues %v", got)
	}
	checkRange(t, kept, 0, 10)
	fresh := mustQueue(t, s, "gone", 1)
	checkRange(t, fresh, 0, 0)
	if err := s.DeleteTopic("../x"); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("bad name: %v", err)
	}
}

func TestQueuesFromDisk(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, 4, 0)
	for _, id := range []ID{{"b", 10}, {"a", 2}, {"b", 9}, {"a", 0}} {
		mustQueue(t, s, id.Topic, id.Partition)
	}
	// Not queues: a stray file, a non-numeric and a non-canonical partition.
	for _, p := range []string{"a/notes.txt", "a/x", "a/007"} {
		if filepath.Ext(p) == ".txt" {
			if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Mkdir(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, 4, 0)
	want := []ID{{"a", 0}, {"a", 2}, {"b", 9}, {"b", 10}}
	if got := s.Queues(); !slices.Equal(got, want) {
		t.Fatalf("queues %v, want %v", got, want)
	}
	if s.MappedFiles() != 0 {
		t.Fatalf("listing mapped %d files", s.MappedFiles())
	}
	if _, ok := s.Lookup("c", 0); ok {
		t.Fatal("lookup invented a queue")
	}
	if _, err := os.Stat(filepath.Join(dir, "c")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("lookup created a directory")
	}
}

func TestClosedStore(t *testing.T) {
	s := openStore(t, t.TempDir(), 4, 0)
	q := mustQueue(t, s, "t", 0)
	appendRange(t, q, 0, 5)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.MappedFiles() != 0 {
		t.Fatalf("%d files mapped after close", s.MappedFiles())
	}
	if _, err := q.Get(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("get: %v", err)
	}
	if _, err := s.Queue("t", 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("queue: %v", err)
	}
	if _, ok := s.Lookup("t", 0); ok {
		t.Fatal("lookup on closed store")
	}
}

func TestFlush(t *testing.T) {
	s := openStore(t, t.TempDir(), 4, 2)
	for p := int32(0); p < 5; p++ {
		appendRange(t, mustQueue(t, s, "t", p), 0, 9)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if d := s.lru.takeDirty(); len(d) != 0 {
		t.Fatalf("%d files still on the dirty list", len(d))
	}
	for p := int32(0); p < 5; p++ {
		q, _ := s.Lookup("t", p)
		for _, f := range q.snapshot() {
			if f.dirty.Load() {
				t.Fatalf("%s dirty after Flush", f.path)
			}
		}
	}
}

// TestGrowthKeepsPagesMapped appends until a file's mapping has grown
// twice and checks that every page holding entries is still in the
// process's page tables (/proc/self/pagemap): growth extends the mapping
// with mremap, which carries the pages along, where an unmap and a new
// mapping would leave the pages written before the last growth to fault
// in again. Every entry reads back.
func TestGrowthKeepsPagesMapped(t *testing.T) {
	s := openStore(t, t.TempDir(), 40_000, 0)
	storeThroughMapping(s)
	q := mustQueue(t, s, "t", 0)
	const n = 5000 // 160 KB: the mapping grows past minMapLen twice
	appendRange(t, q, 0, n)
	f := q.snapshot()[0]
	pages := (HeaderSize + n*EntrySize + pageSize - 1) / pageSize
	f.mu.RLock()
	size, mapped := len(f.m), len(f.mapped)
	present := presentPages(t, f.m[:HeaderSize+n*EntrySize])
	f.mu.RUnlock()
	// The room made ahead of the entries (room.go) may have grown it once more.
	if want := int(sizeFor(n-1, f.epf)); size != want && size != 2*want || mapped != size {
		t.Fatalf("file view %d bytes, mapping %d, after %d entries, want both %d or %d", size, mapped, n, want, 2*want)
	}
	if present != pages {
		t.Fatalf("%d of the %d pages of entries still mapped after growth, want all", present, pages)
	}
	checkRange(t, q, 0, n)
}

// TestGrowthAfterRemap: with one file mapped at a time, two queues take
// turns, so each file is unmapped by the other's use, mapped again at its
// length (64 KiB at least) and then grown past that mapping with mremap.
// Every entry of both reads back, after the turns and after a reopen.
func TestGrowthAfterRemap(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, 40_000, 1)
	qs := []*Queue{mustQueue(t, s, "t", 0), mustQueue(t, s, "t", 1)}
	const n, turn = 6000, 700 // 192 KB a file: its mapping grows past 64 KiB twice
	for from := int64(0); from < n; from += turn {
		for _, q := range qs {
			appendRange(t, q, from, min(from+turn, n))
		}
	}
	for _, q := range qs {
		checkRange(t, q, 0, n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, 40_000, 1)
	for p := range int32(2) {
		checkRange(t, mustQueue(t, s, "t", p), 0, n)
	}
}

// TestMappingsSharePageTables creates 256 files (9.6 MB at full size) and
// checks that the process's page tables (VmPTE) grew by far less than the
// 4 KiB per file that mapping each at its full size costs: each file is
// mapped at its length, so neighbouring mappings share a page table.
func TestMappingsSharePageTables(t *testing.T) {
	s := openStore(t, t.TempDir(), DefaultEntriesPerFile, 0)
	const n = 256
	qs := make([]*Queue, n)
	for p := range qs {
		qs[p] = mustQueue(t, s, "t", int32(p))
	}
	before := vmPTE(t)
	for _, q := range qs {
		appendRange(t, q, 0, 1)
	}
	grown := vmPTE(t) - before
	t.Logf("page tables grew by %d bytes for %d new files", grown, n)
	if limit := int64(n * 4096 / 4); grown > limit {
		t.Fatalf("page tables grew by %d bytes for %d new files, want at most %d", grown, n, limit)
	}
}

// vmPTE is this process's page-table memory in bytes.
func vmPTE(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmPTE:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(v, "%d kB", &kb); err != nil {
				t.Fatalf("VmPTE:%q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmPTE in /proc/self/status")
	return 0
}
