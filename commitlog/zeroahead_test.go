package commitlog

import (
	"testing"
)

// TestZeroAhead: with FlushAsync the writer has zeroed the file up to the
// zeroChunk boundary after its last record, and the log reopens at the
// same end with every record; with FlushSync it writes no zeros ahead.
func TestZeroAhead(t *testing.T) {
	const fileSize = 1 << 20
	for _, tc := range []struct {
		name   string
		mode   FlushMode
		bytes  int64 // appended, at least
		zeroed int64 // want
	}{
		{"one record", FlushAsync, 1, zeroChunk},
		{"past a chunk", FlushAsync, zeroChunk + 1, 2 * zeroChunk},
		{"to the end of the file", FlushAsync, fileSize - zeroChunk/2, fileSize},
		{"sync", FlushSync, zeroChunk + 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t, "", fileSize)
			opts.FlushMode = tc.mode
			l := openLog(t, opts)
			var ms []Message
			for i := 0; l.WriteOffset() < tc.bytes; i++ {
				m := testMessage(i, 1000)
				if _, err := l.Append(&m); err != nil {
					t.Fatal(err)
				}
				ms = append(ms, m)
			}
			end := l.WriteOffset()
			s := l.chain()[0]
			l.wmu.Lock()
			zeroed := s.zeroed
			l.wmu.Unlock()
			if zeroed != tc.zeroed {
				t.Errorf("zeroed to %d after appending to %d, want %d", zeroed, end, tc.zeroed)
			}
			if !isZero(s.ro[end:]) {
				t.Error("the file is not zero after the end of the log")
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openLog(t, opts)
			defer l.Close()
			if got := l.WriteOffset(); got != end {
				t.Fatalf("reopened at %d, want %d", got, end)
			}
			c := l.Cursor(0)
			defer c.Close()
			for i := range ms {
				rec, err := c.Next()
				if err != nil || rec == nil {
					t.Fatalf("record %d: %v, %v", i, rec, err)
				}
				if diff := sameMessage(rec, &ms[i]); diff != "" {
					t.Fatalf("record %d: %s", i, diff)
				}
			}
		})
	}
}

func TestZeroSpan(t *testing.T) {
	const c = zeroChunk
	for _, tc := range []struct {
		name                   string
		zeroed, pos, end, size int64
		from, to               int64
	}{
		{"first write in a chunk", 0, 0, 100, 4 * c, 0, c},
		{"within the zeroed chunk", c, 100, 200, 4 * c, c, c},
		{"into the next chunk", c, c - 50, c + 50, 4 * c, c, 2 * c},
		{"across chunks: the last one only", c, c - 50, 3*c + 50, 8 * c, 3 * c, 4 * c},
		{"to a chunk's end: nothing", c, c - 50, 3 * c, 8 * c, 3 * c, 3 * c},
		{"started in an unzeroed chunk", 0, 100, 200, 4 * c, 100, c},
		{"a file shorter than its last chunk", c, c - 50, c + 50, c + 4096, c, c + 4096},
		{"to the end of the file", c, c - 50, c + 4096, c + 4096, c + 4096, c + 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to := zeroSpan(tc.zeroed, tc.pos, tc.end, tc.size)
			if from != tc.from || to != tc.to {
				t.Errorf("zeroSpan(%d, %d, %d, %d) = [%d, %d), want [%d, %d)", tc.zeroed, tc.pos, tc.end, tc.size, from, to, tc.from, tc.to)
			}
		})
	}
}
