package consumequeue

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/internal/fileops"
)

// journalDirName is the directory of the journal inside Options.Dir. '@'
// is not allowed in a Kafka topic name and validTopic refuses this name,
// so no queue directory can take it.
const journalDirName = "@journal"

const (
	// journalWriteAhead is the buffered size at which the appender writes
	// the buffer out without waiting for Flush, if no Flush is writing.
	journalWriteAhead = 1 << 20
	// defaultCompactAt is the journal size below which it is never
	// compacted, however dead: rewriting a few MB saves nothing.
	defaultCompactAt = 8 << 20
)

// journal is the shared, append-only file of the small queues (see
// "Small queues" in the package doc). Records are built in buf under mu,
// together with the change to the queue's memory, so a compaction, which
// snapshots the memory under mu, sees the state that the records before
// the snapshot leave. Writing and syncing happen under wmu, outside mu,
// so the appender waits on a disk flush only for a compaction's snapshot.
type journal struct {
	s   *Store
	dir string

	mu        sync.Mutex
	buf       []byte // records not yet written to f
	spare     []byte
	live      map[uint32]*smallQueue // the queues a replay of the journal yields
	topics    map[string]int         // live's queues per topic, for Store.Topics
	nextQID   uint32
	pending   []uint32 // promoted queues whose files are not yet known durable
	liveBytes int64    // bytes a compaction would write for live
	// physEnd bounds the PhysOffsets of the entries small queues hold:
	// every one is below it (truncations leave it where it was).
	physEnd int64

	wmu  sync.Mutex
	f    *os.File
	path string
	seq  uint64
	size int64 // bytes written to f
}

func journalPath(dir string, seq uint64) string {
	return filepath.Join(dir, fileName(int64(seq)))
}

// openJournal opens the newest journal in s's directory, or creates the
// first one, and replays it. Older journals (a compaction that crashed
// after its rename) and unfinished compactions (*.tmp) are removed. A
// record that fails before the synced mark is damage: Open fails with
// ErrCorrupt naming the file and position. One that fails after it is a
// torn tail and is cut off.
func openJournal(s *Store) (*journal, *replayed, error) {
	j := &journal{s: s, dir: filepath.Join(s.opts.Dir, journalDirName)}
	if err := os.Mkdir(j.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, nil, fmt.Errorf("consumequeue: create %s: %w", j.dir, err)
	}
	des, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, nil, fmt.Errorf("consumequeue: open %s: %w", j.dir, err)
	}
	var seqs []uint64
	for _, de := range des {
		name := de.Name()
		if seq, ok := fileops.ParseOffsetName(name); ok && seq > 0 {
			seqs = append(seqs, uint64(seq))
		} else if strings.HasSuffix(name, ".tmp") {
			if err := os.Remove(filepath.Join(j.dir, name)); err != nil {
				return nil, nil, fmt.Errorf("consumequeue: remove %s: %w", name, err)
			}
		}
	}
	slices.Sort(seqs)
	if len(seqs) == 0 {
		j.seq = 1
		j.path = journalPath(j.dir, j.seq)
		if err := j.create(j.path, journalOf(nil, j.seq, 0)); err != nil {
			return nil, nil, err
		}
		if j.f, err = os.OpenFile(j.path, os.O_RDWR, 0); err != nil {
			return nil, nil, fmt.Errorf("consumequeue: open %s: %w", j.path, err)
		}
		j.size = JournalHeaderSize
		j.nextQID = 1
		j.live = make(map[uint32]*smallQueue)
		j.topics = make(map[string]int)
		return j, &replayed{queues: j.live, byID: newQueueIndex()}, nil
	}
	for _, old := range seqs[:len(seqs)-1] {
		if err := os.Remove(journalPath(j.dir, old)); err != nil {
			return nil, nil, fmt.Errorf("consumequeue: remove old journal: %w", err)
		}
	}
	j.seq = seqs[len(seqs)-1]
	j.path = journalPath(j.dir, j.seq)
	if j.f, err = os.OpenFile(j.path, os.O_RDWR, 0); err != nil {
		return nil, nil, fmt.Errorf("consumequeue: open %s: %w", j.path, err)
	}
	fi, err := j.f.Stat()
	if err != nil {
		_ = j.f.Close()
		return nil, nil, fmt.Errorf("consumequeue: stat %s: %w", j.path, err)
	}
	r, err := replayJournal(j.f, fi.Size(), j.seq)
	if err != nil {
		_ = j.f.Close()
		return nil, nil, fmt.Errorf("consumequeue: journal %s: %w", j.path, err)
	}
	if r.end < fi.Size() {
		// New records go where the tail was: cut it, so that no stale
		// record can follow them, and make the cut durable first.
		s.log.WithError(r.stopped).WithFields(logrus.Fields{"file": j.path, "offset": r.end, "size": fi.Size()}).Warn("cutting the torn tail of the consume-queue journal")
		if err := j.f.Truncate(r.end); err == nil {
			err = s.opts.FS.Fdatasync(j.f)
		}
		if err != nil {
			_ = j.f.Close()
			return nil, nil, fmt.Errorf("consumequeue: cut %s at %d: %w", j.path, r.end, err)
		}
	}
	j.size = r.end
	j.live = r.queues
	j.topics = r.topicCounts()
	j.nextQID = r.maxQID + 1
	j.liveBytes = r.live
	j.physEnd = r.physEnd
	return j, r, nil
}

