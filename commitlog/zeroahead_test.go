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
