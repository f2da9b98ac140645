package dispatcher

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
	// RetentionFloor, if set, is a second retention floor (see
	// commitlog.Log.AddRetentionFloor) beside the dispatched offset: the
	// lower of the two wins. The group coordinator keeps the files holding
	// live committed offsets with it.
	RetentionFloor func() int64
	Logger         logrus.FieldLogger

	fs fileops.Replacer // fileops.OS unless a test injects one
}

// Lag is how far the consume queues are behind the commit log.
type Lag struct {
	Bytes int64         // commit-log bytes written but not dispatched
	Time  time.Duration // age of the oldest undispatched record; 0 if none
}

// Dispatcher owns one data directory: the commit log, the consume queues
// built from it, the checkpoint and the abort lock.
type Dispatcher struct {
	opts   Options
	log    *commitlog.Log
	queues *consumequeue.Store
	abort  *abortLock
	logger logrus.FieldLogger

	dispatched atomic.Int64 // physical offset up to which records are dispatched
	progressMu sync.Mutex
	progress   chan struct{} // closed and replaced when dispatched grows

	watches *watches
	names   sync.Map // topicIncarnation -> its QueueName (queueName)

	cpMu   sync.Mutex
	cp     Checkpoint    // last checkpoint written
	cpRun  sync.Mutex    // one checkpoint at a time: the checkpointer's and Close's
	cpDone chan struct{} // closed when the checkpointer has stopped
	cpKick chan struct{} // the dispatcher asks for an early checkpoint (CheckpointBytes)
	cpFrom atomic.Int64  // dispatched offset loaded by the last checkpoint

	retention atomic.Int64 // newest log minimum not yet applied to the queues; -1 if none
	kick      chan struct{}
	requests  chan func()
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error

	// Used only by the dispatching goroutine (and by Open before it starts,
	// Close after it stopped).
	cursor  *commitlog.Cursor // at the dispatched offset between passes
	cache   map[incarnation]*consumequeue.Queue
	gaps    map[consumequeue.ID]bool // partitions whose gap was already logged
	touched map[consumequeue.ID]int64
}

// Open opens or creates a data directory, recovers it and starts dispatching.
func Open(opts Options) (*Dispatcher, error) {
	if opts.Dir == "" {
		return nil, errors.New("dispatcher: Options.Dir is empty")
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
	if opts.fs == nil {
		opts.fs = fileops.OS{}
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
		return nil, fmt.Errorf("dispatcher: open %s: %w", opts.Dir, err)
	}
	abort, crashed, err := lockAbort(opts.fs, opts.Dir)
	if err != nil {
		return nil, err
	}
	d := &Dispatcher{
		opts:     opts,
		abort:    abort,
		logger:   opts.Logger.WithField("component", "dispatcher"),
		progress: make(chan struct{}),
		kick:     make(chan struct{}, 1),
		requests: make(chan func()),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		cpDone:   make(chan struct{}),
		cpKick:   make(chan struct{}, 1),
		cache:    make(map[incarnation]*consumequeue.Queue),
		gaps:     make(map[consumequeue.ID]bool),
		touched:  make(map[consumequeue.ID]int64),
	}
	d.watches = newWatches(func(id consumequeue.ID) int64 {
		if q, ok := d.queues.Lookup(id.Topic, id.Partition); ok {
			return q.MaxOffset()
		}
		return 0
	})
	d.retention.Store(-1)
	if err := d.open(crashed); err != nil {
		if d.queues != nil {
			d.queues.Close()
		}
		if d.log != nil {
			d.log.Close()
		}
		abort.unlock()
		return nil, err
	}
	go d.run()
	t, due := d.armCheckpoint()
	go d.checkpointer(t, due)
	return d, nil
}

// Log is the commit log; appends go here.
func (d *Dispatcher) Log() *commitlog.Log { return d.log }

// Queues is the consume-queue store, whose queues are named by QueueName;
// Queue finds the queue of a topic's live incarnation.
func (d *Dispatcher) Queues() *consumequeue.Store { return d.queues }

// Dispatched is the physical offset up to which every record is indexed.
func (d *Dispatcher) Dispatched() int64 { return d.dispatched.Load() }

// Checkpoint returns the last checkpoint written.
func (d *Dispatcher) Checkpoint() Checkpoint {
	d.cpMu.Lock()
	defer d.cpMu.Unlock()
	return d.cp
}

// WaitDispatched blocks until every record before phys is dispatched.
func (d *Dispatcher) WaitDispatched(ctx context.Context, phys int64) error {
	for {
		d.progressMu.Lock()
		ch := d.progress
		d.progressMu.Unlock()
		if d.dispatched.Load() >= phys {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-d.done:
			if d.dispatched.Load() >= phys {
				return nil
			}
			return ErrClosed
		}
	}
}

// Lag reports how far dispatching is behind the writer.
func (d *Dispatcher) Lag() Lag {
	pos := d.dispatched.Load()
	lag := Lag{Bytes: d.log.WriteOffset() - pos}
	if lag.Bytes <= 0 {
		return Lag{}
	}
	if ts, ok := d.storeTimeAt(pos); ok {
		if age := time.Since(time.UnixMilli(ts)); age > 0 {
			lag.Time = age
		}
	}
	return lag
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
func (d *Dispatcher) DeleteTopic(ctx context.Context, topic string) error {
	return d.onRun(ctx, "delete topic "+topic, func() error {
		if err := d.dispatchTo(d.log.WriteOffset()); err != nil {
			return err
		}
		return d.deleteIncarnations(func(t string, id commitlog.TopicID) bool {
			return t == topic && (d.opts.Live == nil || !d.isLive(t, id))
		})
	})
}

// Close dispatches everything appended so far, flushes the log and the
// queues, writes a final checkpoint and removes the abort file, so the next
// Open starts without a recovery scan.
func (d *Dispatcher) Close() error {
	d.closeOnce.Do(func() { d.closeErr = d.close() })
	return d.closeErr
}

func (d *Dispatcher) close() error {
	close(d.stop)
	<-d.done
	<-d.cpDone
	defer d.watches.close()
	d.applyRetention()
	err := d.dispatchTo(d.log.WriteOffset())
	d.cursor.Close()
	if err == nil {
		if ferr := d.log.Flush(); ferr != nil {
			err = fmt.Errorf("dispatcher: flush commit log: %w", ferr)
		}
	}
	if err == nil {
		err = d.checkpoint()
	}
	if cerr := d.queues.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("dispatcher: close consume queues: %w", cerr)
	}
	if cerr := d.log.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("dispatcher: close commit log: %w", cerr)
	}
	if err != nil {
		// Leave the abort file: the next open must recover.
		d.abort.unlock()
		return err
	}
	return d.abort.release()
}

// publish makes a new dispatched offset visible and wakes WaitDispatched.
func (d *Dispatcher) publish(pos int64) {
	d.dispatched.Store(pos)
	d.progressMu.Lock()
	close(d.progress)
	d.progress = make(chan struct{})
	d.progressMu.Unlock()
}

// onRetention runs on the log's retention goroutine; the queues are only
// touched by the dispatching goroutine, so it just records the new minimum.
func (d *Dispatcher) onRetention(newMin int64) {
	for {
		old := d.retention.Load()
		if newMin <= old || d.retention.CompareAndSwap(old, newMin) {
			break
		}
	}
	select {
	case d.kick <- struct{}{}:
	default:
	}
}
