package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sirupsen/logrus"
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
)

// ErrClosed reports a wait or a request the dispatcher can no longer serve
// because it stopped.
var ErrClosed = errors.New("dispatcher: closed")

// Options wire a Dispatcher to the data directory its owner opened.
type Options struct {
	Log    *commitlog.Log
	Queues *consumequeue.Store
	// Live returns the live incarnation of a topic (see "Topic
	// incarnations" in package store); nil dispatches every record, each
	// incarnation into its own queues. It is called for every run of
	// records of one live incarnation (every record of the others), so it
	// must be cheap.
	Live func(topic string) (id commitlog.TopicID, ok bool)
	// Notify hears of the partitions that grew after each pass; nil if
	// nobody waits.
	Notify Notifier
	// AfterPass runs on the dispatching goroutine after each pass; it must
	// not block (the store asks for an early checkpoint from it).
	AfterPass func()
	Logger    logrus.FieldLogger
}

// Notifier is told which consume queues grew: the store's long polls.
type Notifier interface {
	// Watching reports whether any partition is watched at all; when not,
	// the dispatcher does not track which ones grew.
	Watching() bool
	// Grew reports that queue id now ends at max.
	Grew(id consumequeue.ID, max int64)
}

// Dispatcher is the goroutine that tails the commit log into the consume
// queues, and its state: how far it got, and the queues it writes.
type Dispatcher struct {
	opts   Options
	log    *commitlog.Log
	queues *consumequeue.Store
	logger logrus.FieldLogger

	dispatched atomic.Int64 // physical offset up to which records are dispatched
	progressMu sync.Mutex
	progress   chan struct{} // closed and replaced when dispatched grows

	retention atomic.Int64 // newest log minimum not yet applied to the queues; -1 if none
	kick      chan struct{}
	requests  chan func()
	stop      chan struct{}
	done      chan struct{}
	stopOnce  sync.Once
	stopErr   error

	// Used only by the dispatching goroutine (and by its owner before
	// Start and after Stop).
	cursor *commitlog.Cursor // at the dispatched offset between passes
	cache  queueCache
	live   liveCache
	gaps   map[consumequeue.ID]bool // partitions whose gap or bad name was already logged
	grown  grown
	window []commitlog.Record // the records read ahead (readWindow)
	warmed int64              // keeps warm's loads from being optimised away
}

// New returns a dispatcher over an opened log and queue store. Until
// Start, its owner may Index records itself (recovery does).
func New(opts Options) *Dispatcher {
	if opts.Logger == nil {
		opts.Logger = logrus.StandardLogger()
	}
	d := &Dispatcher{
		opts:     opts,
		log:      opts.Log,
		queues:   opts.Queues,
		logger:   opts.Logger.WithField("component", "dispatcher"),
		progress: make(chan struct{}),
		kick:     make(chan struct{}, 1),
		requests: make(chan func()),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		cache:    newQueueCache(),
		gaps:     make(map[consumequeue.ID]bool),
		grown:    newGrown(),
	}
	d.retention.Store(-1)
	return d
}

// Start publishes at as dispatched and starts tailing the log from there.
func (d *Dispatcher) Start(at int64) {
	d.publish(at)
	d.cursor = d.log.HeaderCursor(at)
	go d.run()
}

// Dispatched is the physical offset up to which every record is indexed.
func (d *Dispatcher) Dispatched() int64 { return d.dispatched.Load() }

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

// Do runs f on the dispatching goroutine and returns its error; ctx
// bounds the wait (a run already queued still completes). f may call
// DispatchTo, Rewind, ResumeAt and Forget.
func (d *Dispatcher) Do(ctx context.Context, what string, f func() error) error {
	errc := make(chan error, 1)
	select {
	case d.requests <- func() { errc <- f() }:
	case <-d.done:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("dispatcher: %s: not started: %w", what, ctx.Err())
	}
	select {
	case err := <-errc:
		return err
	case <-d.done:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("dispatcher: %s: still running: %w", what, ctx.Err())
	}
}

// Rewind moves the dispatched offset back to to, if it is past it: the
// owner is about to cut the queues and the log there (a follower's
// truncation). On the dispatching goroutine only.
func (d *Dispatcher) Rewind(to int64) {
	if d.dispatched.Load() > to {
		d.publish(to)
	}
}

// ResumeAt moves the cursor, and the dispatched offset, to pos once the log
// was cut or restarted there. On the dispatching goroutine only.
func (d *Dispatcher) ResumeAt(pos int64) {
	d.cursor.Reset(pos)
	if d.dispatched.Load() != pos {
		d.publish(pos)
	}
}

// Forget drops what the dispatcher remembers of the queues of one topic
// incarnation, whose queues its owner deletes. On the dispatching
// goroutine, or before Start.
func (d *Dispatcher) Forget(topic string, id commitlog.TopicID) {
	name := QueueName(topic, id)
	d.cache.forget(topic, id)
	d.live.forget()
	for qid := range d.gaps {
		if qid.Topic == name {
			delete(d.gaps, qid)
		}
	}
}

// OnRetention is the commit log's retention hook (commitlog.Log.OnRetention):
// it runs on the log's retention goroutine, and the queues are only touched
// by the dispatching goroutine, so it just records the new minimum.
func (d *Dispatcher) OnRetention(newMin int64) {
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

// Stop stops the dispatching goroutine, then applies pending retention and
// dispatches everything appended so far, so that the owner's final
// checkpoint covers the whole log.
func (d *Dispatcher) Stop() error {
	d.stopOnce.Do(func() {
		close(d.stop)
		<-d.done
		d.applyRetention()
		d.stopErr = d.DispatchTo(d.log.WriteOffset())
		d.cursor.Close()
	})
	return d.stopErr
}

// publish makes a new dispatched offset visible and wakes WaitDispatched.
func (d *Dispatcher) publish(pos int64) {
	d.dispatched.Store(pos)
	d.progressMu.Lock()
	close(d.progress)
	d.progress = make(chan struct{})
	d.progressMu.Unlock()
}
