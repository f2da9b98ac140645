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
	poll.Until(t, "retention to move partition 0's start", func() error {
		for range 100 {
			if out, err = d.Append(out[:0], batches); err != nil {
				return err
			}
		}
		waitDispatched(t, d)
		if lo, _ := d.Bounds("r", 0); lo == 0 {
			return fmt.Errorf("partition 0 starts at 0, log at %d", d.log.MinOffset())
		}
		return nil
	})
	if out, err = d.Append(out[:0], batches); err != nil {
		t.Fatal(err)
	}
	for p, a := range out {
		lo, _ := d.Bounds("r", int32(p))
		if a.LogStart != lo || lo == 0 {
			t.Errorf("partition %d: append's log start %d, queue's first offset %d (want equal, above 0)", p, a.LogStart, lo)
		}
	}
}