// replayJournal checks the header of the journal file f, of size bytes,
// and replays its records. It fails (ErrCorrupt) if the records stop
// before the synced mark.
func replayJournal(f io.ReaderAt, size int64, seq uint64) (*replayed, error) {
	hdr := make([]byte, min(size, JournalHeaderSize))
	n, err := f.ReadAt(hdr, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("consumequeue: read journal header: %w", err)
	}
	// A file shorter than a header is damage, which decoding reports.
	h, err := decodeJournalHeader(hdr[:n])
	if err != nil {
		return nil, err
	}
	if h.Seq != seq {
		return nil, fmt.Errorf("header sequence %d, file named %d: %w", h.Seq, seq, ErrCorrupt)
	}
	buf := make([]byte, windowSize)
	declares, err := countDeclares(newWindow(f, size, buf))
	if err != nil {
		return nil, err
	}
	r, err := replay(newWindow(f, size, buf), declares)
	if err != nil {
		return nil, err
	}
	if r.end < h.Synced {
		why := r.stopped
		if why == nil {
			why = fmt.Errorf("file ends at %d: %w", size, ErrCorrupt)
		}
		return nil, fmt.Errorf("damaged before its synced mark %d: %w", h.Synced, why)
	}
	return r, nil
}

// create writes a complete journal file at path and makes it durable with
// its directory entry, so that a crash leaves it whole or absent.
func (j *journal) create(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("consumequeue: create %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = j.s.opts.FS.Fdatasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = j.s.opts.FS.SyncDir(j.dir)
	}
	if err == nil {
		err = j.s.opts.FS.SyncDir(j.s.opts.Dir)
	}
	if err != nil {
		return fmt.Errorf("consumequeue: create %s: %w", path, err)
	}
	return nil
}

// recording reports whether records are still kept: after a failed Flush
// nothing more is made durable, so buffering them would only grow.
// Caller holds mu.
func (j *journal) recording() bool { return j.s.failure() == nil }

// declare starts a new small queue.
func (j *journal) declare(id ID) *smallQueue {
	j.mu.Lock()
	defer j.mu.Unlock()
	sq := newSmallQueue(id, j.nextQID, 0)
	j.nextQID++
	j.live[sq.qid] = sq
	j.topics[id.Topic]++
	j.liveBytes += declareSize(id)
	if j.recording() {
		j.buf = appendDeclare(j.buf, sq.qid, id, 0)
	}
	return sq
}

