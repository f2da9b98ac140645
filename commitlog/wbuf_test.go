package commitlog

import (
	"math"
	"runtime"
	"testing"
)

// A group larger than the buffer the writer keeps is encoded into a buffer
// made once for it: grown record by record, a request of thousands of
// one-record batches was copied again at every doubling, allocating about
// twice the group's bytes in 34 or more buffers.
func TestAppendLargeGroupAllocatesBufferOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fileSize int64
		records  int
		// bounded: the bytes allocated per append stay under a quarter
		// more than the group's own; false where a roll creates files and
		// logs. 10 appends of the largest group (~176 MB, leastAllocated)
		// stay within one 256 MiB file.
		bounded bool
	}{
		{"one file", 256 << 20, 6000, true},       // ~6.2 MB, above maxGroupBytes
		{"unkept buffer", 256 << 20, 17000, true}, // ~17.6 MB, above maxKeptWriteBuf
		{"kept buffer", 256 << 20, 2000, true},    // ~2 MB
		{"across rolls", 4 << 20, 6000, false},    // the end-of-file markers fit
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openLog(t, testOptions(t, "", tc.fileSize))
			defer l.Close()
			ms := make([]Message, tc.records)
			for i := range ms {
				ms[i] = Message{Topic: "t", Partition: int32(i), Body: make([]byte, 1000)}
			}
			dst := make([]Position, 0, len(ms))
			var err error
			var group int64
			allocated := leastAllocated(5, func() {
				from := l.WriteOffset()
				dst, err = l.AppendBatchTo(dst[:0], ms)
				group = l.WriteOffset() - from
			})
			if err != nil {
				t.Fatalf("AppendBatchTo: %v", err)
			}
			if limit := uint64(group + group/4); tc.bounded && allocated > limit {
				t.Errorf("%d bytes allocated per append of %d records (%d bytes), want at most %d", allocated, len(ms), group, limit)
			}
			for i, p := range dst {
				v, err := l.Read(p.PhysOffset)
				if err != nil {
					t.Fatalf("Read record %d at %d: %v", i, p.PhysOffset, err)
				}
				if d := sameMessage(v.Record(), &ms[i]); d != "" {
					t.Fatalf("record %d: %s", i, d)
				}
				v.Release()
			}
		})
	}
}

// leastAllocated is the fewest bytes allocated by the process while f
// ran, over n runs after one unmeasured. The count is the whole process's,
// so the log's own goroutines and the runtime's can only add to f's, and
// the least of a few runs leaves them out. Bytes rather than allocations:
// a garbage collection that a group's buffer sets off adds allocations of
// its own (1 to 11 around the one buffer, under the race detector), few
// bytes beside the buffer's megabytes.
func leastAllocated(n int, f func()) uint64 {
	f()
	var least uint64 = math.MaxUint64
	for range n {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}
