package consumequeue

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/fileops/fileopstest"
	"github.com/unilog/unilog/internal/poll"
)

// TestRoomAheadOfTheAppender stalls every fallocate once the room maker
// has grown a queue's file ahead of its entries: appends into the room
// made must still return, since they need no file-system call of their
// own (the one asking for the next room stalls on the room maker's
// goroutine, not theirs). Before room.go, the append that reached the end
// of the first 4 KiB grew the file itself and waited for the fallocate.
func TestRoomAheadOfTheAppender(t *testing.T) {
	faults := fileopstest.NewFaults(fileops.OS{})
	s := mustOpen(t, Options{Dir: t.TempDir(), EntriesPerFile: 1000, SmallEntries: -1, Logger: quietLogger(), FS: faults})
	q := mustQueue(t, s, "t", 0)
	appendRange(t, q, 0, 100) // past the middle of the first file's 4 KiB (127 slots)
	waitRoom(t, q)
	f := q.snapshot()[0]
	if size := fileSize(t, f.path); size != 8192 {
		t.Fatalf("after 100 entries %s is %d bytes, want the room made ahead: 8192", f.path, size)
	}

	stall := make(chan struct{})
	faults.Set(fileopstest.Fallocate, func(string) error {
		<-stall
		return nil
	})
	const last = (8192-HeaderSize)/EntrySize - 1 // the last slot of 8 KiB
	done := make(chan error, 1)
	go func() {
		for off := int64(100); off <= last; off++ {
			if err := q.Append(off, entryAt(off)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		close(stall)
		t.Fatalf("appends up to slot %d did not return with fallocate stalled: the appender grew the file itself", last)
	}
	close(stall)
	checkRange(t, q, 0, last+1)
}

// TestRoomMakerAndCut cuts a queue's file shorter (TruncateFrom) while the
// room maker is allocating the file's next size: the cut waits for the
// allocation, and the room maker, finding the file cut since it read its
// size, leaves it at the cut size instead of extending the view over
// bytes the cut removed. Appends after the cut grow the file again as
// usual.
func TestRoomMakerAndCut(t *testing.T) {
	faults := fileopstest.NewFaults(fileops.OS{})
	s := mustOpen(t, Options{Dir: t.TempDir(), EntriesPerFile: 1000, SmallEntries: -1, Logger: quietLogger(), FS: faults})
	q := mustQueue(t, s, "t", 0)
	appendRange(t, q, 0, 300) // 16 KiB, not yet asking for more
	waitRoom(t, q)
	f := q.snapshot()[0]

	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	faults.Set(fileopstest.Fallocate, func(string) error {
		once.Do(func() {
			close(reached)
			<-release
		})
		return nil
	})
	appendRange(t, q, 300, 400) // past 12 KiB: the room maker allocates 32 KiB and stalls
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("no allocation ahead of 400 entries in a 16 KiB file: nothing made room")
	}
	cut := make(chan error, 1)
	go func() { cut <- q.TruncateFrom(entryAt(10).PhysOffset) }()
	// The cut holds the file's lock before the allocation ends, so the
	// room maker takes it back only after the cut.
	poll.True(t, "the cut holding the file's lock", func() bool {
		if f.mu.TryLock() {
			f.mu.Unlock()
			return false
		}
		return true
	})
	close(release)
	if err := <-cut; err != nil {
		t.Fatal(err)
	}
	waitRoom(t, q)
	if size := fileSize(t, f.path); size != 4096 {
		t.Fatalf("after the cut to 10 entries %s is %d bytes, want 4096", f.path, size)
	}
	f.mu.RLock()
	view := len(f.m)
	f.mu.RUnlock()
	if view != 4096 {
		t.Fatalf("view %d bytes after the cut, want 4096", view)
	}
	checkRange(t, q, 0, 10)
	appendRange(t, q, 10, 600)
	checkRange(t, q, 0, 600)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
