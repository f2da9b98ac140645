package commitlog

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sirupsen/logrus"
	"github.com/unilog/unilog/internal/fileops"
)

// Log is the commit log: one writer (under wmu), any number of readers.
type Log struct {
	opts Options
	log  logrus.FieldLogger

	// segMu serializes changes to the chain (roll, retention, recovery);
	// readers load segs without locking and take a segment reference.
	segMu sync.Mutex
	segs  atomic.Pointer[[]*segment]

	// cutLast is set by Open when the last file was cut short: extended
	// with zeros now, or shorter than FileSize, which every file is created
	// with (an earlier Open may have extended it, or FileSize changed).
	// Recover then looks for damage from its start.
	cutLast bool

	// Writer state, guarded by wmu.
	wmu       sync.Mutex
	recovered bool
	cur       *segment
	wpos      int64
	ready     []*segment // allocated files after cur, in order
	pending   bool       // a request to the preallocator is outstanding
	offsets   queueOffsets
	// wbuf is where a batch is encoded before it is written to the files
	// (encodeBatch), kept across batches up to maxKeptWriteBuf; wends and
	// wundo are its per-file ends and its counters' undo log.
	wbuf  []byte
	wends []int
	wundo []queueUndo
	wexts []extBody    // bodies written from the callers' memory (writev.go)
	wiov  [][]byte     // the system call's vector
	whand []handed     // the batch's headers for the hand-off (handoff.go)
	group []*appendReq // the batches being written, kept for its array

	// qmu guards queue: the appends waiting for wmu (group.go).
	qmu   sync.Mutex
	queue []*appendReq

	preReq chan int64
	preRes chan preallocResult

	writeOff atomic.Int64
	flushed  atomic.Int64
	// trustedFrom is where Recover started: every record from there on was
	// CRC-checked by it or written by this process (see Cursor).
	trustedFrom atomic.Int64
	closed      atomic.Bool
	mapped      atomic.Int64
	failed      atomic.Pointer[error] // sticky flush failure, see fail

	appMu    sync.Mutex
	appCh    chan struct{}
	appTaken atomic.Bool

	flushMu    sync.Mutex // one flush at a time; guards markF, markFailed, markBuf
	markF      *os.File   // the flushed-mark file, open from Recover to Close
	markFailed bool       // a mark write failed (logged once)
	markBuf    [markSize]byte
	droppedTo  int64 // the log before it is out of the page cache (cache.go)
	genMu      sync.Mutex
	gen        *flushGen
	flushKick  chan struct{}
	flushHolds atomic.Int32 // HoldFlushes minus ReleaseFlushes

	retMu  sync.Mutex // guards retFns, floors and liveStart
	retFns []func(newMin int64)
	floors []*func() int64 // AddRetentionFloor; by pointer so remove finds its own
	// liveStart is SetLiveStart's; nil: files go by age and size alone.
	liveStart func() int64

	stats counters
	// handoff holds the headers of records appended, for the header
	// cursor (handoff.go).
	handoff handoff
	intern  *interner

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// queueKey names a partition of one incarnation of a topic: a re-created
// topic counts its offsets apart from the dead incarnation's.
type queueKey struct {
	topic     string
	id        TopicID
	partition int32
}

// FileInfo describes one file of the log.
type FileInfo struct {
	Name string // file name: the base offset as 20 digits
	Path string
	Base int64 // physical offset of the file's first byte
	Size int64
}

// Open maps the files in opts.Dir (creating it if needed). It does not
// append: Recover must run first to find the end of the log and set the
// write position.
func Open(opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("commitlog: open %s: %w", opts.Dir, err)
	}
	l := &Log{
		opts:      opts,
		log:       opts.Logger.WithField("component", "commitlog"),
		offsets:   newQueueOffsets(),
		preReq:    make(chan int64, 1),
		preRes:    make(chan preallocResult, 1),
		appCh:     make(chan struct{}),
		gen:       &flushGen{done: make(chan struct{})},
		flushKick: make(chan struct{}, 1),
		intern:    newInterner(),
		stop:      make(chan struct{}),
	}
	segs, err := l.openFiles()
	if err != nil {
		return nil, err
	}
	l.segs.Store(&segs)
	l.trustedFrom.Store(math.MaxInt64)
	if len(segs) > 0 {
		l.writeOff.Store(segs[0].base)
		l.flushed.Store(segs[0].base)
	}
	return l, nil
}

