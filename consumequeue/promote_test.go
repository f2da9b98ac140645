package consumequeue

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/fileops/fileopstest"
)

// TestPromotionCrash cuts the power while the promoter is halfway through a
// promotion, stopped in the fallocate of a queue file: of the first file,
// or of the second once the first holds its entries, while appends to the
// queue go on into the journal. With or without a Flush at that moment
// (which may make the first file durable but cannot confirm a promotion
// not yet made), the store rebuilt from what was durable has the queue
// back in the journal with every entry flushed, and the half-made
// directory gone; the store that did not crash finishes the promotion.
func TestPromotionCrash(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stall string // the file whose fallocate the promoter stops in
		flush bool
	}{
		{"first file", fileName(0), false},
		{"first file, flushed", fileName(0), true},
		{"second file", fileName(4), false},
		{"second file, flushed", fileName(4), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			faults := fileopstest.NewFaults(fileops.OS{})
			rec := fileopstest.NewRecorder(faults, src)
			opts := Options{Dir: src, EntriesPerFile: 4, SmallEntries: 6, PromoteSpread: -1, Logger: quietLogger(), FS: rec}
			s := mustOpen(t, opts)
			q := mustQueue(t, s, "t", 0)
			reached, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			faults.Set(fileopstest.Fallocate, func(path string) error {
				if filepath.Base(path) == tc.stall {
					once.Do(func() {
						close(reached)
						<-release
					})
				}
				return nil
			})
			appendRange(t, q, 0, 6)
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			appendRange(t, q, 6, 7) // asks for the promotion: 7 entries, two files
			<-reached
			appendRange(t, q, 7, 8) // the appender goes on meanwhile
			flushed := int64(6)
			if tc.flush {
				if err := s.Flush(); err != nil {
					t.Fatal(err)
				}
				flushed = 8
			}
			img := t.TempDir()
			if err := rec.Image(img, true, 3); err != nil {
				t.Fatal(err)
			}
			close(release)

			cut := mustOpen(t, Options{Dir: img, EntriesPerFile: 4, SmallEntries: 6, PromoteSpread: -1, Logger: quietLogger()})
			c := mustQueue(t, cut, "t", 0)
			if !c.small.Load() {
				t.Fatal("the queue came back with files, not from the journal")
			}
			if exists(cut.queueDir(c.id)) {
				t.Fatal("the half-made promotion's directory is still there")
			}
			if c.MaxOffset() < flushed {
				t.Fatalf("max offset %d after the cut, %d were flushed", c.MaxOffset(), flushed)
			}
			checkRange(t, c, 0, c.MaxOffset())

			waitPromotions(t, s)
			if q.small.Load() {
				t.Fatal("the promotion did not finish after the stall")
			}
			checkRange(t, q, 0, 8)
			if got := filesOf(t, s, "t", 0); len(got) != 2 {
				t.Fatalf("files %v after the promotion, want 2", got)
			}
		})
	}
}
