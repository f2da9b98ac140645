package controlplane

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/internal/clock"
)

// Role is a node's part in its replica group.
type Role int

const (
	// RoleFollower takes no writes: it replicates from the leader.
	RoleFollower Role = iota
	// RoleLeader holds the group's lease and takes its writes.
	RoleLeader
)

func (r Role) String() string {
	if r == RoleLeader {
		return "leader"
	}
	return "follower"
}

// LeaseState is a node's view of its replica group: what the broker and the
// replica role (replication.Role) act on. Epoch and Leader describe the newest lease this node
// has seen (its own while it leads); Leader is -1 while none is known.
type LeaseState struct {
	Group  string
	Role   Role
	Epoch  uint64
	Leader int32
}

// leaseValue is the value of leases.<group> (see the package doc).
type leaseValue struct {
	Group      string `json:"group"`
	Holder     int32  `json:"holder"`
	Epoch      uint64 `json:"epoch"`
	DurationMs int64  `json:"duration_ms"`
	Released   bool   `json:"released,omitempty"`
}

// Lease timing defaults; see the package doc for why they are safe.
const (
	DefaultLeaseDuration = 1500 * time.Millisecond
	DefaultRenewDeadline = time.Second
	DefaultRetryPeriod   = 250 * time.Millisecond
)

// ErrLeaseTiming reports a renew deadline that leaves no safety margin.
var ErrLeaseTiming = errors.New("ha: renew deadline must be shorter than the lease duration minus a margin")

// LeaseConfig configures one node's elector for its replica group.
type LeaseConfig struct {
	Group  string
	NodeID int32
	// Duration is how long a lease stands once written, unrenewed.
	Duration time.Duration
	// RenewDeadline is how long after sending a renewal the holder keeps
	// acting as leader without a newer successful one.
	RenewDeadline time.Duration
	// RetryPeriod is how often the holder renews and others contend.
	RetryPeriod time.Duration
	// Eligible, when set, gates contending (a follower that is not caught
	// up must not lead); nil means always eligible.
	Eligible func() bool
	// OnChange is called, in order, after every change of LeaseState. The
	// call that takes leadership away returns before the lease can be
	// taken by another node, as long as it returns within the margin.
	OnChange func(LeaseState)
	// Epochs, when set, keeps the epoch marks across restarts: NewElector
	// loads them, and they are stored before this node writes a lease of
	// a higher epoch or acts on one. Nil keeps them in memory only.
	Epochs EpochStore
	Clock  clock.Clock
	Logger logrus.FieldLogger
}

func (c LeaseConfig) withDefaults() (LeaseConfig, error) {
	if c.Duration <= 0 {
		c.Duration = DefaultLeaseDuration
	}
	if c.RenewDeadline <= 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod <= 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Logger == nil {
		c.Logger = logrus.StandardLogger()
	}
	// The margin absorbs clock rate drift and the time the fencing
	// callback takes; a tenth of the lease is generous for both.
	if c.RenewDeadline > c.Duration-c.Duration/10 || c.RetryPeriod >= c.RenewDeadline {
		return c, fmt.Errorf("%w: duration %s, renew deadline %s, retry period %s", ErrLeaseTiming, c.Duration, c.RenewDeadline, c.RetryPeriod)
	}
	if !validToken(c.Group) {
		return c, fmt.Errorf("ha: replica group %q: want letters, digits, '-' or '_'", c.Group)
	}
	return c, nil
}

// Elector holds or contends for the lease of one replica group.
type Elector struct {
	cfg LeaseConfig
	kv  jetstream.KeyValue
	key string
	log logrus.FieldLogger

	// transMu orders state changes with their OnChange calls.
	transMu sync.Mutex

	mu    sync.Mutex
	state LeaseState
	// While leading: the revision of our lease and when we stop acting.
	rev        uint64
	validUntil time.Time
	fence      clock.Timer
	// While following: the lease revision seen and when it was first seen.
	obsRev uint64
	obsAt  time.Time
	// The newest revision the watch delivered and when (see watch), and
	// the timer that contends the moment the observed lease lapses.
	watchRev uint64
	watchAt  time.Time
	lapse    clock.Timer
	// resigned: this node hands its lease over and never contends again.
	resigned bool
	// marks (as stored in cfg.Epochs): a new lease is above Reserved, and
	// one below Seen is never followed.
	marks EpochMarks
	// ignored is the last lease ignored for its older epoch, reported
	// once.
	ignored leaseValue
	// nudge makes Run tick before its next period (Nudge).
	nudge chan struct{}

	reads readStats
}

