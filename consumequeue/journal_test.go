package consumequeue

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/fileops/fileopstest"
)

// smallOptions keep up to 8 entries in the journal and 4 per file, so a
// promoted queue has several files; every queue promotes at 8 exactly, so
// that a test knows which append promotes.
func smallOptions(dir string) Options {
	return Options{Dir: dir, EntriesPerFile: 4, MaxMapped: 16, SmallEntries: 8, PromoteSpread: -1, Logger: quietLogger()}
}

func mustOpen(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func reopen(t testing.TB, s *Store) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return mustOpen(t, s.opts)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// journalFile is the path of the store's current journal.
func journalFile(t testing.TB, dir string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, journalDirName, "0*"))
	if err != nil || len(names) != 1 {
		t.Fatalf("journals %v, %v; want one", names, err)
	}
	return names[0]
}

// TestSmallQueue runs every queue operation on a queue that stays in the
// journal and across its promotion, reopening the store after each step:
// a small queue has no directory, survives a restart, and keeps its
// entries through promotion.
func TestSmallQueue(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, smallOptions(dir))
	q := mustQueue(t, s, "t", 3)
	appendRange(t, q, 0, 6)
	if exists(s.queueDir(q.id)) || exists(filepath.Join(dir, "t")) {
		t.Fatal("a small queue has a directory")
	}
	if got := q.OffsetForTime(entryAt(4).Timestamp); got != 3 {
		t.Fatalf("OffsetForTime = %d, want 3", got)
	}
	if _, err := q.Get(6); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Get past the end: %v", err)
	}
	if err := q.Append(7, entryAt(7)); !errors.Is(err, ErrOffsetGap) {
		t.Fatalf("Append with a gap: %v", err)
	}

	s = reopen(t, s)
	if ids := s.Queues(); !slices.Equal(ids, []ID{{"t", 3}}) {
		t.Fatalf("Queues() = %v", ids)
	}
	q, ok := s.Lookup("t", 3)
	if !ok {
		t.Fatal("small queue lost by a restart")
	}
	checkRange(t, q, 0, 6)

	// Retention and a crash cut, then promotion with 8 entries held.
	if err := s.DeleteBefore(entryAt(2).PhysOffset); err != nil {
		t.Fatal(err)
	}
	if err := q.TruncateFrom(entryAt(5).PhysOffset); err != nil {
		t.Fatal(err)
	}
	checkRange(t, q, 2, 5)
	s = reopen(t, s)
	q = mustQueue(t, s, "t", 3)
	checkRange(t, q, 2, 5)
	appendRange(t, q, 5, 12)
	waitPromotions(t, s)
	if q.small.Load() {
		t.Fatal("not promoted at 8 entries")
	}
	checkRange(t, q, 2, 12)
	if got := filesOf(t, s, "t", 3); !slices.Equal(got, []string{fileName(0), fileName(4), fileName(8)}) {
		t.Fatalf("promoted files %v", got)
	}
	s = reopen(t, s)
	q = mustQueue(t, s, "t", 3)
	if q.sq != nil {
		t.Fatal("promoted queue reopened from the journal")
	}
	checkRange(t, q, 2, 12)

	// A queue emptied by retention keeps its MaxOffset and restarts later.
	e := mustQueue(t, s, "t", 4)
	appendRange(t, e, 100, 103)
	if err := s.DeleteBefore(entryAt(103).PhysOffset); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s)
	e = mustQueue(t, s, "t", 4)
	checkRange(t, e, 103, 103)
	appendRange(t, e, 200, 201)
	checkRange(t, e, 200, 201)
}

