package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/unilog/unilog/internal/poll"
)

// TestAppendAnswersLogStart checks the log start each append answers
// with (a produce response's log_start_offset): [0, 0) before the
// partition is queued, then the queue's first offset, also after
// retention moves it under the kept partition handle.
func TestAppendAnswersLogStart(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.CommitLog.RetentionBytes = 4 * opts.CommitLog.FileSize
	opts.CommitLog.RetentionCheckInterval = 5 * time.Millisecond
	d := mustOpen(t, opts)
	defer d.Close()
	batches := []Batch{{Topic: "r", Partition: 0, Count: 1, Records: make([]byte, 40)}, {Topic: "r", Partition: 1, Count: 1, Records: make([]byte, 40)}}
	out, err := d.Append(nil, batches)
	if err != nil {
		t.Fatal(err)
	}
	for p, a := range out {
		if a.LogStart != 0 {
			t.Errorf("partition %d: first append's log start %d, want 0", p, a.LogStart)
		}
	}
	poll.Until(t, "retention to move both partitions' start", func() error {
		for range 100 {
			if out, err = d.Append(out[:0], batches); err != nil {
				return err
			}
		}
		waitDispatched(t, d)
		for p := range batches {
			if lo, _ := d.Bounds("r", int32(p)); lo == 0 {
				return fmt.Errorf("partition %d starts at 0, log at %d", p, d.log.MinOffset())
			}
		}
		return nil
	})
	// Retention keeps running, so the start may move between the bounds
	// read before the append and the ones read after it.
	var before [2]int64
	for p := range batches {
		before[p], _ = d.Bounds("r", int32(p))
	}
	if out, err = d.Append(out[:0], batches); err != nil {
		t.Fatal(err)
	}
	for p, a := range out {
		after, _ := d.Bounds("r", int32(p))
		if a.LogStart < before[p] || a.LogStart > after || a.LogStart == 0 {
			t.Errorf("partition %d: append's log start %d, queue's first offset %d before and %d after (want between them, above 0)", p, a.LogStart, before[p], after)
		}
	}
}
