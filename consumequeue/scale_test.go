package consumequeue

import (
	"os"
	"strings"
	"testing"
)

func countFDs(t *testing.T) int {
	t.Helper()
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(des)
}

// countMaps counts this process's mappings of files under dir.
func countMaps(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps")
	}
	return strings.Count(string(b), dir+"/")
}

// memDir is a temporary directory on tmpfs when there is one: 10,000
// mkdirs and file creations on a shared disk cost tens of seconds of
// journal waits, and what this test checks (descriptors, mappings, reopen)
// does not depend on the disk.
func memDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "consumequeue-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// TestTenThousandPartitions writes 10,000 partitions, a file each (the
// file-creation cost of the machine dominates), and checks that no descriptor is held,
// that mappings stay within MaxMapped, and that every queue reopens with
// the same range.
func TestTenThousandPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 partitions")
	}
	const (
		parts     = 10_000
		epf       = 4
		n         = 4 // one full file per partition
		maxMapped = 12_000
	)
	dir := memDir(t)
	fds := countFDs(t)
	s := openStore(t, dir, epf, maxMapped)
	for p := range parts {
		q := mustQueue(t, s, "t", int32(p))
		appendRange(t, q, int64(p%3), n)
	}
	if got := s.MappedFiles(); got > maxMapped {
		t.Fatalf("%d files mapped, max %d", got, maxMapped)
	}
	if got := countFDs(t); got > fds+5 {
		t.Fatalf("%d descriptors open, %d before", got, fds)
	}
	if got := countMaps(t, dir); got > maxMapped || got != s.MappedFiles() {
		t.Fatalf("%d mappings of queue files, MappedFiles %d, max %d", got, s.MappedFiles(), maxMapped)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, epf, maxMapped)
	if s.MappedFiles() != 0 {
		t.Fatal("open mapped files")
	}
	if ids := s.Queues(); len(ids) != parts {
		t.Fatalf("%d queues listed, want %d", len(ids), parts)
	}
	for p := range parts {
		q, ok := s.Lookup("t", int32(p))
		if !ok {
			t.Fatalf("partition %d missing", p)
		}
		if q.MinOffset() != int64(p%3) || q.MaxOffset() != n {
			t.Fatalf("partition %d: [%d, %d)", p, q.MinOffset(), q.MaxOffset())
		}
		if e, err := q.Get(n - 1); err != nil || e != entryAt(n-1) {
			t.Fatalf("partition %d: get: %+v, %v", p, e, err)
		}
	}
	if got := countFDs(t); got > fds+5 {
		t.Fatalf("%d descriptors open after reopen, %d before", got, fds)
	}
}

// TestRebuildByteIdentical appends the same entries into two stores in
// different orders, one thrashing a tiny LRU and restarting half way, one
// crashing and truncating on the way, and compares every byte.
func TestRebuildByteIdentical(t *testing.T) {
	const epf = 16
	starts := []int64{0, 5, 16, 37}
	ends := []int64{100, 60, 17, 300}

	a := t.TempDir()
	s := openStore(t, a, epf, 0)
	for i, st := range starts {
		appendRange(t, mustQueue(t, s, "x", int32(i)), st, ends[i])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	b := t.TempDir()
	s = openStore(t, b, epf, 2)
	next := append([]int64(nil), starts...)
	step := func(limit func(i int) int64) {
		for progress := true; progress; {
			progress = false
			for i := range starts {
				if next[i] < limit(i) {
					appendRange(t, mustQueue(t, s, "x", int32(i)), next[i], next[i]+1)
					next[i]++
					progress = true
				}
			}
		}
	}
	step(func(i int) int64 { return (starts[i] + ends[i]) / 2 })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, b, epf, 2)
	step(func(i int) int64 { return ends[i] })
	// A "crash" cut and re-dispatch of the tail of every queue.
	cut := entryAt(40).PhysOffset
	if err := s.TruncateFrom(cut); err != nil {
		t.Fatal(err)
	}
	for i := range starts {
		q := mustQueue(t, s, "x", int32(i))
		appendRange(t, q, q.MaxOffset(), ends[i])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sameTree(t, readTree(t, b), readTree(t, a))
}