// add appends an entry to a small queue and its record to the journal,
// and reports whether the small queues hold more than SmallBudget now.
func (j *journal) add(sq *smallQueue, off int64, e Entry) (over bool, err error) {
	j.mu.Lock()
	if err := sq.add(off, e); err != nil {
		j.mu.Unlock()
		return false, err
	}
	j.liveBytes += entryRecordSize
	over = j.liveBytes > j.s.opts.SmallBudget
	j.physEnd = max(j.physEnd, e.PhysOffset+1)
	full := false
	if j.recording() {
		j.buf = appendEntry(j.buf, sq.qid, off, e)
		full = len(j.buf) >= journalWriteAhead
	}
	j.mu.Unlock()
	if full && j.wmu.TryLock() {
		defer j.wmu.Unlock()
		if err := j.writeBuffered(); err != nil {
			_ = j.s.fail(err)
		}
	}
	return over, nil
}

// holdsFrom reports whether a small queue may hold an entry pointing at
// or past phys.
func (j *journal) holdsFrom(phys int64) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.physEnd > phys
}

// truncate drops a small queue's entries from k on.
func (j *journal) truncate(sq *smallQueue, k int64) error {
	return j.change(sq, recTruncate, k, sq.truncate)
}

// setMin drops a small queue's entries before k.
func (j *journal) setMin(sq *smallQueue, k int64) error {
	return j.change(sq, recSetMin, k, sq.setMin)
}

func (j *journal) change(sq *smallQueue, typ byte, k int64, apply func(int64) error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	before := sq.stateSize()
	if err := apply(k); err != nil {
		return err
	}
	j.liveBytes += sq.stateSize() - before
	if j.recording() {
		j.buf = appendOffset(j.buf, typ, sq.qid, k)
	}
	return nil
}

// promoted records that sq's entries are in files of their own now. Its
// record waits for the Flush that has made those files durable.
func (j *journal) promoted(sq *smallQueue) {
	j.mu.Lock()
	j.pending = append(j.pending, sq.qid)
	j.mu.Unlock()
}

// remove drops a queue whose topic was deleted.
func (j *journal) remove(sq *smallQueue) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.drop(sq, recRemoved)
}

// drop takes sq out of the live set with a promoted or removed record.
// Caller holds mu.
func (j *journal) drop(sq *smallQueue, typ byte) {
	if j.live[sq.qid] != sq {
		return
	}
	delete(j.live, sq.qid)
	dropTopic(j.topics, sq.q.id.Topic)
	j.liveBytes -= sq.stateSize()
	if j.recording() {
		j.buf = appendQID(j.buf, typ, sq.qid)
	}
	// Its files (or nothing, for a removed queue) hold it now; keeping the
	// entries would pin SmallEntries of them per partition for good.
	sq.mu.Lock()
	sq.ents = nil
	sq.mu.Unlock()
}

// ids lists the queues in the journal.
func (j *journal) ids() []ID {
	j.mu.Lock()
	defer j.mu.Unlock()
	ids := make([]ID, 0, len(j.live))
	for _, sq := range j.live {
		ids = append(ids, sq.q.id)
	}
	return ids
}

// takePending returns the promotions made so far. Flush takes them before
// it syncs the queue files, so their files are durable when it commits.
func (j *journal) takePending() []uint32 {
	j.mu.Lock()
	defer j.mu.Unlock()
	p := j.pending
	j.pending = nil
	return p
}

// commit writes the records of the promotions in promos (whose files are
// durable now) and everything buffered, and makes them durable: by
// fdatasync and a new synced mark, or, when the journal is mostly dead, by
// writing a compacted journal in its place.
func (j *journal) commit(promos []uint32) error {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	j.mu.Lock()
	for _, qid := range promos {
		if sq := j.live[qid]; sq != nil {
			j.drop(sq, recPromoted)
		}
	}
	total := j.size + int64(len(j.buf))
	if total > j.s.opts.compactAt && j.liveBytes*4 < total {
		return j.compactLocked()
	}
	j.mu.Unlock()
	if err := j.writeBuffered(); err != nil {
		return err
	}
	if err := j.s.opts.FS.Fdatasync(j.f); err != nil {
		return fmt.Errorf("consumequeue: fdatasync %s: %w", j.path, err)
	}
	var mark [12]byte
	encodeSyncedMark(mark[:], j.size)
	if _, err := j.f.WriteAt(mark[:], 20); err != nil {
		return fmt.Errorf("consumequeue: write synced mark of %s: %w", j.path, err)
	}
	return nil
}

