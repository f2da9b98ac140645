package txn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/internal/clock"
)

// Defaults of Options.
const (
	DefaultPartitions = 16
	// DefaultMaxTimeout is Kafka's transaction.max.timeout.ms.
	DefaultMaxTimeout = 15 * time.Minute
	// DefaultIDExpiration is Kafka's transactional.id.expiration.ms.
	DefaultIDExpiration = 7 * 24 * time.Hour
	// expiryCheck is how often the scan (expire) finishes decided
	// transactions, aborts timed-out ones and forgets expired ids.
	expiryCheck = time.Second
	// scanPerID bounds the scan's work on one id, and a request's wait
	// for a decided transaction to be carried out (settle); what is left
	// undone (markers another group's leader has not taken) the next
	// scan carries on.
	scanPerID = 5 * time.Second
)

// Errors a Log or Groups wraps so that the coordinator answers as Kafka's.
var (
	// ErrNotCoordinator: this node no longer leads the log
	// (NOT_COORDINATOR: the client finds the coordinator again).
	ErrNotCoordinator = errors.New("txn: not the coordinator")
	// ErrNotEnoughReplicas: too few replicas are in sync to make a record
	// durable as configured (COORDINATOR_NOT_AVAILABLE: retriable).
	ErrNotEnoughReplicas = errors.New("txn: not enough in-sync replicas")
)

// Markers are the control batches that end a transaction: one in each of
// its partitions, carrying the producer id and epoch, commit or abort.
type Markers struct {
	ProducerID int64
	Epoch      int16
	Commit     bool
	Partitions []TopicPartition
}

// Log is where the coordinator keeps its state and writes markers: the
// broker's commit log. The broker owns the record-batch format.
type Log interface {
	// Append stores rec in the given partition of the transaction-state
	// topic and, when m is not nil, m's markers in the same append, after
	// rec (those of the partitions this node leads: Remote writes the
	// others), and returns once all of it is durable as the broker's
	// configuration asks of an acks=-1 produce. It returns the physical
	// offset where the append ends in the commit log.
	Append(ctx context.Context, partition int32, rec Record, m *Markers) (end int64, err error)
	// Replay calls fn with every record of the partition still stored, in
	// log order.
	Replay(partition int32, fn func(Record) error) error
}

// Remote writes the markers of partitions other replica groups lead:
// the coordinator's log holds only its own group's partitions. The
// broker sends them to each partition's leader (Kafka's WriteTxnMarkers).
type Remote interface {
	// WriteMarkers writes m's markers in the partitions m names that
	// this node does not lead, and returns once every one of their
	// leaders acknowledged them as stored as an acks=-1 produce, retrying
	// until then or until ctx ends. Writing a marker twice is harmless.
	WriteMarkers(ctx context.Context, m Markers) error
}

// Groups is the group coordinator, which owns committed offsets.
type Groups interface {
	// CheckMember returns 0, or the error code an OffsetCommit by this
	// member and generation would be answered with.
	CheckMember(group, member string, instance *string, generation int32) int16
	// Commit makes offsets committed by the group.
	Commit(ctx context.Context, group string, offs []Offset) error
}

// ProducerIDs hands out producer ids never used before.
type ProducerIDs interface {
	Allocate() (int64, error)
}

// Options configure a Coordinator.
type Options struct {
	Log    Log         // required
	Groups Groups      // required
	IDs    ProducerIDs // required
	// Remote writes the markers of other replica groups' partitions;
	// nil: the log's are all the coordinator writes.
	Remote Remote
	// Partitions of the transaction-state topic; it must not change over
	// the life of a data directory.
	Partitions int32
	MaxTimeout time.Duration
	// IDExpiration forgets an id whose last transaction ended this long
	// ago (Kafka's transactional.id.expiration.ms; default
	// DefaultIDExpiration): a tombstone record is appended and the id
	// starts anew, with a new producer id, if it comes back.
	IDExpiration time.Duration
	Clock        clock.Clock
	Logger       logrus.FieldLogger
}