// TestSmallQueuePromotionIsByteIdentical promotes a queue and compares its
// files with those of a queue that had files from the start.
func TestSmallQueuePromotionIsByteIdentical(t *testing.T) {
	small, files := smallOptions(t.TempDir()), smallOptions(t.TempDir())
	files.SmallEntries = -1
	for _, o := range []Options{small, files} {
		s := mustOpen(t, o)
		appendRange(t, mustQueue(t, s, "t", 0), 5, 30)
		waitPromotions(t, s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	sameTree(t, readTree(t, filepath.Join(small.Dir, "t")), readTree(t, filepath.Join(files.Dir, "t")))
}

// TestUnconfirmedPromotion crashes (a copy of the directory as the page
// cache holds it) after a promotion that no Flush confirmed: the queue
// comes back from the journal and the directory goes.
func TestUnconfirmedPromotion(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, smallOptions(dir))
	q := mustQueue(t, s, "t", 0)
	appendRange(t, q, 0, 8)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	appendRange(t, q, 8, 10)
	waitPromotions(t, s)
	if q.small.Load() || !exists(s.queueDir(q.id)) {
		t.Fatal("not promoted")
	}
	crashed := copyDir(t, dir)
	c := mustOpen(t, smallOptions(crashed))
	if exists(c.queueDir(q.id)) {
		t.Fatal("the unconfirmed promotion's directory is still there")
	}
	checkRange(t, mustQueue(t, c, "t", 0), 0, 8)

	// After a Flush the promotion is confirmed and the files hold the queue.
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	c = mustOpen(t, smallOptions(copyDir(t, dir)))
	cq := mustQueue(t, c, "t", 0)
	if cq.sq != nil {
		t.Fatal("confirmed promotion reopened from the journal")
	}
	checkRange(t, cq, 0, 10)
}

// copyDir copies a directory tree as it is now, as a process crash leaves
// it (the page cache survives).
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	for rel, b := range readTree(t, src) {
		p := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestDeleteTopicSmall deletes a topic whose queues are small, promoted
// but unconfirmed, and promoted, then creates it again.
func TestDeleteTopicSmall(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, smallOptions(dir))
	appendRange(t, mustQueue(t, s, "t", 0), 0, 3)
	appendRange(t, mustQueue(t, s, "t", 1), 0, 12)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	appendRange(t, mustQueue(t, s, "t", 2), 0, 12)
	appendRange(t, mustQueue(t, s, "u", 0), 0, 2)
	if err := s.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if ids := s.Queues(); !slices.Equal(ids, []ID{{"u", 0}}) {
		t.Fatalf("Queues() after delete = %v", ids)
	}
	appendRange(t, mustQueue(t, s, "t", 1), 0, 1)
	s = reopen(t, s)
	if ids := s.Queues(); !slices.Equal(ids, []ID{{"t", 1}, {"u", 0}}) {
		t.Fatalf("Queues() after reopen = %v", ids)
	}
	checkRange(t, mustQueue(t, s, "t", 1), 0, 1)
	checkRange(t, mustQueue(t, s, "u", 0), 0, 2)
}

// TestJournalTail damages the journal of a closed store: after the synced
// mark it is a torn tail, cut at the first bad record, and appends go on
// after it; before the mark it is damage, and Open fails with ErrCorrupt.
func TestJournalTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(b []byte, synced int) []byte
		fails  bool
	}{
		{"zeros after the mark", func(b []byte, n int) []byte { return append(b, make([]byte, 100)...) }, false},
		{"half a record after the mark", func(b []byte, n int) []byte { return append(b, b[n-entryRecordSize:n-10]...) }, false},
		{"bit flip after the mark", func(b []byte, n int) []byte {
			b = append(b, b[n-entryRecordSize:n]...)
			b[len(b)-1] ^= 1
			return b
		}, false},
		{"bit flip before the mark", func(b []byte, n int) []byte { b[n-3] ^= 1; return b }, true},
		{"file cut before the mark", func(b []byte, n int) []byte { return b[:n-1] }, true},
		{"bad header", func(b []byte, n int) []byte { b[1] ^= 1; return b }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, smallOptions(dir))
			appendRange(t, mustQueue(t, s, "t", 0), 0, 5)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			path := journalFile(t, dir)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			h, err := decodeJournalHeader(b)
			if err != nil || h.Synced != int64(len(b)) {
				t.Fatalf("synced mark %d of %d bytes: %v", h.Synced, len(b), err)
			}
			if err := os.WriteFile(path, tc.damage(b, len(b)), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err = Open(smallOptions(dir))
			if tc.fails {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open of a damaged journal: %v, want ErrCorrupt", err)
				}
				if _, rerr := ReadJournal(dir); !errors.Is(rerr, ErrCorrupt) {
					t.Fatalf("ReadJournal of a damaged journal: %v", rerr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			q := mustQueue(t, s, "t", 0)
			checkRange(t, q, 0, 5)
			appendRange(t, q, 5, 7)
			s = reopen(t, s)
			checkRange(t, mustQueue(t, s, "t", 0), 0, 7)
		})
	}
}

