package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/dispatcher"
	"github.com/unilog/unilog/internal/clock"
	"github.com/unilog/unilog/internal/fileops"
)

// Options configure a data directory.
type Options struct {
	Dir          string               // data directory; holds commitlog/, consumequeue/, checkpoint, abort
	CommitLog    commitlog.Options    // Dir is filled in
	ConsumeQueue consumequeue.Options // Dir is filled in
	// CheckpointInterval is the longest time between checkpoints (default
	// DefaultCheckpointInterval). See "Checkpoints" in the package doc for
	// why it is not shorter.
	CheckpointInterval time.Duration
	// CheckpointBytes takes a checkpoint early once this many commit-log
	// bytes were dispatched since the last one (default
	// DefaultCheckpointBytes; negative: by CheckpointInterval only). It
	// bounds what recovery re-dispatches after a crash at high throughput.
	CheckpointBytes int64
	// Clock times CheckpointInterval; default clock.System.
	Clock clock.Clock
	// Live returns the live incarnation of a topic: the TopicID its records
	// carry (zero for records written before topic ids), and false for a
	// topic that does not exist. Only records of live incarnations are
	// dispatched; the others stay in the commit log until retention, and
	// their consume queues are deleted at Open and by DeleteTopic. It is
	// called for every record, so it must be cheap. nil dispatches every
	// record, each incarnation into its own queues.
	Live func(topic string) (id commitlog.TopicID, ok bool)
	// RetentionFloor, if set, is a second retention floor from the start
	// (see commitlog.Log.AddRetentionFloor) beside the dispatched offset:
	// the lower of the two wins. AddRetentionFloor adds one after Open.
	RetentionFloor func() int64
	Logger         logrus.FieldLogger

	// FS makes every call that decides durability in the directory: the
	// commit log's and the consume queues' (unless their own Options set
	// one) and the checkpoint's. Default fileops.OS; a power-cut test sets
	// a fileopstest.Recorder.
	FS fileops.Ops
}

// Lag is how far the consume queues are behind the commit log.
type Lag struct {
	Bytes int64         // commit-log bytes written but not dispatched
	Time  time.Duration // age of the oldest undispatched record; 0 if none
}

// Store owns one data directory: the commit log, the consume queues the
// dispatcher builds from it, the checkpoint and the abort lock.
type Store struct {
	opts   Options
	log    *commitlog.Log
	queues *consumequeue.Store
	d      *dispatcher.Dispatcher
	abort  *abortLock
	logger logrus.FieldLogger

	watches *watches
	names   sync.Map // topicIncarnation -> its QueueName (queueName)
	handles sync.Map // topicIncarnation -> *dense.Shared[partition], the handles with a queue (Partition)

	cpMu   sync.Mutex
	cp     Checkpoint    // last checkpoint written
	cpRun  sync.Mutex    // one checkpoint at a time: the checkpointer's and Close's
	cpStop chan struct{} // closed by Close to stop the checkpointer
	cpDone chan struct{} // closed when the checkpointer has stopped
	cpKick chan struct{} // the dispatcher asks for an early checkpoint (CheckpointBytes)
	cpFrom atomic.Int64  // dispatched offset loaded by the last checkpoint

	closeOnce sync.Once
	closeErr  error
}

// Open opens or creates a data directory, recovers it and starts dispatching.
func Open(opts Options) (*Store, error) {
	p, err := Prepare(opts)
	if err != nil {
		return nil, err
	}
	return p.Open(opts.Live)
}

// Prepared is a data directory whose commit log and consume queues are
// open, the consume-queue journal replayed, and not yet recovered:
// recovery needs to know which topic incarnations live. Opening a million
// queues is most of a restart (4 s of 6 at 1,000,000 partitions), and it
// needs no metadata, so a broker prepares its store while its control
// plane, which answers Live, starts.
type Prepared struct {
	s       *Store
	crashed bool
	state   loaded
}