// entry is one transactional id; mu serializes its requests, each of
// which persists the state it answers with before answering.
type entry struct {
	id string // t.ID, which never changes, readable without mu
	mu sync.Mutex
	t  Txn
	// end is where the commit-log record holding t ends (RetentionFloor);
	// 0 when not known (replayed), which the next Compact rewrites; -1
	// when there is none.
	end atomic.Int64
	// writes is what Produce may write for the id (verify.go).
	writes atomic.Pointer[writes]
	// view is t as last published, for DescribeTransactions and
	// ListTransactions: they answer while an EndTxn holds mu waiting for
	// another group's leader to take its markers (nil: no state yet).
	view atomic.Pointer[Txn]
	// marked: this process appended the local markers of the decision
	// in t, so carrying it out again needs only the remote ones; false
	// after Open, which does not know whether a crash cut them.
	marked bool
}

// Coordinator is the transaction coordinator of one broker.
type Coordinator struct {
	opts  Options
	log   logrus.FieldLogger
	clock clock.Clock

	mu     sync.Mutex
	txns   map[string]*entry
	timer  clock.Timer
	closed bool
	// expiring is held by the timeout scan, so Close waits for it.
	expiring sync.WaitGroup
}

// Open replays the transaction-state topic and starts the scan that
// finishes the transactions a crash left between their decision and their
// completion (see the package doc) and aborts those past their timeout.
// Open itself appends nothing, so a node opening as a follower writes
// nothing to a log that is its leader's.
func Open(opts Options) (*Coordinator, error) {
	if opts.Log == nil || opts.Groups == nil || opts.IDs == nil {
		return nil, errors.New("txn: Options.Log, Groups and IDs are required")
	}
	if opts.Partitions <= 0 {
		opts.Partitions = DefaultPartitions
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = DefaultMaxTimeout
	}
	if opts.IDExpiration <= 0 {
		opts.IDExpiration = DefaultIDExpiration
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Logger == nil {
		opts.Logger = logrus.StandardLogger()
	}
	c := &Coordinator{opts: opts, log: opts.Logger, clock: opts.Clock, txns: make(map[string]*entry)}
	records := 0
	for p := range opts.Partitions {
		err := opts.Log.Replay(p, func(r Record) error {
			t, err := decodeRecord(r)
			if err != nil {
				return err
			}
			records++
			if t.State == Dead {
				delete(c.txns, t.ID)
				return nil
			}
			e := &entry{id: t.ID, t: t}
			e.publish()
			c.txns[t.ID] = e
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("txn: replay transaction-state partition %d: %w", p, err)
		}
	}
	c.log.WithFields(logrus.Fields{"records": records, "transactional_ids": len(c.txns)}).Info("transaction coordinator: state loaded")
	// Under mu as expire's own re-arming is: the scan it starts reads
	// and replaces the timer.
	c.mu.Lock()
	c.timer = c.clock.AfterFunc(expiryCheck, c.expire)
	c.mu.Unlock()
	return c, nil
}

// Close stops the timeout scan.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	c.timer.Stop()
	c.mu.Unlock()
	c.expiring.Wait()
}

// lookup returns the id's entry, creating an empty one if create is set.
func (c *Coordinator) lookup(id string, create bool) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.txns[id]
	if e == nil && create {
		e = &entry{id: id, t: Txn{ID: id, ProducerID: -1, Epoch: -1, PrevEpoch: -1, State: Dead}}
		e.end.Store(-1) // no record yet
		c.txns[id] = e
	}
	return e
}

// lockLive returns the id's entry, created if need be, locked, and still
// the id's: an entry the expiry forgot between the lookup and the lock is
// left for a new one.
func (c *Coordinator) lockLive(id string) *entry {
	for {
		e := c.lookup(id, true)
		e.mu.Lock()
		c.mu.Lock()
		live := c.txns[id] == e
		c.mu.Unlock()
		if live {
			return e
		}
		e.mu.Unlock()
	}
}