// openFiles maps every complete file and checks that they form one chain.
func (l *Log) openFiles() ([]*segment, error) {
	dir := l.opts.Dir
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("commitlog: open %s: %w", dir, err)
	}
	var bases []int64
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, tmpSuffix) {
			if _, ok := fileops.ParseOffsetName(strings.TrimSuffix(name, tmpSuffix)); ok {
				// An allocation interrupted by a crash; never held data.
				if err := os.Remove(filepath.Join(dir, name)); err != nil {
					return nil, fmt.Errorf("commitlog: open: remove %s: %w", name, err)
				}
			}
			continue
		}
		if base, ok := fileops.ParseOffsetName(name); ok && e.Type().IsRegular() {
			bases = append(bases, base)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	segs := make([]*segment, 0, len(bases))
	fail := func(err error) ([]*segment, error) {
		for _, s := range segs {
			s.release()
		}
		return nil, err
	}
	for k, base := range bases {
		s, repaired, err := openSegment(l.opts.FS, filepath.Join(dir, segmentName(base)), base, k == len(bases)-1, &l.mapped)
		if err != nil {
			return fail(err)
		}
		if repaired > 0 {
			l.cutLast = true
			l.log.WithFields(logrus.Fields{"file": s.path, "added_bytes": repaired}).Warn("last file was cut short; extended with zeros")
		}
		if n := len(segs); n > 0 && segs[n-1].end() != base {
			s.release()
			return fail(fmt.Errorf("commitlog: open %s: file %s does not start where %s ends (%d): %w",
				dir, segmentName(base), segmentName(segs[n-1].base), segs[n-1].end(), ErrCorrupt))
		}
		segs = append(segs, s)
	}
	if n := len(segs); n > 0 && segs[n-1].size < l.opts.FileSize {
		l.cutLast = true
	}
	return segs, nil
}

func (l *Log) chain() []*segment { return *l.segs.Load() }

// setChain replaces the chain; segMu must be held.
func (l *Log) setChain(segs []*segment) { l.segs.Store(&segs) }

// MinOffset is the physical offset of the oldest byte still in the log.
func (l *Log) MinOffset() int64 {
	if segs := l.chain(); len(segs) > 0 {
		return segs[0].base
	}
	return l.writeOff.Load()
}

// WriteOffset is the physical offset the next record will be written at
// (or the start of the next file). Records before it are readable.
func (l *Log) WriteOffset() int64 { return l.writeOff.Load() }

// FlushedOffset is the physical offset before which everything is durable.
func (l *Log) FlushedOffset() int64 { return l.flushed.Load() }

// Files lists the files of the log, oldest first. Files allocated ahead of
// the writer are not listed until the writer enters them.
func (l *Log) Files() []FileInfo {
	segs := l.chain()
	out := make([]FileInfo, len(segs))
	for i, s := range segs {
		out[i] = FileInfo{Name: filepath.Base(s.path), Path: s.path, Base: s.base, Size: s.size}
	}
	return out
}

// MappedBytes is the size of the files currently mapped, including files
// allocated ahead and files deleted by retention but still held by a View.
// Each file is mapped twice (for the writer, and read-only for readers)
// and counted once.
func (l *Log) MappedBytes() int64 { return l.mapped.Load() }

// Dir returns the directory of the log.
func (l *Log) Dir() string { return l.opts.Dir }

// Options returns the options in effect, defaults filled in.
func (l *Log) Options() Options { return l.opts }

// Appended returns a channel that is closed the next time WriteOffset
// grows. Take the channel, then check WriteOffset, then wait: a growth
// between the two is never missed. The writer only closes a channel that
// somebody took, so an idle notification costs it one atomic load.
func (l *Log) Appended() <-chan struct{} {
	l.appMu.Lock()
	ch := l.appCh
	l.appTaken.Store(true)
	l.appMu.Unlock()
	return ch
}

func (l *Log) notifyAppended() {
	if !l.appTaken.Load() {
		return
	}
	l.appMu.Lock()
	if l.appTaken.Load() {
		close(l.appCh)
		l.appCh = make(chan struct{})
		l.appTaken.Store(false)
	}
	l.appMu.Unlock()
}

// Close stops the background work, flushes, and unmaps the files (a file
// still held by a View is unmapped when the View is released). Files
// allocated ahead of the writer are removed.
func (l *Log) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.close() })
	return l.closeErr
}

func (l *Log) close() error {
	l.wmu.Lock()
	l.closed.Store(true)
	close(l.preReq)
	l.wmu.Unlock()
	close(l.stop)
	l.wg.Wait()

	err := l.flush()

	l.flushMu.Lock()
	l.genMu.Lock()
	close(l.gen.done)
	l.gen = &flushGen{done: make(chan struct{}), err: ErrClosed}
	close(l.gen.done)
	l.genMu.Unlock()
	if mErr := l.closeMark(); mErr != nil && err == nil {
		err = mErr
	}
	l.flushMu.Unlock()

	l.appMu.Lock()
	close(l.appCh)
	l.appCh = make(chan struct{})
	close(l.appCh)
	l.appTaken.Store(false)
	l.appMu.Unlock()

	l.wmu.Lock()
	ahead := l.ready
	l.ready = nil
	if l.pending {
		// The preallocator has exited: its answer is there or never comes.
		select {
		case r := <-l.preRes:
			if r.seg != nil {
				ahead = append(ahead, r.seg)
			}
		default:
		}
		l.pending = false
	}
	l.cur = nil
	l.wmu.Unlock()
	for _, s := range ahead {
		if rmErr := os.Remove(s.path); rmErr != nil && err == nil {
			err = fmt.Errorf("commitlog: close: remove unused %s: %w", s.path, rmErr)
		}
		s.release()
	}

	l.segMu.Lock()
	segs := l.chain()
	l.setChain(nil)
	l.segMu.Unlock()
	for _, s := range segs {
		s.release()
	}
	return err
}