// Prepare opens or creates a data directory up to recovery; Options.Live
// is not called. Open or Close the result.
func Prepare(opts Options) (*Prepared, error) {
	if opts.Dir == "" {
		return nil, errors.New("store: Options.Dir is empty")
	}
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = DefaultCheckpointInterval
	}
	if opts.CheckpointBytes == 0 {
		opts.CheckpointBytes = DefaultCheckpointBytes
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Logger == nil {
		opts.Logger = logrus.StandardLogger()
	}
	if opts.FS == nil {
		opts.FS = fileops.OS{}
	}
	if opts.CommitLog.FS == nil {
		opts.CommitLog.FS = opts.FS
	}
	if opts.ConsumeQueue.FS == nil {
		opts.ConsumeQueue.FS = opts.FS
	}
	opts.CommitLog.Dir = filepath.Join(opts.Dir, "commitlog")
	opts.ConsumeQueue.Dir = filepath.Join(opts.Dir, "consumequeue")
	if opts.CommitLog.Logger == nil {
		opts.CommitLog.Logger = opts.Logger
	}
	if opts.ConsumeQueue.Logger == nil {
		opts.ConsumeQueue.Logger = opts.Logger
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", opts.Dir, err)
	}
	abort, crashed, err := lockAbort(opts.FS, opts.Dir)
	if err != nil {
		return nil, err
	}
	s := &Store{
		opts:   opts,
		abort:  abort,
		logger: opts.Logger.WithField("component", "store"),
		cpStop: make(chan struct{}),
		cpDone: make(chan struct{}),
		cpKick: make(chan struct{}, 1),
	}
	s.watches = newWatches(func(id consumequeue.ID) int64 {
		if q, ok := s.queues.Lookup(id.Topic, id.Partition); ok {
			return q.MaxOffset()
		}
		return 0
	})
	p := &Prepared{s: s, crashed: crashed}
	if p.state, err = s.load(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Open recovers the prepared directory with live as Options.Live and
// starts dispatching. On an error the directory is closed.
func (p *Prepared) Open(live func(topic string) (commitlog.TopicID, bool)) (*Store, error) {
	s := p.s
	s.opts.Live = live
	end, err := s.recoverQueues(p.crashed, p.state)
	if err != nil {
		p.Close()
		return nil, err
	}
	s.d.Start(end)
	t, due := s.armCheckpoint()
	go s.checkpointer(t, due)
	return s, nil
}

// Close releases a directory prepared and not opened.
func (p *Prepared) Close() {
	if p.s.queues != nil {
		p.s.queues.Close()
	}
	if p.s.log != nil {
		p.s.log.Close()
	}
	p.s.abort.unlock()
}

// Dispatched is the physical offset up to which every record is indexed.
func (s *Store) Dispatched() int64 { return s.d.Dispatched() }

// Checkpoint returns the last checkpoint written.
func (s *Store) Checkpoint() Checkpoint {
	s.cpMu.Lock()
	defer s.cpMu.Unlock()
	return s.cp
}

// WaitDispatched blocks until every record before phys is dispatched.
func (s *Store) WaitDispatched(ctx context.Context, phys int64) error {
	return s.d.WaitDispatched(ctx, phys)
}

// Lag reports how far dispatching is behind the writer.
func (s *Store) Lag() Lag {
	pos := s.d.Dispatched()
	lag := Lag{Bytes: s.log.WriteOffset() - pos}
	if lag.Bytes <= 0 {
		return Lag{}
	}
	if ts, ok := s.storeTimeAt(pos); ok {
		if age := time.Since(time.UnixMilli(ts)); age > 0 {
			lag.Time = age
		}
	}
	return lag
}

// storeTimeAt is the store timestamp of the first record at or after pos.
func (s *Store) storeTimeAt(pos int64) (int64, bool) {
	v, err := s.log.Read(pos)
	if err != nil {
		return 0, false
	}
	defer v.Release()
	return v.Record().StoreTimestamp, true
}

// DeleteTopic removes the consume queues and offset counters of every
// incarnation of topic that is not live (of every one when Options.Live is
// nil), waking their watchers. The caller makes the topic's incarnation
// dead first (Options.Live no longer returns it): records of it still in
// flight are then not dispatched, and a re-created topic's records, which
// carry a new TopicID, go to queues of their own from offset 0, so the
// caller need not hold off produces or re-creation while it waits.
//
// The deletion runs on the dispatching goroutine once it has caught up
// with the log, which may take a while; ctx bounds the wait. A deletion
// queued before ctx ends still completes; one that was not (an error
// wrapping ctx.Err()) is left to the next DeleteTopic of the name or to
// the next Open, which both remove every dead incarnation.
func (s *Store) DeleteTopic(ctx context.Context, topic string) error {
	return s.d.Do(ctx, "delete topic "+topic, func() error {
		if err := s.d.DispatchTo(s.log.WriteOffset()); err != nil {
			return err
		}
		return s.deleteIncarnations(func(t string, id commitlog.TopicID) bool {
			return t == topic && (s.opts.Live == nil || !s.isLive(t, id))
		})
	})
}

// Close dispatches everything appended so far, flushes the log and the
// queues, writes a final checkpoint and removes the abort file, so the next
// Open starts without a recovery scan.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Store) close() error {
	err := s.d.Stop()
	close(s.cpStop)
	<-s.cpDone
	defer s.watches.close()
	if err == nil {
		if ferr := s.log.Flush(); ferr != nil {
			err = fmt.Errorf("store: flush commit log: %w", ferr)
		}
	}
	if err == nil {
		err = s.checkpoint()
	}
	if cerr := s.queues.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("store: close consume queues: %w", cerr)
	}
	if cerr := s.log.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("store: close commit log: %w", cerr)
	}
	if err != nil {
		// Leave the abort file: the next open must recover.
		s.abort.unlock()
		return err
	}
	return s.abort.release()
}