// entries is every id's entry, for listings and the timeout scan.
func (c *Coordinator) entries() []*entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*entry, 0, len(c.txns))
	for _, e := range c.txns {
		out = append(out, e)
	}
	// In id order, so that a scan's appends are in a repeatable order.
	slices.SortFunc(out, func(a, b *entry) int { return cmp.Compare(a.id, b.id) })
	return out
}

// persist stores next as the id's state, with markers when it ends a
// transaction, and only then makes it the state in memory: an answer
// with an error leaves the state as it was, except a decision's, which
// stands.
func (c *Coordinator) persist(ctx context.Context, e *entry, next Txn, m *Markers) error {
	next.UpdateMs = c.clock.Now().UnixMilli()
	if next.State != Ongoing {
		e.closeWrites()
	}
	end, err := c.opts.Log.Append(ctx, PartitionFor(next.ID, c.opts.Partitions), next.record(), m)
	switch {
	case err == nil:
		e.t = next
		e.end.Store(end)
		e.marked = m != nil
	case m != nil:
		// A failed append may have stored a prefix of it, the decision
		// first and some markers: the decision stands either way, and
		// settle (the next request or scan) carries it out, markers
		// first.
		e.t = next
		e.marked = false
	}
	e.publish()
	return err
}

// end decides t's outcome: the Prepare record and every partition's
// marker in one append, then the offsets (at a commit), then the Complete
// record. Called with the entry's lock held.
func (c *Coordinator) end(ctx context.Context, e *entry, commit bool, epoch int16) error {
	next := e.t.clone()
	next.Epoch = epoch
	next.State = PrepareAbort
	if commit {
		next.State = PrepareCommit
	}
	m := &Markers{ProducerID: next.ProducerID, Epoch: epoch, Commit: commit, Partitions: next.Partitions}
	if err := c.persist(ctx, e, next, m); err != nil {
		return err
	}
	return c.complete(ctx, e)
}

// complete finishes a transaction whose decision and local markers are
// stored: the markers of other replica groups' partitions are written
// through their leaders, the offsets of a commit go to their groups, then
// the Complete record. After a crash the scan calls it for a transaction
// still Prepare, writing the local markers again first (a marker for a
// producer with no open transaction in a partition changes nothing
// there); the remote ones are always written again, for the same reason.
func (c *Coordinator) complete(ctx context.Context, e *entry) error {
	t := &e.t
	commit := t.State == PrepareCommit
	if c.opts.Remote != nil {
		m := Markers{ProducerID: t.ProducerID, Epoch: t.Epoch, Commit: commit, Partitions: t.Partitions}
		if err := c.opts.Remote.WriteMarkers(ctx, m); err != nil {
			return fmt.Errorf("txn: markers in other replica groups: %w", err)
		}
	}
	if commit {
		byGroup := make(map[string][]Offset)
		for _, o := range t.Offsets {
			byGroup[o.Group] = append(byGroup[o.Group], o)
		}
		for g, offs := range byGroup {
			if err := c.opts.Groups.Commit(ctx, g, offs); err != nil {
				return fmt.Errorf("txn: commit offsets of group %q: %w", g, err)
			}
		}
	}
	done := t.clone()
	done.State = CompleteAbort
	if commit {
		done.State = CompleteCommit
	}
	done.Partitions, done.Groups, done.Offsets = nil, nil, nil
	return c.persist(ctx, e, done, nil)
}

// redoMarkers writes a Prepare transaction's markers again, after a crash
// or a failed completion (settle).
func (c *Coordinator) redoMarkers(ctx context.Context, e *entry) error {
	t := &e.t
	m := &Markers{ProducerID: t.ProducerID, Epoch: t.Epoch, Commit: t.State == PrepareCommit, Partitions: t.Partitions}
	return c.persist(ctx, e, t.clone(), m)
}

