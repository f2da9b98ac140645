package commitlog

import (
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/unilog/unilog/internal/fileops/fileopstest"
)

// queueAppends starts one AppendBatchTo per batch while the test holds the
// writer lock, and returns once every call has queued its batch: the next
// writer finds them all queued, as appends arriving during a pwrite do.
func queueAppends(t *testing.T, l *Log, batches [][]Message) (pos [][]Position, errs []error, wait func()) {
	t.Helper()
	pos, errs = make([][]Position, len(batches)), make([]error, len(batches))
	var wg sync.WaitGroup
	for i := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pos[i], errs[i] = l.AppendBatch(batches[i])
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		l.qmu.Lock()
		n := len(l.queue)
		l.qmu.Unlock()
		if n == len(batches) {
			return pos, errs, wg.Wait
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d appends queued", n, len(batches))
		}
		time.Sleep(time.Millisecond)
	}
}

// TestAppendGroup: batches queued while a write holds the writer are
// written by one write, each batch contiguous in the log and in its
// partitions' offsets, every record as appended, and all of it recovered
// after a restart.
func TestAppendGroup(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fileSize int64
		sizes    []int // messages per batch
		body     int
	}{
		{"one file", 1 << 20, []int{1, 3, 1, 5, 2, 1, 1, 4}, 100},
		{"across files", 16 << 10, []int{2, 7, 1, 9, 3, 6}, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t, "", tc.fileSize)
			l := openLog(t, opts)
			defer l.Close()
			var batches [][]Message
			k := 0
			for _, n := range tc.sizes {
				var b []Message
				for range n {
					b = append(b, testMessage(k, tc.body))
					k++
				}
				batches = append(batches, b)
			}
			writes := l.Stats().Writes
			l.wmu.Lock()
			pos, errs, wait := queueAppends(t, l, batches)
			l.wmu.Unlock()
			wait()
			if got := l.Stats().Writes - writes; got != 1 {
				t.Errorf("%d writes for %d queued batches, want 1", got, len(batches))
			}
			type span struct{ first, last Position }
			var spans []span
			var all []Position
			var msgs []Message
			for i := range batches {
				if errs[i] != nil || len(pos[i]) != len(batches[i]) {
					t.Fatalf("batch %d: %d positions, %v", i, len(pos[i]), errs[i])
				}
				for j := 1; j < len(pos[i]); j++ {
					if pos[i][j].PhysOffset < pos[i][j-1].End() {
						t.Fatalf("batch %d: record %d at %d before the end %d of the one before", i, j, pos[i][j].PhysOffset, pos[i][j-1].End())
					}
				}
				spans = append(spans, span{pos[i][0], pos[i][len(pos[i])-1]})
				all = append(all, pos[i]...)
				msgs = append(msgs, batches[i]...)
			}
			sort.Slice(spans, func(a, b int) bool { return spans[a].first.PhysOffset < spans[b].first.PhysOffset })
			for i := 1; i < len(spans); i++ {
				if spans[i].first.PhysOffset < spans[i-1].last.End() {
					t.Fatalf("batches interleave: one starts at %d before another ends at %d", spans[i].first.PhysOffset, spans[i-1].last.End())
				}
			}
			checkOffsets(t, all, msgs)
			checkReadable(t, l, all, msgs)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2 := openLog(t, opts)
			defer l2.Close()
			checkReadable(t, l2, all, msgs)
		})
	}
}

// checkOffsets checks that the queue offsets of each partition are 0, 1,
// ... in the order of the log, each once.
func checkOffsets(t *testing.T, pos []Position, msgs []Message) {
	t.Helper()
	idx := make([]int, len(pos))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return pos[idx[a]].PhysOffset < pos[idx[b]].PhysOffset })
	next := map[queueKey]int64{}
	for _, i := range idx {
		k := queueKey{msgs[i].Topic, msgs[i].TopicID, msgs[i].Partition}
		if pos[i].QueueOffset != next[k] {
			t.Fatalf("%s/%d: offset %d at %d, want %d", k.topic, k.partition, pos[i].QueueOffset, pos[i].PhysOffset, next[k])
		}
		next[k]++
	}
}

// TestAppendGroupFailsAlone: when the group's write finds the disk full,
// each batch is written alone, so the batch that does not fit fails with
// ErrDiskFull and the others are stored, as they were before appends were
// coalesced. The file size limit is set in a child process: below go
// test's own log of opened files, it failed the package (InChild).
func TestAppendGroupFailsAlone(t *testing.T) {
	if !fileopstest.InChild(t) {
		return
	}
	const fileSize = 64 << 10
	opts := testOptions(t, "", fileSize)
	l := openLog(t, opts)
	defer l.Close()
	fileopstest.LimitFileSize(t, 8<<10)

	small := []Message{testMessage(0, 100)}
	big := []Message{testMessage(1, 10<<10)}
	alsoSmall := []Message{testMessage(2, 100)}
	l.wmu.Lock()
	pos, errs, wait := queueAppends(t, l, [][]Message{small, big, alsoSmall})
	l.wmu.Unlock()
	wait()
	var stored []Position
	var msgs []Message
	for i, b := range [][]Message{small, big, alsoSmall} {
		// The goroutines queued in any order: tell the batches by size.
		switch {
		case len(b[0].Body) > 1000 && !errors.Is(errs[i], ErrDiskFull):
			t.Fatalf("the batch past the file size limit: %v, want ErrDiskFull", errs[i])
		case len(b[0].Body) > 1000 && len(pos[i]) != 0:
			t.Fatalf("the failed batch has positions %+v", pos[i])
		case len(b[0].Body) <= 1000 && errs[i] != nil:
			t.Fatalf("a small batch failed with the big one: %v", errs[i])
		case len(b[0].Body) <= 1000:
			stored = append(stored, pos[i]...)
			msgs = append(msgs, b...)
		}
	}
	if l.Stats().FlushFailed {
		t.Fatal("a full disk stopped the log")
	}
	checkOffsets(t, stored, msgs)
	checkReadable(t, l, stored, msgs)
}
