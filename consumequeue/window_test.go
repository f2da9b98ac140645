package consumequeue

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// windowJournal is a journal whose records cross a small window's edges
// at every alignment: declarations with topics of every length up to the
// longest, entries, truncations and removals.
func windowJournal() []byte {
	j := make([]byte, JournalHeaderSize)
	qid := uint32(0)
	for n := 1; n <= maxTopic; n += 7 {
		qid++
		id := ID{Topic: strings.Repeat("t", n), Partition: int32(n)}
		j = appendDeclare(j, qid, id, int64(n))
		for off := int64(n); off < int64(n)+int64(n%5); off++ {
			j = appendEntry(j, qid, off, entryAt(off))
		}
		switch n % 3 {
		case 1:
			j = appendOffset(j, recTruncate, qid, int64(n))
		case 2:
			j = appendQID(j, recRemoved, qid)
		}
	}
	encodeJournalHeader(j, 1, int64(len(j)))
	return j
}

func replayThrough(b []byte, window int) (*replayed, error) {
	buf := make([]byte, window)
	declares, err := countDeclares(newWindow(bytes.NewReader(b), int64(len(b)), buf))
	if err != nil {
		return nil, err
	}
	return replay(newWindow(bytes.NewReader(b), int64(len(b)), buf), declares)
}

// TestReplayThroughSmallWindows: a replay through windows barely larger
// than a record finds what a replay of the whole file in one window
// finds, whole or cut in the middle of a record.
func TestReplayThroughSmallWindows(t *testing.T) {
	whole := windowJournal()
	for _, cut := range []int{len(whole), len(whole) - 3} {
		j := whole[:cut]
		want, err := replayThrough(j, len(j))
		if err != nil {
			t.Fatal(err)
		}
		if (cut < len(whole)) != (want.stopped != nil) {
			t.Fatalf("cut at %d of %d: stopped %v", cut, len(whole), want.stopped)
		}
		need := recordHeaderSize + maxRecordBody
		for _, size := range []int{need, need + 1, need + 7, 1000, 4096} {
			t.Run(fmt.Sprintf("cut=%d/window=%d", cut, size), func(t *testing.T) {
				got, err := replayThrough(j, size)
				if err != nil {
					t.Fatal(err)
				}
				if got.end != want.end || got.live != want.live || got.maxQID != want.maxQID || (got.stopped == nil) != (want.stopped == nil) {
					t.Fatalf("end %d, live %d, max qid %d, stopped %v; want %d, %d, %d, %v",
						got.end, got.live, got.maxQID, got.stopped, want.end, want.live, want.maxQID, want.stopped)
				}
				if len(got.queues) != len(want.queues) {
					t.Fatalf("%d queues, want %d", len(got.queues), len(want.queues))
				}
				for qid, w := range want.queues {
					g := got.queues[qid]
					if g == nil || g.q.id != w.q.id || g.start != w.start || !slices.Equal(g.ents, w.ents) {
						t.Fatalf("queue %d: %+v, want %+v", qid, g, w)
					}
				}
			})
		}
	}
}

// failingReader fails every read that reaches past at.
type failingReader struct {
	b  []byte
	at int64
}

var errDisk = errors.New("disk gone")

func (f failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.at {
		return 0, errDisk
	}
	return copy(p, f.b[off:]), nil
}

// TestReplayReadError: a journal that cannot be read to its end fails the
// replay with the read's error. Its records past the failure are not a
// torn tail to cut.
func TestReplayReadError(t *testing.T) {
	j := twoEntryJournal("t", 20_000)
	if len(j) < 2*windowSize {
		t.Fatalf("journal of %d bytes: too short to fail after its first window", len(j))
	}
	_, err := replayJournal(failingReader{b: j, at: windowSize + 100}, int64(len(j)), 1)
	if !errors.Is(err, errDisk) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("replay of an unreadable journal: %v, want the read's error", err)
	}
}