// expire finishes the transactions left Prepare and aborts the Ongoing
// ones past their timeout, bumping the epoch so that the producer, still
// writing, is fenced (as Kafka's coordinator does since KIP-360); it
// re-arms itself.
func (c *Coordinator) expire() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.expiring.Add(1)
	c.mu.Unlock()
	defer c.expiring.Done()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := c.clock.Now().UnixMilli()
	for _, e := range c.entries() {
		e.mu.Lock()
		// Bounded per id: markers waiting for another replica group's
		// leader, which may be down, must not hold up the others' turn.
		ectx, ecancel := context.WithTimeout(ctx, scanPerID)
		c.settle(ectx, e)
		switch s := e.t.State; {
		case s == Ongoing && now-e.t.StartMs > int64(e.t.TimeoutMs):
			c.abortExpired(ectx, e)
		case s != Ongoing && s != Dead && now-e.t.UpdateMs > c.opts.IDExpiration.Milliseconds():
			c.forget(ectx, e)
		}
		ecancel()
		e.mu.Unlock()
	}
	c.mu.Lock()
	if !c.closed {
		c.timer = c.clock.AfterFunc(expiryCheck, c.expire)
	}
	c.mu.Unlock()
}

// abortExpired aborts a transaction past its timeout under the next
// epoch, remembering the producer's, which may still end that
// transaction and re-initialize.
func (c *Coordinator) abortExpired(ctx context.Context, e *entry) {
	prev := e.t.Epoch
	e.t.PrevEpoch = prev
	if err := c.end(ctx, e, false, prev+1); err != nil {
		c.log.WithFields(logrus.Fields{"transactional_id": e.t.ID, "error": err}).Warn("transaction past its timeout not aborted yet")
		return
	}
	c.log.WithFields(logrus.Fields{"transactional_id": e.t.ID, "producer_id": e.t.ProducerID, "timeout_ms": e.t.TimeoutMs}).Info("transaction aborted: past its timeout")
}

// RetentionFloor is the physical offset below which the commit log may
// delete files without taking an id's state with it (see
// commitlog.Log.AddRetentionFloor): the oldest record holding a live
// state. Replayed states are not placed until Compact rewrites them, so
// until its first pass after Open nothing is deleted.
func (c *Coordinator) RetentionFloor() int64 {
	floor := int64(math.MaxInt64)
	for _, e := range c.entries() {
		if end := e.end.Load(); end >= 0 {
			floor = min(floor, end-1)
		}
	}
	return floor
}

// Compact rewrites, at the head of the log, the state of every id whose
// record ends at or before limit (the oldest commit-log file's end) or
// whose place is not known, so that retention may delete the file: the
// state, not its history, is what must survive. The broker runs it
// periodically; it returns the number of states rewritten.
func (c *Coordinator) Compact(ctx context.Context, limit int64) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	n := 0
	for _, e := range c.entries() {
		if end := e.end.Load(); end < 0 || end > limit {
			continue
		}
		e.mu.Lock()
		err := c.compact(ctx, e)
		e.mu.Unlock()
		if err != nil {
			return n, fmt.Errorf("txn: rewrite the state of %q: %w", e.id, err)
		}
		n++
	}
	return n, nil
}

func (c *Coordinator) compact(ctx context.Context, e *entry) error {
	if c.settle(ctx, e) != 0 {
		return errors.New("decided transaction not completed yet")
	}
	return c.persist(ctx, e, e.t.clone(), nil)
}

// forget expires an id idle past Options.IDExpiration: a tombstone
// record, then the id leaves the map (a request holding its entry finds it
// Dead and answers as for an unknown id).
func (c *Coordinator) forget(ctx context.Context, e *entry) {
	id := e.t.ID
	if _, err := c.opts.Log.Append(ctx, PartitionFor(id, c.opts.Partitions), Record{Key: encodeKey(id)}, nil); err != nil {
		c.log.WithFields(logrus.Fields{"transactional_id": id, "error": err}).Warn("expired transactional id not forgotten yet")
		return
	}
	e.t = Txn{ID: id, ProducerID: -1, Epoch: -1, PrevEpoch: -1, State: Dead}
	e.end.Store(-1)
	e.writes.Store(nil)
	e.view.Store(nil)
	c.mu.Lock()
	if c.txns[id] == e {
		delete(c.txns, id)
	}
	c.mu.Unlock()
}