// LeaseReadStats counts the lease reads of a contending node that failed
// or that it ignored.
type LeaseReadStats struct {
	// Failed reads: NATS did not answer, or answered an error.
	Failed uint64
	// Stale reads: an older revision than one already seen (a lagging
	// replica answered), with no newer epoch.
	Stale uint64
	// OlderEpoch reads: a lease below the highest epoch this node has
	// seen (a forged or reset key); it is not followed.
	OlderEpoch uint64
}

// readErrLogEvery spaces the info lines about failed lease reads: a NATS
// outage fails one read a retry period for as long as it lasts.
const readErrLogEvery = 10 * time.Second

type readStats struct {
	failed, stale, olderEpoch atomic.Uint64
	// Under Elector.mu: when a failed read was last logged, and how many
	// failed since.
	loggedAt   time.Time
	unreported uint64
}

// NewElector returns a follower that contends on Tick.
func NewElector(kv jetstream.KeyValue, cfg LeaseConfig) (*Elector, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Elector{
		cfg:   cfg,
		kv:    kv,
		key:   leaseKey(cfg.Group),
		log:   cfg.Logger.WithFields(logrus.Fields{"replica_group": cfg.Group, "node_id": cfg.NodeID}),
		state: LeaseState{Group: cfg.Group, Leader: -1},
		nudge: make(chan struct{}, 1),
	}
	if cfg.Epochs != nil {
		if e.marks, err = cfg.Epochs.Load(); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// ReadStats counts the lease reads that failed or were ignored.
func (e *Elector) ReadStats() LeaseReadStats {
	return LeaseReadStats{Failed: e.reads.failed.Load(), Stale: e.reads.stale.Load(), OlderEpoch: e.reads.olderEpoch.Load()}
}

func leaseKey(group string) string { return "lease." + group }

// State is the current view.
func (e *Elector) State() LeaseState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

// Leading reports whether this node may still act as leader under epoch.
// It checks the clock itself, so a write path that calls it is fenced at
// the deadline even if the fencing timer runs late.
func (e *Elector) Leading(epoch uint64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state.Role == RoleLeader && e.state.Epoch == epoch && e.cfg.Clock.Now().Before(e.validUntil)
}

// Run ticks every retry period until ctx ends, and as soon as the lease
// key changes or the lease seen lapses.
func (e *Elector) Run(ctx context.Context) {
	t := time.NewTicker(e.cfg.RetryPeriod)
	defer t.Stop()
	if w, err := e.kv.Watch(ctx, e.key, jetstream.IgnoreDeletes()); err != nil {
		e.log.WithError(err).Info("lease key not watched: a lapse or release is seen at the next retry period")
	} else {
		defer w.Stop()
		go e.watch(w)
	}
	defer e.stopLapse()
	for {
		e.Tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-e.nudge:
		}
	}
}

// Nudge makes Run tick now rather than at its next period: a node whose
// Eligible just turned true contends at once. Ticks stay sequential, so a
// renewal never races another.
func (e *Elector) Nudge() {
	select {
	case e.nudge <- struct{}{}:
	default:
	}
}

// watch notes when each revision of the lease key is first delivered. A
// contender judges a lease's expiry from the moment it first saw its
// revision; a watch sees a renewal within milliseconds of its store,
// where a read every retry period sees it up to a period late, and every
// such delay adds to a failover. The moment is still after the revision
// was stored, so the timing argument of the package doc holds. A release
// or a new holder makes a follower tick at once (a renewal need not: the
// lapse timer covers it), so a released lease is taken without delay.
func (e *Elector) watch(w jetstream.KeyWatcher) {
	for entry := range w.Updates() {
		if entry == nil {
			continue
		}
		var v leaseValue
		news := decodeValue(entry.Value(), &v) == nil
		now := e.cfg.Clock.Now()
		e.mu.Lock()
		if entry.Revision() > e.watchRev {
			e.watchRev, e.watchAt = entry.Revision(), now
		}
		news = news && e.state.Role == RoleFollower && (v.Released || v.Holder != e.state.Leader || v.Epoch != e.state.Epoch)
		e.mu.Unlock()
		if news {
			e.Nudge()
		}
	}
}

// armLapse makes Run tick when the lease observed lapses, in after: the
// contender then takes it at once instead of at its next period.
func (e *Elector) armLapse(after time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lapse != nil {
		e.lapse.Stop()
	}
	e.lapse = e.cfg.Clock.AfterFunc(after, e.Nudge)
}

func (e *Elector) stopLapse() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lapse != nil {
		e.lapse.Stop()
		e.lapse = nil
	}
}

