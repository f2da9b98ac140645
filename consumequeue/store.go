package consumequeue

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sirupsen/logrus"
	"github.com/unilog/unilog/internal/fileops"
)

// Store holds every queue under Options.Dir. Opening it reads nothing but
// the directory's existence: a queue is opened (its last file mapped, its
// MaxOffset found) the first time Queue or Lookup asks for it.
type Store struct {
	opts Options
	log  logrus.FieldLogger
	lru  *lru

	journal *journal
	// topicDirs holds the topics that may have a directory, so that the
	// first use of a queue of any other topic (every new partition, and
	// every produce's lookup before its first dispatch) costs no stat.
	topicDirs sync.Map // string -> struct{}

	mu     sync.RWMutex
	queues queueIndex
	closed bool

	dirsMu sync.Mutex
	dirs   map[string]struct{} // directories whose entries changed since the last Flush

	failed atomic.Pointer[error] // sticky Flush failure, see fail

	promoter *promoter
	room     *roomMaker
	tails    tails // entries of cold files written behind (tail.go)
}

// Open opens (creating if needed) the store in opts.Dir.
func Open(opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("consumequeue: open %s: %w", opts.Dir, err)
	}
	log := opts.Logger.WithField("component", "consumequeue")
	s := &Store{
		opts: opts,
		log:  log,
		lru:  newLRU(opts.MaxMapped, log),
		dirs: make(map[string]struct{}),
	}
	s.tails.cold = coldPuts
	topics, err := os.ReadDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: open %s: %w", opts.Dir, err)
	}
	for _, t := range topics {
		if t.IsDir() {
			s.topicDirs.Store(t.Name(), struct{}{})
		}
	}
	j, r, err := openJournal(s)
	if err != nil {
		return nil, err
	}
	s.journal = j
	// The replay's map holds exactly the journal's live queues, the only
	// ones open so far. Building a second map of a million entries,
	// with a Queue allocated for each, was a quarter of Open.
	s.queues = r.byID
	for _, sq := range r.declared {
		if sq.gone {
			continue
		}
		q := s.initSmall(sq)
		lo, hi := sq.bounds()
		q.min.Store(lo)
		q.max.Store(hi)
	}
	// A directory of a queue the journal still holds is a promotion that
	// no Flush confirmed: its files may not be durable, the journal is.
	for _, id := range s.dirQueues() {
		if s.queues.get(id) == nil {
			continue
		}
		dir := s.queueDir(id)
		s.log.WithField("dir", dir).Warn("removing the files of an unconfirmed consume queue promotion; the journal holds the queue")
		if err := os.RemoveAll(dir); err != nil {
			_ = j.close()
			return nil, fmt.Errorf("consumequeue: open: %w", err)
		}
		s.dirChanged(filepath.Dir(dir))
	}
	s.promoter = newPromoter(s)
	s.room = newRoomMaker()
	return s, nil
}

// promoteAt is the number of entries past which the small queue id gets
// files while the small queues hold more than SmallBudget: SmallEntries
// less a share of PromoteSpread picked by an FNV-1a hash of the id, the
// same in every run.
func (s *Store) promoteAt(id ID) int64 {
	if s.opts.PromoteSpread <= 0 {
		return int64(s.opts.SmallEntries)
	}
	spread := uint32(s.opts.PromoteSpread)
	h := uint32(2166136261)
	for i := range len(id.Topic) {
		h = (h ^ uint32(id.Topic[i])) * 16777619
	}
	for shift := 0; shift < 32; shift += 8 {
		h = (h ^ uint32(id.Partition)>>shift&0xff) * 16777619
	}
	return int64(s.opts.SmallEntries) - int64(h%(spread+1))
}

// promoteMost is the number of entries past which a small queue whose
// promoteAt is at gets files however little the small queues hold:
// SmallEntriesMax less the share of it that at is short of SmallEntries.
// Derived rather than kept, as a million small queues would keep it.
func (s *Store) promoteMost(at int64) int64 {
	small, most := int64(s.opts.SmallEntries), int64(s.opts.SmallEntriesMax)
	return most - (small-at)*most/small
}

// addSmall registers the queue whose entries sq holds. Caller holds mu.
func (s *Store) addSmall(sq *smallQueue) *Queue {
	q := s.initSmall(sq)
	s.queues.put(sq.q.id, q)
	return q
}

// initSmall readies sq's Queue to serve it.
func (s *Store) initSmall(sq *smallQueue) *Queue {
	q := &sq.q
	s.initQueue(q, sq.q.id)
	q.sq = sq
	q.promoteAt = s.promoteAt(sq.q.id)
	q.small.Store(true)
	return q
}

