package consumequeue

import (
	"errors"
	"fmt"
	"testing"
)

// TestReset: a queue reset to any offset (forward or back, on a file
// boundary or not, with entries or none) is empty there, stays so across
// a reopen, and takes its next entry there or, being empty, later.
func TestReset(t *testing.T) {
	const epf = 16
	for _, tc := range []struct {
		name      string
		from, to  int64 // entries before the reset
		next      int64
		appendAt  int64
		wantFiles int
	}{
		{"fresh queue, mid-file", 0, 0, 21, 21, 1},
		{"fresh queue, file boundary", 0, 0, 32, 32, 1},
		{"forward past its entries", 0, 40, 70, 70, 1},
		{"back below its entries", 30, 50, 3, 3, 1},
		{"empty queue starts later still", 0, 5, 9, 12, 1},
		{"to zero", 0, 40, 0, 0, 1},
	} {
		// Small: the queue lives in the journal until the reset promotes it.
		for _, small := range []int{-1, 64} {
			t.Run(fmt.Sprintf("%s/small=%d", tc.name, small), func(t *testing.T) {
				dir := t.TempDir()
				open := func() *Store {
					s, err := Open(Options{Dir: dir, EntriesPerFile: epf, SmallEntries: small, Logger: quietLogger()})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = s.Close() })
					return s
				}
				s := open()
				q := mustQueue(t, s, "t", 0)
				if tc.to > tc.from {
					if err := q.Append(tc.from, entryAt(tc.from)); err != nil {
						t.Fatal(err)
					}
					appendRange(t, q, tc.from+1, tc.to)
				}
				if err := q.Reset(tc.next); err != nil {
					t.Fatalf("Reset(%d): %v", tc.next, err)
				}
				checkRange(t, q, tc.next, tc.next)
				if _, err := q.Get(tc.next); !errors.Is(err, ErrOutOfRange) {
					t.Fatalf("Get(%d) of an empty queue: %v", tc.next, err)
				}
				if n := len(q.snapshot()); n != tc.wantFiles {
					t.Fatalf("%d files after the reset, want %d", n, tc.wantFiles)
				}
				if err := s.Flush(); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s = open()
				q = mustQueue(t, s, "t", 0)
				checkRange(t, q, tc.next, tc.next)
				if tc.next > 0 {
					if err := q.Append(tc.next-1, entryAt(tc.next-1)); !errors.Is(err, ErrOffsetGap) {
						t.Fatalf("Append below the reset offset: %v", err)
					}
				}
				if err := q.Append(tc.appendAt, entryAt(tc.appendAt)); err != nil {
					t.Fatalf("Append(%d) after Reset(%d): %v", tc.appendAt, tc.next, err)
				}
				appendRange(t, q, tc.appendAt+1, tc.appendAt+epf)
				checkRange(t, q, tc.appendAt, tc.appendAt+epf)
			})
		}
	}
}

func TestResetRefuses(t *testing.T) {
	s := openStore(t, t.TempDir(), 16, 0)
	q := mustQueue(t, s, "t", 0)
	appendRange(t, q, 0, 5)
	if err := q.Reset(-1); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Reset(-1): %v", err)
	}
	checkRange(t, q, 0, 5)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := q.Reset(3); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reset of a closed queue: %v", err)
	}
}