// Tick renews the lease when leading, contends otherwise; a resigned
// elector does neither.
func (e *Elector) Tick(ctx context.Context) {
	e.mu.Lock()
	leading, resigned := e.state.Role == RoleLeader, e.resigned
	e.mu.Unlock()
	if resigned {
		return
	}
	if leading {
		e.renew(ctx)
		return
	}
	e.contend(ctx)
}

func (e *Elector) renew(ctx context.Context) {
	e.mu.Lock()
	rev, epoch, until := e.rev, e.state.Epoch, e.validUntil
	e.mu.Unlock()
	sent := e.cfg.Clock.Now()
	val, err := encodeValue(leaseValue{Group: e.cfg.Group, Holder: e.cfg.NodeID, Epoch: epoch, DurationMs: e.cfg.Duration.Milliseconds()})
	if err != nil {
		e.log.WithError(err).Error("lease renewal not encoded")
		return
	}
	// A renewal answered after we stopped acting is worth nothing.
	rctx, cancel := context.WithTimeout(ctx, until.Sub(sent))
	newRev, err := e.updateOwn(rctx, val, rev, epoch)
	cancel()

	e.transMu.Lock()
	defer e.transMu.Unlock()
	e.mu.Lock()
	if e.state.Role != RoleLeader || e.state.Epoch != epoch {
		e.mu.Unlock()
		return
	}
	switch {
	case err == nil:
		e.rev = newRev
		e.armFence(sent.Add(e.cfg.RenewDeadline))
		e.mu.Unlock()
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		e.log.WithField("epoch", epoch).Warn("lease taken by another node: stepping down")
		e.stepDownLocked()
	default:
		e.mu.Unlock()
		e.log.WithError(err).WithField("epoch", epoch).Warn("lease renewal failed")
	}
}

// stepDownLocked makes this node a follower and reports it; called with
// transMu and mu held, it releases mu.
func (e *Elector) stepDownLocked() {
	if e.fence != nil {
		e.fence.Stop()
		e.fence = nil
	}
	e.state.Role = RoleFollower
	e.validUntil = time.Time{}
	s := e.state
	e.mu.Unlock()
	if e.cfg.OnChange != nil {
		e.cfg.OnChange(s)
	}
}

// armFence (re)schedules the step-down at until; called with mu held.
func (e *Elector) armFence(until time.Time) {
	if e.fence != nil {
		e.fence.Stop()
	}
	e.validUntil = until
	e.fence = e.cfg.Clock.AfterFunc(until.Sub(e.cfg.Clock.Now()), e.fenceIfExpired)
}

func (e *Elector) fenceIfExpired() {
	e.transMu.Lock()
	defer e.transMu.Unlock()
	e.mu.Lock()
	if e.state.Role != RoleLeader || e.cfg.Clock.Now().Before(e.validUntil) {
		e.mu.Unlock()
		return
	}
	e.log.WithField("epoch", e.state.Epoch).Warn("lease not renewed in time: stepping down")
	e.stepDownLocked()
}

func (e *Elector) contend(ctx context.Context) {
	// Bounded as a renewal is: a read or take left to the client's
	// default timeout (5 s) while the bucket's stream elects a leader
	// would hold every tick, and the takeover, that long after the
	// bucket answers again.
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RenewDeadline)
	defer cancel()
	entry, err := e.kv.Get(ctx, e.key)
	now := e.cfg.Clock.Now()
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		e.take(ctx, now, 0, leaseValue{})
		return
	}
	if err != nil {
		e.readFailed(now, err)
		return
	}
	var cur leaseValue
	if err := decodeValue(entry.Value(), &cur); err != nil {
		// Never overwrite what cannot be read: its epoch is unknown.
		e.log.WithError(err).WithField("key", e.key).Error("lease value unreadable: not contending")
		return
	}
	if !e.observe(entry.Revision(), now, cur) {
		return
	}
	e.mu.Lock()
	standing := now.Sub(e.obsAt)
	e.mu.Unlock()
	// Our own node id means a previous run of this node held it: node ids
	// are unique, so nobody else acts under it.
	duration := time.Duration(cur.DurationMs) * time.Millisecond
	if cur.Released || cur.Holder == e.cfg.NodeID || standing >= duration {
		e.take(ctx, now, entry.Revision(), cur)
		return
	}
	e.armLapse(duration - standing)
}