func (s *Store) initQueue(q *Queue, id ID) {
	q.s, q.id, q.epf = s, id, int64(s.opts.EntriesPerFile)
}

// validTopic keeps a topic name usable as one directory name.
func validTopic(topic string) bool {
	return topic != "" && topic != "." && topic != ".." && topic != journalDirName && len(topic) <= 255 &&
		!strings.ContainsAny(topic, "/\x00")
}

// hasDir reports whether the queue has a directory (or its stat fails
// otherwise, which opening the queue reports).
func (s *Store) hasDir(id ID) bool {
	if _, ok := s.topicDirs.Load(id.Topic); !ok {
		return false
	}
	_, err := os.Stat(s.queueDir(id))
	return !errors.Is(err, os.ErrNotExist)
}

func (s *Store) queueDir(id ID) string { return QueueDir(s.opts.Dir, id) }

// Queue returns the queue of topic/partition, creating its directory if
// it does not exist.
func (s *Store) Queue(topic string, partition int32) (*Queue, error) {
	return s.get(ID{Topic: topic, Partition: partition}, true)
}

// Lookup returns an existing queue. A queue that exists on disk but cannot
// be opened (damaged files) is logged and reported as missing; Queue
// returns the error itself.
func (s *Store) Lookup(topic string, partition int32) (*Queue, bool) {
	id := ID{Topic: topic, Partition: partition}
	if !validTopic(topic) || partition < 0 {
		return nil, false
	}
	s.mu.RLock()
	q := s.queues.get(id)
	closed := s.closed
	s.mu.RUnlock()
	if q != nil || closed {
		return q, q != nil
	}
	if !s.hasDir(id) {
		return nil, false
	}
	q, err := s.get(id, false)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.log.WithError(err).WithFields(logrus.Fields{"topic": topic, "partition": partition}).Error("consume queue unreadable")
		}
		return nil, false
	}
	return q, true
}

func (s *Store) get(id ID, create bool) (*Queue, error) {
	if !validTopic(id.Topic) || id.Partition < 0 {
		return nil, fmt.Errorf("consumequeue: queue %q/%d: %w", id.Topic, id.Partition, ErrInvalidName)
	}
	s.mu.RLock()
	q := s.queues.get(id)
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	if q != nil {
		return q, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if q := s.queues.get(id); q != nil {
		return q, nil
	}
	if create && s.opts.SmallEntries > 0 && !s.hasDir(id) {
		// A new queue starts in the journal: no directory, no file.
		return s.addSmall(s.journal.declare(id)), nil
	}
	dir := s.queueDir(id)
	fresh := false
	if create {
		var err error
		if fresh, err = s.mkdir(dir); err != nil {
			return nil, err
		}
	}
	q, err := openQueue(s, id, dir, fresh)
	if err != nil {
		return nil, err
	}
	s.queues.put(id, q)
	return q, nil
}

// mkdir creates a queue directory (and its topic directory) and reports
// whether it was new.
func (s *Store) mkdir(dir string) (bool, error) {
	s.topicDirs.Store(filepath.Base(filepath.Dir(dir)), struct{}{})
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.Mkdir(filepath.Dir(dir), 0o755); err == nil || errors.Is(err, os.ErrExist) {
			s.dirChanged(s.opts.Dir)
			err = os.Mkdir(dir, 0o755)
		}
	}
	switch {
	case err == nil:
		s.dirChanged(filepath.Dir(dir))
		return true, nil
	case errors.Is(err, os.ErrExist):
		return false, nil
	default:
		return false, fmt.Errorf("consumequeue: create %s: %w", dir, err)
	}
}

// Queues lists every queue, sorted by topic then partition: those in the
// journal and those with directories. It reads directories only; no queue
// is opened.
func (s *Store) Queues() []ID {
	ids := s.dirQueues()
	seen := make(map[ID]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
	}
	for _, id := range s.journal.ids() {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, ID.Compare)
	return ids
}

// Compare orders ids by topic, then partition.
func (a ID) Compare(b ID) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// dirQueues lists the queue directories; a topic directory it cannot read
// holds no queue it can serve, and hides no other's.
func (s *Store) dirQueues() []ID {
	ids, _ := ListQueues(s.opts.Dir)
	return ids
}

func (s *Store) dirChanged(dir string) {
	s.dirsMu.Lock()
	s.dirs[dir] = struct{}{}
	s.dirsMu.Unlock()
}

