package consumequeue

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/internal/poll"
)

func quietLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func openStore(t testing.TB, dir string, epf, maxMapped int) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir, EntriesPerFile: epf, MaxMapped: maxMapped, SmallEntries: -1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// entryAt is the entry the tests store at offset off: PhysOffset grows with
// the offset (as it does in the log) and timestamps repeat in threes.
func entryAt(off int64) Entry {
	return Entry{PhysOffset: off*100 + 7, Size: int32(off%50 + 1), Timestamp: 1000 + off/3}
}

func appendRange(t testing.TB, q *Queue, from, to int64) {
	t.Helper()
	for off := from; off < to; off++ {
		if err := q.Append(off, entryAt(off)); err != nil {
			t.Fatalf("append %d: %v", off, err)
		}
	}
}

func mustQueue(t testing.TB, s *Store, topic string, p int32) *Queue {
	t.Helper()
	q, err := s.Queue(topic, p)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// checkRange asserts [min, max) and that every entry in it is entryAt.
func checkRange(t testing.TB, q *Queue, min, max int64) {
	t.Helper()
	if q.MinOffset() != min || q.MaxOffset() != max {
		t.Fatalf("range [%d, %d), want [%d, %d)", q.MinOffset(), q.MaxOffset(), min, max)
	}
	for off := min; off < max; off++ {
		e, err := q.Get(off)
		if err != nil {
			t.Fatalf("get %d: %v", off, err)
		}
		if e != entryAt(off) {
			t.Fatalf("get %d = %+v, want %+v", off, e, entryAt(off))
		}
	}
}

// readTree returns every regular file under dir by relative path.
func readTree(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree compares two trees of files by their bytes up to the last
// non-zero one: the room made ahead of the appender (room.go) may leave a
// file one growth step longer, at a time no test controls, and the bytes
// past a file's last entry are zeros either way.
func sameTree(t testing.TB, got, want map[string][]byte) {
	t.Helper()
	var names []string
	for n := range want {
		names = append(names, n)
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		g, gok := got[n]
		w, wok := want[n]
		switch {
		case !gok:
			t.Errorf("%s missing", n)
		case !wok:
			t.Errorf("%s unexpected (%d bytes)", n, len(g))
		case !bytes.Equal(bytes.TrimRight(g, "\x00"), bytes.TrimRight(w, "\x00")):
			t.Errorf("%s differs: %d bytes, want %d", n, len(g), len(w))
		}
	}
}

// filesOf lists the entry files of a queue directory.
func filesOf(t testing.TB, s *Store, topic string, p int32) []string {
	t.Helper()
	des, err := os.ReadDir(s.queueDir(ID{Topic: topic, Partition: p}))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// waitPromotions waits until the promoter has no promotion queued or under
// way, so that a test sees the promotions its appends asked for.
func waitPromotions(t testing.TB, s *Store) {
	t.Helper()
	poll.True(t, "the promoter idle", func() bool {
		p := s.promoter
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.waiting) == 0 && !p.busy
	})
}

// waitRoom waits until no file of q is waiting for room to be made ahead
// of it (room.go), so that a test changing its files behind the store's
// back is not raced by the room maker.
func waitRoom(t testing.TB, q *Queue) {
	t.Helper()
	poll.True(t, "the room maker done with the queue", func() bool {
		for _, f := range q.snapshot() {
			if f.ahead.Load() {
				return false
			}
		}
		return true
	})
}

// replayBytes replays a journal file's bytes, as Open replays the file.
func replayBytes(b []byte, seq uint64) (*replayed, error) {
	return replayJournal(bytes.NewReader(b), int64(len(b)), seq)
}

// storeThroughMapping spends s's tails (tail.go), so that its files store
// every entry through their mappings: for the tests of those stores.
func storeThroughMapping(s *Store) {
	s.tails.mu.Lock()
	s.tails.n = maxTails
	s.tails.mu.Unlock()
}

// everyFileCold makes every append of s find its file cold (tail.go).
func everyFileCold(s *Store) { s.tails.cold = 0 }