// TestJournalCompaction fills the journal with dead records (queues
// promoted and deleted) until Flush writes a compacted journal, checks
// that the state survives, and crashes at each step of a compaction: a
// failed rename, and both journals left beside each other with a .tmp.
func TestJournalCompaction(t *testing.T) {
	dir := t.TempDir()
	opts := smallOptions(dir)
	opts.compactAt = 4096
	s := mustOpen(t, opts)
	live := mustQueue(t, s, "live", 0)
	appendRange(t, live, 0, 5)
	for p := range int32(40) {
		appendRange(t, mustQueue(t, s, "churn", p), 0, 10) // promoted
	}
	for p := range int32(40) {
		appendRange(t, mustQueue(t, s, "gone", p), 0, 3)
	}
	if err := s.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	waitPromotions(t, s)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if seq := s.journal.seq; seq != 2 {
		t.Fatalf("journal sequence %d after a mostly dead flush, want 2", seq)
	}
	if st, err := os.Stat(journalFile(t, dir)); err != nil || st.Size() > 1024 {
		t.Fatalf("compacted journal: %v, %v", st, err)
	}
	appendRange(t, live, 5, 7)
	s = reopen(t, s)
	checkRange(t, mustQueue(t, s, "live", 0), 0, 7)
	for p := range int32(40) {
		checkRange(t, mustQueue(t, s, "churn", p), 0, 10)
		if _, ok := s.Lookup("gone", p); ok {
			t.Fatalf("deleted queue gone/%d is back", p)
		}
	}

	// A crash after the rename but before the old journal's removal, with
	// a stale .tmp: Open keeps the newest and removes the rest.
	cur := journalFile(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	newer := journalPath(filepath.Dir(cur), s.journal.seq+1)
	b, _ := os.ReadFile(cur)
	encodeJournalHeader(b, s.journal.seq+1, int64(len(b)))
	if err := os.WriteFile(newer, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(newer+".tmp", []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, opts)
	if got := journalFile(t, dir); got != newer || exists(newer+".tmp") {
		t.Fatalf("journal %s after open, want %s alone", got, newer)
	}
	checkRange(t, mustQueue(t, s, "live", 0), 0, 7)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A failed rename fails the Flush (sticky) and leaves the old journal.
	faults := fileopstest.NewFaults(fileops.OS{})
	opts.FS = faults
	s = mustOpen(t, opts)
	for p := range int32(40) {
		appendRange(t, mustQueue(t, s, "churn2", p), 0, 10)
	}
	waitPromotions(t, s)
	faults.Fail(fileopstest.Rename, syscall.EIO)
	if err := s.Flush(); !errors.Is(err, ErrFlushFailed) {
		t.Fatalf("Flush with a failing rename: %v", err)
	}
	_ = s.Close()
	opts.FS = nil
	s = mustOpen(t, opts)
	checkRange(t, mustQueue(t, s, "live", 0), 0, 7)
}

// TestJournalSyncFailureIsSticky fails the journal's fdatasync: that Flush
// and every later one fail without syncing, and a restart has every entry
// of the last good Flush.
func TestJournalSyncFailureIsSticky(t *testing.T) {
	dir := t.TempDir()
	faults := fileopstest.NewFaults(fileops.OS{})
	opts := smallOptions(dir)
	opts.FS = faults
	s := mustOpen(t, opts)
	q := mustQueue(t, s, "t", 0)
	appendRange(t, q, 0, 3)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	appendRange(t, q, 3, 5)
	faults.Fail(fileopstest.Fdatasync, syscall.EIO)
	if err := s.Flush(); !errors.Is(err, ErrFlushFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Flush with a failing fdatasync: %v", err)
	}
	faults.Set(fileopstest.Fdatasync, nil)
	calls := faults.Calls(fileopstest.Fdatasync)
	appendRange(t, q, 5, 6)
	if err := s.Flush(); !errors.Is(err, ErrFlushFailed) {
		t.Fatalf("Flush after the failure: %v", err)
	}
	if err := s.Close(); !errors.Is(err, ErrFlushFailed) {
		t.Fatalf("Close after the failure: %v", err)
	}
	if n := faults.Calls(fileopstest.Fdatasync); n != calls {
		t.Fatalf("%d fdatasyncs after the failure", n-calls)
	}
	opts.FS = nil
	s = mustOpen(t, opts)
	q = mustQueue(t, s, "t", 0)
	if q.MaxOffset() < 3 {
		t.Fatalf("max offset %d after restart, 3 were flushed", q.MaxOffset())
	}
	checkRange(t, q, 0, q.MaxOffset())
}

// TestOldDataDir opens the consume queues of a data directory written
// before the journal (per-queue files only): every queue is there, and a
// new partition goes to the journal beside them.
func TestOldDataDir(t *testing.T) {
	src := filepath.Join("..", "broker", "testdata", "v1-datadir", "consumequeue")
	want, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := copyDir(t, src)
	s := mustOpen(t, Options{Dir: dir, Logger: quietLogger()})
	ids := s.Queues()
	if len(ids) == 0 || len(want) == 0 {
		t.Fatalf("queues %v in an old data directory of %d topics", ids, len(want))
	}
	for _, id := range ids {
		q := mustQueue(t, s, id.Topic, id.Partition)
		if q.sq != nil {
			t.Fatalf("old queue %v opened from the journal", id)
		}
		for off := q.MinOffset(); off < q.MaxOffset(); off++ {
			if _, err := q.Get(off); err != nil {
				t.Fatalf("%v offset %d: %v", id, off, err)
			}
		}
	}
	q := mustQueue(t, s, "new", 0)
	appendRange(t, q, 0, 1)
	if q.sq == nil || exists(s.queueDir(q.id)) {
		t.Fatal("a new queue beside old ones did not start in the journal")
	}
}

// TestPromotionSpread fills 1,000 new queues round robin, as a producer
// over a new topic does, and counts the promotions each pass asks the
// promoter for: they are
// spread over many passes instead of all landing in one, every queue is
// promoted by SmallEntries, none before SmallEntries-PromoteSpread, and a
// queue's promotion point is the same after a restart.
func TestPromotionSpread(t *testing.T) {
	const parts, small = 1000, 16
	for _, tc := range []struct {
		spread     int
		wantPasses int // passes that promote at least one queue
	}{{-1, 1}, {0, small/2 + 1}, {4, 5}} {
		t.Run(fmt.Sprint("spread=", tc.spread), func(t *testing.T) {
			opts := Options{Dir: t.TempDir(), EntriesPerFile: 64, SmallEntries: small, PromoteSpread: tc.spread, Logger: quietLogger()}
			s := mustOpen(t, opts)
			qs := make([]*Queue, parts)
			for p := range qs {
				qs[p] = mustQueue(t, s, "t", int32(p))
			}
			asked := func(q *Queue) bool { return q.promoting.Load() || !q.small.Load() }
			promoted := map[int64]int{} // entries held when promoted -> queues
			for off := range int64(small + 1) {
				for _, q := range qs {
					was := asked(q)
					appendRange(t, q, off, off+1)
					if !was && asked(q) {
						promoted[off]++
					}
				}
			}
			waitPromotions(t, s)
			lowest := int64(small - max(tc.spread, 0))
			if tc.spread == 0 {
				lowest = small / 2
			}
			for held := range promoted {
				if held < lowest || held > small {
					t.Errorf("promoted holding %d entries, want %d..%d", held, lowest, small)
				}
			}
			if len(promoted) != tc.wantPasses {
				t.Errorf("promotions in %d passes (%v), want %d", len(promoted), promoted, tc.wantPasses)
			}
			for held, n := range promoted {
				if tc.wantPasses > 1 && n > parts/2 {
					t.Errorf("%d of %d queues promoted in one pass (holding %d)", n, parts, held)
				}
			}
			for p, q := range qs {
				if q.small.Load() {
					t.Fatalf("queue %d not promoted at %d entries", p, small+1)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// A queue still in the journal at a restart keeps its point.
			opts.Dir = t.TempDir()
			s = mustOpen(t, opts)
			wantAt := s.promoteAt(ID{Topic: "t", Partition: 7})
			wantMost := s.promoteMost(wantAt)
			appendRange(t, mustQueue(t, s, "t", 7), 0, 1)
			s = reopen(t, s)
			if q := mustQueue(t, s, "t", 7); q.promoteAt != wantAt || s.promoteMost(q.promoteAt) != wantMost {
				t.Fatalf("promotion points %d, %d after a restart, %d, %d before", q.promoteAt, s.promoteMost(q.promoteAt), wantAt, wantMost)
			}
		})
	}
}

// TestPromotedEntriesReleased checks that a promoted queue, once a Flush
// has confirmed its files, no longer holds its entries in memory, and
// that every entry is still read, from the files.
func TestPromotedEntriesReleased(t *testing.T) {
	s := mustOpen(t, smallOptions(t.TempDir()))
	q := mustQueue(t, s, "t", 0)
	appendRange(t, q, 0, 10)
	waitPromotions(t, s)
	if q.small.Load() {
		t.Fatal("not promoted")
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	q.sq.mu.Lock()
	held := len(q.sq.ents)
	q.sq.mu.Unlock()
	if held != 0 {
		t.Fatalf("promoted queue still holds %d entries in memory", held)
	}
	checkRange(t, q, 0, 10)
}

// TestStoreTruncateFromSmall cuts a store holding small queues and queues
// with files, in one process and after a reopen (which learns how far
// the small queues' entries reach from the journal): a cut past every
// small entry visits only the queues with files, and a cut below some
// reaches the small queues too.
func TestStoreTruncateFromSmall(t *testing.T) {
	tests := []struct {
		name     string
		reopen   bool
		cut      int64 // entry offset whose PhysOffset is the cut
		wantFile int64 // MaxOffset after, of the queue with files (20 entries)
		wantSmal int64 // of the small queues (6 entries)
	}{
		{"past everything", false, 30, 20, 6},
		{"past the small entries", false, 10, 10, 6},
		{"past the small entries, reopened", true, 10, 10, 6},
		{"through the small entries", false, 4, 4, 4},
		{"through the small entries, reopened", true, 4, 4, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustOpen(t, smallOptions(t.TempDir()))
			filed := mustQueue(t, s, "f", 0)
			appendRange(t, filed, 0, 20)
			waitPromotions(t, s)
			for p := range int32(3) {
				appendRange(t, mustQueue(t, s, "s", p), 0, 6)
			}
			if tt.reopen {
				s = reopen(t, s)
			}
			if err := s.TruncateFrom(entryAt(tt.cut).PhysOffset); err != nil {
				t.Fatal(err)
			}
			if q := mustQueue(t, s, "f", 0); q.small.Load() || q.MaxOffset() != tt.wantFile {
				t.Errorf("queue with files: small %v, MaxOffset %d, want %d", q.small.Load(), q.MaxOffset(), tt.wantFile)
			}
			for p := range int32(3) {
				q := mustQueue(t, s, "s", p)
				if !q.small.Load() || q.MaxOffset() != tt.wantSmal {
					t.Errorf("small queue %d: small %v, MaxOffset %d, want %d", p, q.small.Load(), q.MaxOffset(), tt.wantSmal)
				}
			}
			s = reopen(t, s)
			if got := mustQueue(t, s, "s", 0).MaxOffset(); got != tt.wantSmal {
				t.Errorf("small queue after a reopen: MaxOffset %d, want %d", got, tt.wantSmal)
			}
		})
	}
}
