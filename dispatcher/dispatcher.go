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
)

// Options configure a data directory.
type Options struct {
	Dir                string               // data directory; holds commitlog/, consumequeue/, checkpoint, abort
	CommitLog          commitlog.Options    // Dir is filled in
	ConsumeQueue       consumequeue.Options // Dir is filled in
	CheckpointInterval time.Duration        // default 1s
	// Keep reports whether records of a topic are dispatched; nil keeps all.
	// Records of other topics stay in the commit log until retention.
	Keep   func(topic string) bool
	Logger logrus.FieldLogger
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

	cpMu sync.Mutex
	cp   Checkpoint // last checkpoint written

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
	cache   map[consumequeue.ID]*consumequeue.Queue
	gaps    map[consumequeue.ID]bool // partitions whose gap was already logged
	touched map[consumequeue.ID]int64
}

// Open opens or creates a data directory, recovers it and starts dispatching.
func Open(opts Options) (*Dispatcher, error) {
	if opts.Dir == "" {
		return nil, errors.New("dispatcher: Options.Dir is empty")
	}
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = logrus.StandardLogger()
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
	abort, crashed, err := lockAbort(opts.Dir)
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
		cache:    make(map[consumequeue.ID]*consumequeue.Queue),
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
	d.log.OnRetention(d.onRetention)
	go d.run()
	return d, nil
}

// Log is the commit log; appends go here.
func (d *Dispatcher) Log() *commitlog.Log { return d.log }

// Queues is the consume-queue store; reads go here.
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

// DeleteTopic removes a topic's consume queues and makes the log number the
// topic's partitions from zero again. The caller stops appending to the
// topic first: records of it still in flight would land in the new queues.
func (d *Dispatcher) DeleteTopic(topic string) error {
	errc := make(chan error, 1)
	req := func() {
		if err := d.dispatchTo(d.log.WriteOffset()); err != nil {
			errc <- err
			return
		}
		d.log.DeleteQueue(topic)
		for id := range d.cache {
			if id.Topic == topic {
				delete(d.cache, id)
				delete(d.gaps, id)
			}
		}
		err := d.queues.DeleteTopic(topic)
		d.watches.wakeTopic(topic)
		errc <- err
	}
	select {
	case d.requests <- req:
	case <-d.done:
		return ErrClosed
	}
	select {
	case err := <-errc:
		return err
	case <-d.done:
		return ErrClosed
	}
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