// readFailed counts a failed lease read and reports it at info, at most
// once every readErrLogEvery: while reads fail this node cannot take a
// lapsed lease, which would otherwise go unexplained.
func (e *Elector) readFailed(now time.Time, err error) {
	e.reads.failed.Add(1)
	e.mu.Lock()
	e.reads.unreported++
	n := e.reads.unreported
	due := now.Sub(e.reads.loggedAt) >= readErrLogEvery
	if due {
		e.reads.loggedAt, e.reads.unreported = now, 0
	}
	e.mu.Unlock()
	if due {
		e.log.WithError(err).WithField("failed_reads", n).Info("lease not read: cannot tell whether it lapsed")
	}
}

// observe records the lease seen at rev and reports a change of leader.
// It returns false for a read to ignore: an older revision than one
// already seen that brings no newer epoch (a lagging replica answered, and
// acting on it would take this node back to an older leader), or a
// lease whose newer epoch could not be stored. A lease below the highest
// epoch seen still counts for its timing (it stands until it lapses, then
// the next lease is above both), but is never followed.
func (e *Elector) observe(rev uint64, now time.Time, cur leaseValue) bool {
	e.transMu.Lock()
	defer e.transMu.Unlock()
	e.mu.Lock()
	seenRev, marks := e.obsRev, e.marks
	stale := rev < seenRev && cur.Epoch <= marks.Seen
	if !stale && rev != e.obsRev {
		e.obsRev, e.obsAt = rev, now
		if rev == e.watchRev && e.watchAt.Before(now) {
			e.obsAt = e.watchAt
		}
	}
	report := cur.Epoch < marks.Seen && (cur.Holder != e.ignored.Holder || cur.Epoch != e.ignored.Epoch)
	if report {
		e.ignored = cur
	}
	e.mu.Unlock()
	fields := logrus.Fields{"revision": rev, "holder": cur.Holder, "epoch": cur.Epoch}
	switch {
	case stale:
		e.reads.stale.Add(1)
		e.log.WithFields(fields).WithField("seen_revision", seenRev).Info("stale lease read ignored: an older revision than one already seen")
		return false
	case cur.Epoch < marks.Seen:
		e.reads.olderEpoch.Add(1)
		if report {
			e.log.WithFields(fields).WithField("seen_epoch", marks.Seen).Warn("lease below the highest epoch this node has acted on, written by something that is not a node or a reset bucket: not following it")
		}
		return true
	case cur.Epoch > marks.Seen:
		if err := e.storeMarks(EpochMarks{Seen: cur.Epoch, Reserved: max(marks.Reserved, cur.Epoch)}); err != nil {
			e.log.WithError(err).WithFields(fields).Error("newer lease epoch not stored: not following it")
			return false
		}
	}
	leader := cur.Holder
	if cur.Released {
		leader = -1
	}
	e.mu.Lock()
	if e.state.Epoch == cur.Epoch && e.state.Leader == leader {
		e.mu.Unlock()
		return true
	}
	e.state.Epoch, e.state.Leader = cur.Epoch, leader
	s := e.state
	e.mu.Unlock()
	if e.cfg.OnChange != nil {
		e.cfg.OnChange(s)
	}
	return true
}

// storeMarks stores m, durably when an EpochStore is set, before
// anything acts on it. Only the Tick goroutine changes the marks, so
// stores never race.
func (e *Elector) storeMarks(m EpochMarks) error {
	if e.cfg.Epochs != nil {
		if err := e.cfg.Epochs.Store(m); err != nil {
			return err
		}
	}
	e.mu.Lock()
	e.marks = m
	e.mu.Unlock()
	return nil
}