// syncfsThreshold is the number of written files above which Flush makes
// one syncfs(2) call instead of an msync per file: each msync is its own
// journal commit, so 10,000 partitions written since the last checkpoint
// would otherwise cost 10,000 disk flushes.
const syncfsThreshold = 64

// Flush makes every file written since the last Flush durable, together
// with the directories in which files were created or removed. Once a
// Flush has failed every later one fails with ErrFlushFailed without
// writing (see fail).
func (s *Store) Flush() error {
	if err := s.failure(); err != nil {
		return err
	}
	// Promotions made from here on wait for the next Flush: their files
	// may miss the syncs below.
	promos := s.journal.takePending()
	if err := s.flushFiles(); err != nil {
		return s.fail(err)
	}
	if err := s.journal.commit(promos); err != nil {
		return s.fail(err)
	}
	return nil
}

// flushFiles makes the queue files and directories durable.
func (s *Store) flushFiles() error {
	dirty := s.lru.takeDirty()
	s.dirsMu.Lock()
	dirs := s.dirs
	s.dirs = make(map[string]struct{})
	s.dirsMu.Unlock()
	if len(dirty)+len(dirs) > syncfsThreshold {
		// Dirty flags are cleared before the call so that writes racing
		// it stay dirty. The page-table entries stay (unmapdirty.go):
		// the write-back runs in the kernel's flusher threads, and
		// dropping them here cost the broker more than it saved (at
		// 1,000 partitions 253k against 280k records/s, broker CPU 3.3
		// against 2.5 s/GB, medians of 6 runs after a 1,000,000-record
		// warm-up).
		for _, f := range dirty {
			f.dirty.Store(false)
			if err := f.writeTail(); err != nil {
				f.dirty.Store(true)
				return err
			}
		}
		if err := s.opts.FS.Syncfs(s.opts.Dir); err != nil {
			return fmt.Errorf("consumequeue: syncfs %s: %w", s.opts.Dir, err)
		}
		// After the write-back, not before: a store racing it would map
		// pages that the write-back then protects again.
		for _, f := range dirty {
			f.flushed.Store(true)
		}
		return nil
	}
	var errs []error
	for _, f := range dirty {
		if err := f.sync(); err != nil {
			errs = append(errs, err)
		}
	}
	for dir := range dirs {
		if err := s.opts.FS.SyncDir(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("consumequeue: fsync %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// fail makes a Flush failure sticky. A failed msync or fsync may have
// dropped the dirty pages it was writing (Linux marks them clean after a
// writeback error), so a retry could succeed and let the dispatcher
// checkpoint entries that never reached the disk ("fsyncgate"). From here
// on Flush fails without writing, so the checkpoint stays before the
// failure, and a restart rebuilds the entries after it from the commit
// log. Appends and reads go on. It logs once and returns the sticky error.
func (s *Store) fail(cause error) error {
	err := fmt.Errorf("%w: %w", ErrFlushFailed, cause)
	if s.failed.CompareAndSwap(nil, &err) {
		s.log.WithError(cause).WithField("dir", s.opts.Dir).Error("consume queue flush failed; no checkpoint until a restart rebuilds the queues")
	}
	return *s.failed.Load()
}

// failure returns the sticky Flush error, or nil.
func (s *Store) failure() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// SmallStats reports the queues that live in the journal (see "Small
// queues" in the package doc) and the bytes of their records, which past
// Options.SmallBudget promote them at SmallEntries rather than
// SmallEntriesMax.
func (s *Store) SmallStats() (queues int, bytes int64) {
	s.journal.mu.Lock()
	defer s.journal.mu.Unlock()
	return len(s.journal.live), s.journal.liveBytes
}

// FlushFailed reports whether a Flush has failed (see Flush).
func (s *Store) FlushFailed() bool { return s.failure() != nil }

// sync makes a written file durable through a short-lived descriptor
// (fdatasync, which writes the pages stored through the mapping as msync
// would), holding none of f's locks while the disk works: msync under the
// read lock held the dispatcher's appends to the file, and so every
// acks=-1 produce to its partition, for the whole write-back of a
// checkpoint. Entries stored before the dirty flag is taken are in the
// page cache and written; those stored after mark the file dirty again
// for the next flush.
func (f *file) sync() error {
	if !f.dirty.Load() {
		return nil
	}
	f.mu.Lock()
	if f.removed || !f.dirty.Swap(false) {
		f.mu.Unlock()
		return nil
	}
	if err := f.writeTailLocked(); err != nil {
		f.dirty.Store(true)
		f.mu.Unlock()
		return err
	}
	if f.m != nil {
		f.unmapDirtyLocked()
	}
	f.mu.Unlock()
	fd, err := fileops.Open(f.path, os.O_RDWR, 0)
	if err == nil {
		err = f.ops.Fdatasync(fd)
		_ = fd.Close()
	}
	if err == nil {
		f.flushed.Store(true)
		return nil
	}
	if errors.Is(err, os.ErrNotExist) && f.isRemoved() {
		return nil
	}
	f.dirty.Store(true)
	return fmt.Errorf("consumequeue: sync %s: %w", f.path, err)
}

// isRemoved reports whether the file was removed for good (a deleted
// topic, a retention cut): its name may be gone, and nothing of it needs
// to reach the disk.
func (f *file) isRemoved() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.removed
}

// all opens every queue on disk and returns every open queue, in no
// particular order (sorting a million IDs was a tenth of a restart's CPU),
// and the errors of those that would not open. The queues with
// directories are opened before the open ones are listed, so each is
// listed once without a set of every ID.
func (s *Store) all() ([]*Queue, error) {
	_, err := s.filed()
	s.mu.RLock()
	qs := make([]*Queue, 0, s.queues.len())
	for q := range s.queues.all() {
		qs = append(qs, q)
	}
	s.mu.RUnlock()
	return qs, err
}

// TruncateFrom truncates every queue at phys (see Queue.TruncateFrom).
// Recovery calls it with the dispatcher's checkpoint before re-dispatching.
// Where no small queue holds an entry at or past phys (a checkpoint that
// covers the journal, as after any stop but a crash in the middle of
// appends), only the queues with files are visited: visiting a million
// small queues that have nothing to cut was 0.6 s of a restart after
// kill -9.
func (s *Store) TruncateFrom(phys int64) error {
	var qs []*Queue
	var err error
	if s.journal.holdsFrom(phys) {
		qs, err = s.all()
	} else {
		qs, err = s.filed()
	}
	errs := []error{err}
	for _, q := range qs {
		if err := q.TruncateFrom(phys); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// filed returns the queues that have directories, opening them, and the
// errors of those that would not open. A small queue being promoted is
// among them.
func (s *Store) filed() ([]*Queue, error) {
	var qs []*Queue
	var errs []error
	for _, id := range s.dirQueues() {
		q, err := s.get(id, false)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		qs = append(qs, q)
	}
	return qs, errors.Join(errs...)
}

// DeleteBefore drops, in every queue, the entries pointing below minPhys
// (the commit log's new MinOffset after retention): files wholly before the
// first surviving entry are deleted and MinOffset is raised to it.
func (s *Store) DeleteBefore(minPhys int64) error {
	qs, err := s.all()
	errs := []error{err}
	for _, q := range qs {
		if err := q.deleteBefore(minPhys); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DeleteTopic removes every queue of topic from memory and disk. Queues
// handed out earlier report ErrClosed from then on.
func (s *Store) DeleteTopic(topic string) error {
	if !validTopic(topic) {
		return fmt.Errorf("consumequeue: delete topic %q: %w", topic, ErrInvalidName)
	}
	s.promoter.runMu.Lock()
	defer s.promoter.runMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	var errs []error
	for q := range s.queues.topic(topic) {
		q.mu.Lock()
		q.closed.Store(true)
		errs = append(errs, q.closeFiles(false))
		if q.sq != nil {
			s.journal.remove(q.sq)
		}
		q.mu.Unlock()
		s.queues.remove(q.id)
	}
	dir := filepath.Join(s.opts.Dir, topic)
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("consumequeue: delete topic %s: %w", dir, err))
	} else {
		s.topicDirs.Delete(topic)
	}
	s.dirChanged(s.opts.Dir)
	return errors.Join(errs...)
}

// MappedFiles is the number of files mapped right now.
func (s *Store) MappedFiles() int { return int(s.lru.mapped.Load()) }

// Close flushes and unmaps everything. Queues handed out earlier report
// ErrClosed from then on.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.promoter.close()
	s.room.close()
	errs := []error{s.Flush()}
	// After a failed flush, msyncing again on the way out is the retry
	// that fail forbids.
	sync := s.failure() == nil
	for q := range s.queues.all() {
		q.mu.Lock()
		q.closed.Store(true)
		errs = append(errs, q.closeFiles(sync))
		q.mu.Unlock()
	}
	s.queues = queueIndex{}
	errs = append(errs, s.journal.close())
	return errors.Join(errs...)
}