// writeBuffered writes the buffered records at the end of the file.
// Caller holds wmu, not mu.
func (j *journal) writeBuffered() error {
	j.mu.Lock()
	b := j.buf
	j.buf, j.spare = j.spare[:0], nil
	j.mu.Unlock()
	if len(b) == 0 {
		return nil
	}
	at := j.size
	n, err := j.f.WriteAt(b, at)
	j.size += int64(n)
	j.mu.Lock()
	j.spare = b[:0]
	j.mu.Unlock()
	if err != nil {
		return fmt.Errorf("consumequeue: write %s at %d: %w", j.path, at, err)
	}
	return nil
}

// compactLocked writes the live queues into a new journal, next in
// sequence: to <seq>.tmp, fdatasync, rename, fsync of the directory, and
// only then removes the old one, so a crash at any point leaves one
// complete journal (Open removes the older of two, and any .tmp). The
// snapshot is taken under mu, which the caller holds and this releases:
// records buffered before it are in the snapshot, so they are dropped,
// and records buffered after it belong to the new file.
func (j *journal) compactLocked() error {
	seq := j.seq + 1
	data := journalOf(j.live, seq, j.liveBytes)
	j.buf = j.buf[:0]
	j.mu.Unlock()

	path := journalPath(j.dir, seq)
	tmp := path + ".tmp"
	if err := j.create(tmp, data); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := j.s.opts.FS.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("consumequeue: rename %s: %w", tmp, err)
	}
	if err := j.s.opts.FS.SyncDir(j.dir); err != nil {
		return fmt.Errorf("consumequeue: fsync %s: %w", j.dir, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("consumequeue: open %s: %w", path, err)
	}
	old := j.path
	_ = j.f.Close()
	j.f, j.path, j.seq, j.size = f, path, seq, int64(len(data))
	if err := os.Remove(old); err != nil {
		return fmt.Errorf("consumequeue: remove %s: %w", old, err)
	}
	return nil
}

// journalOf is a complete journal file holding queues: each one's
// declaration and entries, in increasing queue id as replay requires.
func journalOf(queues map[uint32]*smallQueue, seq uint64, sizeHint int64) []byte {
	qids := make([]uint32, 0, len(queues))
	for qid := range queues {
		qids = append(qids, qid)
	}
	slices.Sort(qids)
	data := make([]byte, JournalHeaderSize, JournalHeaderSize+sizeHint)
	for _, qid := range qids {
		data = queues[qid].appendState(data)
	}
	encodeJournalHeader(data, seq, int64(len(data)))
	return data
}

func (j *journal) close() error {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	if err := j.f.Close(); err != nil {
		return fmt.Errorf("consumequeue: close %s: %w", j.path, err)
	}
	return nil
}

// ReadJournal reads the queues held in the journal of a consume-queue
// directory without changing anything, for tools that inspect a data
// directory (opening a Store cuts a torn tail). A directory without a
// journal holds none. Records that stop before the synced mark are
// damage: the error wraps ErrCorrupt and names the file and position,
// and no queue is returned.
func ReadJournal(dir string) ([]JournalQueue, error) {
	jdir := filepath.Join(dir, journalDirName)
	des, err := os.ReadDir(jdir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("consumequeue: read journal: %w", err)
	}
	var seq int64
	for _, de := range des {
		if s, ok := fileops.ParseOffsetName(de.Name()); ok && s > seq {
			seq = s
		}
	}
	if seq == 0 {
		return nil, nil
	}
	path := journalPath(jdir, uint64(seq))
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: read journal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("consumequeue: read journal: %w", err)
	}
	r, err := replayJournal(f, fi.Size(), uint64(seq))
	if err != nil {
		return nil, fmt.Errorf("consumequeue: journal %s: %w", path, err)
	}
	out := make([]JournalQueue, 0, len(r.queues))
	for _, sq := range r.queues {
		lo, hi := sq.bounds()
		out = append(out, JournalQueue{ID: sq.q.id, Min: lo, Max: hi, Entries: sq.snapshot()})
	}
	slices.SortFunc(out, func(a, b JournalQueue) int { return a.ID.Compare(b.ID) })
	return out, nil
}
