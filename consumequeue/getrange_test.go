package consumequeue

import (
	"testing"
)

// TestGetRange: GetRange returns what Get returns for each offset of the
// range, up to the end of the file holding from (a promoted queue) or the
// queue's end, and nothing for a range outside the queue.
func TestGetRange(t *testing.T) {
	type span struct{ from, to, end int64 } // end: the offset after the last entry returned
	for _, tc := range []struct {
		name  string
		small int // SmallEntries: negative gives a queue files at once
		runs  []span
	}{
		{"small", 64, []span{{0, 20, 20}, {5, 7, 7}, {8, 100, 20}, {-1, 5, -1}, {20, 30, 20}, {6, 6, 6}}},
		{"files", -1, []span{{0, 20, 8}, {5, 7, 7}, {8, 100, 16}, {17, 100, 20}, {-1, 5, -1}, {20, 30, 20}, {6, 6, 6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t, Options{Dir: t.TempDir(), EntriesPerFile: 8, SmallEntries: tc.small, PromoteSpread: -1, Logger: quietLogger()})
			q := mustQueue(t, s, "t", 0)
			appendRange(t, q, 0, 20)
			if tc.small < 0 {
				waitPromotions(t, s)
			}
			if q.small.Load() != (tc.small > 0) {
				t.Fatalf("queue small: %v", q.small.Load())
			}
			for _, r := range tc.runs {
				got := q.GetRange(nil, r.from, r.to)
				if want := max(r.end-r.from, 0); int64(len(got)) != want {
					t.Fatalf("GetRange(%d, %d): %d entries, want %d", r.from, r.to, len(got), want)
				}
				for i, e := range got {
					if want, err := q.Get(r.from + int64(i)); err != nil || e != want {
						t.Fatalf("GetRange(%d, %d)[%d] = %+v, Get: %+v, %v", r.from, r.to, i, e, want, err)
					}
				}
			}
		})
	}
}
