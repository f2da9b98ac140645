package commitlog

import (
	"testing"
)

// A group larger than the buffer the writer keeps is encoded into a buffer
// made once for it: grown record by record, a request of thousands of
// one-record batches was copied again at every doubling.
func TestAppendLargeGroupAllocatesBufferOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fileSize int64
		records  int
		// maxAllocs bounds the allocations per append, the group's
		// buffer among them and the log's other goroutines' (AllocsPerRun
		// counts the process's, so 8 runs keep a stray one from the mean),
		// against the 34 or more of a buffer grown by doubling; -1 for none
		// (a roll creates files and logs). 9 appends of the largest group
		// (~160 MB) stay within one 256 MiB file.
		maxAllocs float64
	}{
		{"one file", 256 << 20, 6000, 8},       // ~6.2 MB, above maxGroupBytes
		{"unkept buffer", 256 << 20, 17000, 8}, // ~17.6 MB, above maxKeptWriteBuf
		{"kept buffer", 256 << 20, 2000, 8},    // ~2 MB
		{"across rolls", 4 << 20, 6000, -1},    // the end-of-file markers fit
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
			allocs := testing.AllocsPerRun(8, func() {
				dst, err = l.AppendBatchTo(dst[:0], ms)
			})
			if err != nil {
				t.Fatalf("AppendBatchTo: %v", err)
			}
			if tc.maxAllocs >= 0 && allocs > tc.maxAllocs {
				t.Errorf("%v allocations per append of %d records, want at most %v", allocs, len(ms), tc.maxAllocs)
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