// take writes a new lease with a higher epoch, compare-and-set on rev (0:
// the key must not exist).
func (e *Elector) take(ctx context.Context, sent time.Time, rev uint64, cur leaseValue) {
	if e.cfg.Eligible != nil && !e.cfg.Eligible() {
		return
	}
	e.mu.Lock()
	marks := e.marks
	e.mu.Unlock()
	epoch := max(marks.Reserved, marks.Seen, cur.Epoch) + 1
	val, err := encodeValue(leaseValue{Group: e.cfg.Group, Holder: e.cfg.NodeID, Epoch: epoch, DurationMs: e.cfg.Duration.Milliseconds()})
	if err != nil {
		e.log.WithError(err).Error("lease not encoded")
		return
	}
	// Reserved before the lease is written: a write whose answer is lost
	// may still have been applied.
	if err := e.storeMarks(EpochMarks{Seen: marks.Seen, Reserved: epoch}); err != nil {
		e.log.WithError(err).WithField("epoch", epoch).Error("lease epoch not stored: not taking the lease")
		return
	}
	var newRev uint64
	if rev == 0 {
		newRev, err = e.kv.Create(ctx, e.key, val)
	} else {
		newRev, err = e.kv.Update(ctx, e.key, val, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return
	}
	if err != nil {
		e.log.WithError(err).Debug("lease not taken")
		return
	}
	if err := e.storeMarks(EpochMarks{Seen: epoch, Reserved: epoch}); err != nil {
		// Not acting on it: the lease lapses, or this node takes it
		// back (its own) at the next tick.
		e.log.WithError(err).WithField("epoch", epoch).Error("lease epoch not stored: not leading")
		return
	}
	e.transMu.Lock()
	defer e.transMu.Unlock()
	e.mu.Lock()
	e.rev = newRev
	e.state = LeaseState{Group: e.cfg.Group, Role: RoleLeader, Epoch: epoch, Leader: e.cfg.NodeID}
	e.armFence(sent.Add(e.cfg.RenewDeadline))
	s := e.state
	e.mu.Unlock()
	e.log.WithField("epoch", epoch).Info("took the replica group lease: leading")
	if e.cfg.OnChange != nil {
		e.cfg.OnChange(s)
	}
}

// updateOwnTries bounds updateOwn's read-backs: each needs a revision
// newer than the write it lost to, and a lagging replica may answer one
// with an older one.
const updateOwnTries = 5

// updateOwn writes val over our lease of epoch, compare-and-set on rev.
// A write the server applied but whose answer was lost (a renewal timed
// out or cancelled by Close), or a renewal still in flight when Release
// writes, leaves rev behind the key's revision while the lease is still
// ours; then the key is read back and, while it still holds our
// unreleased epoch, written at its revision, again if that read came
// from a replica that had not seen the newer one. A lease another node
// holds is ErrKeyRevisionMismatch.
func (e *Elector) updateOwn(ctx context.Context, val []byte, rev, epoch uint64) (uint64, error) {
	newRev, err := e.kv.Update(ctx, e.key, val, rev)
	for try := 0; try < updateOwnTries && errors.Is(err, jetstream.ErrKeyRevisionMismatch); try++ {
		entry, gerr := e.kv.Get(ctx, e.key)
		if gerr != nil {
			return 0, err
		}
		var cur leaseValue
		if derr := decodeValue(entry.Value(), &cur); derr != nil || cur.Holder != e.cfg.NodeID || cur.Epoch != epoch || cur.Released {
			return 0, err
		}
		newRev, err = e.kv.Update(ctx, e.key, val, entry.Revision())
	}
	return newRev, err
}

// Resign releases the lease (see Release) and stops this node from ever
// contending again: a node handing its lease over before it stops must
// not take it back, as a node that held the newest lease may.
func (e *Elector) Resign(ctx context.Context) error {
	e.mu.Lock()
	e.resigned = true
	e.mu.Unlock()
	e.stopLapse()
	return e.Release(ctx)
}

// Release steps down and marks the lease released, so a follower takes
// over at once instead of waiting for it to lapse. The epoch stays in the
// value: the next lease is still higher.
func (e *Elector) Release(ctx context.Context) error {
	e.transMu.Lock()
	e.mu.Lock()
	if e.state.Role != RoleLeader {
		e.mu.Unlock()
		e.transMu.Unlock()
		return nil
	}
	rev, epoch := e.rev, e.state.Epoch
	e.stepDownLocked()
	e.transMu.Unlock()
	val, err := encodeValue(leaseValue{Group: e.cfg.Group, Holder: e.cfg.NodeID, Epoch: epoch, DurationMs: e.cfg.Duration.Milliseconds(), Released: true})
	if err != nil {
		return fmt.Errorf("ha: release lease %s: %w", e.key, err)
	}
	_, err = e.updateOwn(ctx, val, rev, epoch)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return nil // another node holds it now: nothing of ours to release
	}
	if err != nil {
		return fmt.Errorf("ha: release lease %s: %w", e.key, err)
	}
	return nil
}
