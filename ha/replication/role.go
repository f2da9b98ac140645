package replication

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/ha/controlplane"
)

// ErrNotLeader is returned by a Role's waits and checks once the node no
// longer leads (deposed, fenced, or closed meanwhile).
var ErrNotLeader = errors.New("replication: not the leader")

// RoleConfig configures a node's replica role.
type RoleConfig struct {
	Node  int32  // this node's id
	Group string // its replica group
	// Listen is the replication listener's address, advertised to the
	// group's followers.
	Listen string
	// MinInSync and Durable are the LeaderConfig's while leading; Durable
	// also makes a follower acknowledge only what it flushed.
	MinInSync int
	Durable   bool
	// Key is what both ends of a stream prove they hold.
	Key []byte
	// ServerTLS and ClientTLS: mutual TLS for the stream; nil is plaintext.
	ServerTLS, ClientTLS *tls.Config
	Logger               logrus.FieldLogger
}

// Host is the broker side of the role: what happens to the node's own
// state when it starts or stops taking writes, and the follower's changes
// to its log.
type Host interface {
	// Promote makes the node ready to take writes (producer state caught
	// up); Demote stops them at once.
	Promote(ctx context.Context) error
	Demote()
	// TruncateLog and RestartLog are the Follower's Truncate and Restart.
	TruncateLog(to int64) error
	RestartLog(at int64, next []commitlog.PartitionOffset) error
}

// Storage is what a Role needs from the node's data directory (package
// store's Store): the commit log as the leader reads it and the follower
// writes it, the epoch file beside it, the partitions' offsets a
// restarting follower takes, and a retention floor for the slowest
// in-sync follower.
type Storage interface {
	LeaderLog
	FollowerLog
	// FileSize is the size of the log's files, which a follower's must
	// match its leader's.
	FileSize() int64
	// Epochs opens the log's leader-epoch file.
	Epochs() (*commitlog.Epochs, error)
	// OffsetsAt is every partition's next offset at the physical offset
	// at (LeaderConfig.Offsets).
	OffsetsAt(at int64) []commitlog.PartitionOffset
	// AddRetentionFloor keeps every log file ending after floor();
	// remove unregisters it.
	AddRetentionFloor(floor func() int64) (remove func())
}

// Role runs this node's part of its replica group's data plane: a Leader
// while the node holds the group's lease, a Follower of the lease holder
// otherwise. It is what the broker waits on for replicated writes (it has
// the broker's Replication methods), and it decides who may take a lapsed
// lease (Eligible, MayLead's rule).
type Role struct {
	cfg RoleConfig
	log logrus.FieldLogger
	ln  net.Listener

	node atomic.Pointer[controlplane.Node] // set once the control plane started

	// Set by Attach, once the broker opened the data directory.
	b        Host
	st       Storage
	epochs   *commitlog.Epochs
	follower *Follower
	attached chan struct{}

	mu       sync.Mutex
	want     controlplane.LeaseState
	leader   *Leader       // while leading, from the epoch start on
	epoch    uint64        // the epoch writes are taken under; 0: none
	roleCh   chan struct{} // closed and replaced on every role change
	isr      []int32       // the current leader's in-sync set, as last seen
	isrEpoch uint64        // its epoch; 0: none seen
	// lastLeader is the newest lease holder seen, kept once it released.
	lastLeader int32
	term       *termListener // the leadership term's view of ln

	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
}

// NewRole binds the replication listener, so the address it advertises
// is known before the node joins the control plane.
func NewRole(cfg RoleConfig) (*Role, error) {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("replication: listen %s: %w", cfg.Listen, err)
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.StandardLogger()
	}
	r := &Role{
		cfg: cfg, ln: ln,
		log:      cfg.Logger.WithField("component", "replicator"),
		attached: make(chan struct{}),
		roleCh:   make(chan struct{}),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	r.want.Leader, r.lastLeader = -1, -1
	return r, nil
}

// Addr is the replication address to advertise.
func (r *Role) Addr() string { return r.ln.Addr().String() }

// SetNode gives the role the control plane node it takes part through,
// once it started (its OnRoleChange and Eligible are the role's).
func (r *Role) SetNode(n *controlplane.Node) { r.node.Store(n) }

// Attach starts replicating into the data directory st of the broker h.
func (r *Role) Attach(h Host, st Storage) error {
	r.b, r.st = h, st
	var err error
	if r.epochs, err = st.Epochs(); err != nil {
		return err
	}
	r.follower = NewFollower(FollowerConfig{
		Node:     strconv.Itoa(int(r.cfg.Node)),
		Log:      r.st,
		Epochs:   r.epochs,
		FileSize: r.st.FileSize(),
		Truncate: r.b.TruncateLog,
		Restart:  r.b.RestartLog,
		Durable:  r.cfg.Durable,
		Key:      r.cfg.Key,
		TLS:      r.cfg.ClientTLS,
		Logger:   r.log,
	})
	r.node.Load().SetInSync(r.inSync)
	r.mu.Lock()
	r.want = r.node.Load().Elector().State()
	r.mu.Unlock()
	close(r.attached)
	go r.accept()
	go r.run()
	r.nudge()
	// Eligible may have just turned true: contend now, not a period later.
	r.node.Load().Elector().Nudge()
	return nil
}

// RoleChanged is the elector's OnChange. Writes stop here, at once, when
// leadership ends; the rest of the change happens on run's goroutine.
func (r *Role) RoleChanged(s controlplane.LeaseState) {
	r.mu.Lock()
	r.want = s
	if s.Leader >= 0 {
		r.lastLeader = s.Leader
	}
	wasLeading := r.leader != nil
	if s.Role != controlplane.RoleLeader || s.Epoch != r.epoch {
		r.epoch = 0
	}
	r.roleChangedLocked()
	r.mu.Unlock()
	if s.Role != controlplane.RoleLeader && wasLeading {
		r.b.Demote()
	}
	r.nudge()
}

// roleChangedLocked wakes whoever waits on the role (Changed, Settle).
func (r *Role) roleChangedLocked() {
	close(r.roleCh)
	r.roleCh = make(chan struct{})
}

// Settle waits, at most max, until this node takes writes or knows the
// leader to follow, so `unilog broker` says it listens once it serves.
func (r *Role) Settle(max time.Duration) {
	timeout := time.After(max)
	for {
		r.mu.Lock()
		done := r.epoch != 0 || r.want.Role == controlplane.RoleFollower && r.want.Leader >= 0 && r.want.Leader != r.cfg.Node
		ch := r.roleCh
		r.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			return
		}
	}
}

func (r *Role) nudge() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *Role) isAttached() bool {
	select {
	case <-r.attached:
		return true
	default:
		return false
	}
}

// Writable reports whether this node takes writes under epoch: it leads
// it and the epoch's start is in the epoch file.
func (r *Role) Writable(epoch uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return epoch != 0 && r.epoch == epoch
}

// run applies role changes one at a time and keeps following.
func (r *Role) run() {
	defer close(r.done)
	var (
		cur        = controlplane.LeaseState{Leader: -1}
		stopFollow func()
		retry      <-chan time.Time
		isrTick    = time.NewTicker(250 * time.Millisecond)
	)
	defer isrTick.Stop()
	endFollow := func() {
		if stopFollow != nil {
			stopFollow()
			stopFollow = nil
		}
	}
	defer func() {
		endFollow()
		r.stepDown()
	}()
	for {
		select {
		case <-r.stop:
			return
		case <-isrTick.C:
			r.noteISR()
			continue
		case <-retry:
		case <-r.kick:
		}
		retry = nil
		r.mu.Lock()
		s := r.want
		r.mu.Unlock()
		if s == cur {
			continue
		}
		if s.Role == controlplane.RoleLeader {
			endFollow()
			if err := r.lead(s.Epoch); err != nil {
				r.log.WithError(err).WithField("epoch", s.Epoch).Error("cannot lead: not taking writes; retrying")
				retry = time.After(time.Second)
				continue
			}
		} else {
			r.stepDown()
			endFollow()
			if s.Leader >= 0 && s.Leader != r.cfg.Node {
				// Its log may be truncated from here on.
				r.b.Demote()
				stopFollow = r.startFollowing(s)
			}
		}
		cur = s
	}
}

// lead starts a leadership term: the epoch's start goes into the epoch
// file before any write, the state followers did not keep is rebuilt,
// and followers are served.
func (r *Role) lead(epoch uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The lease is taken: the node's view of the metadata (moves that
	// fenced a partition here, partitions that left the group) must be
	// at least as new as the bucket is now before the node takes
	// produce, which it does once Writable.
	if err := r.node.Load().Metadata().CatchUp(ctx); err != nil {
		return fmt.Errorf("catch up with the metadata: %w", err)
	}
	end := r.st.WriteOffset()
	if last, ok := r.epochs.Latest(); !ok || last.Epoch < int64(epoch) {
		if err := r.epochs.Assign(int64(epoch), end); err != nil {
			return err
		}
	}
	if err := r.b.Promote(ctx); err != nil {
		return err
	}
	l := NewLeader(LeaderConfig{
		Log:       r.st,
		Epochs:    r.epochs,
		Epoch:     int64(epoch),
		FileSize:  r.st.FileSize(),
		Offsets:   r.st.OffsetsAt,
		MinInSync: r.cfg.MinInSync,
		Durable:   r.cfg.Durable,
		OnFenced:  r.fenced,
		PublishInSync: func(ctx context.Context, nodes []string) error {
			return r.node.Load().PublishInSync(ctx, nodeIDs(nodes))
		},
		Key:    r.cfg.Key,
		TLS:    r.cfg.ServerTLS,
		Logger: r.log,
	})
	r.mu.Lock()
	if r.want.Role != controlplane.RoleLeader || r.want.Epoch != epoch {
		// Deposed meanwhile: run sees the newer state next.
		r.mu.Unlock()
		l.Close()
		return nil
	}
	term := newTermListener(r.ln.Addr())
	r.leader, r.term, r.epoch = l, term, epoch
	r.roleChangedLocked()
	r.mu.Unlock()
	removeFloor := r.st.AddRetentionFloor(func() int64 { return slowestInSync(l) })
	go func() {
		// Serve returns once the Leader's Close closed the term.
		if err := l.Serve(term); err != nil {
			r.log.WithError(err).Error("replication leader stopped serving")
		}
		removeFloor()
	}()
	r.log.WithFields(logrus.Fields{"epoch": epoch, "start": end, "replication_addr": r.Addr()}).Info("leading: serving followers")
	return nil
}

// HandOver is a leader's controlled shutdown, as Kafka's: it stops taking
// writes, waits at most wait for an in-sync follower to reach the end of
// its log, then resigns the lease under ctx, so that follower, which then
// holds every record this node stored, takes it at once with the next
// epoch instead of waiting for the lease to lapse. A node that does not
// lead only resigns: it must not take the lease while it stops.
func (r *Role) HandOver(ctx context.Context, wait time.Duration) error {
	r.mu.Lock()
	l := r.leader
	r.epoch = 0
	r.mu.Unlock()
	elector := r.node.Load().Elector()
	if l == nil {
		return elector.Resign(ctx)
	}
	r.b.Demote()
	end := r.st.WriteOffset()
	timeout := time.After(wait)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		at, inSync := atEnd(l, end)
		if inSync == 0 {
			// Nobody to wait for: a lone node, or followers out of sync,
			// which may not take the lease anyway.
			return elector.Resign(ctx)
		}
		if len(at) > 0 {
			// Published first: a follower takes the lease only if the
			// last leader's record names it in sync, and one that joined
			// since the last heartbeat is not named yet.
			if err := r.node.Load().PublishInSync(ctx, inSyncOf(l)); err != nil {
				r.log.WithError(err).Warn("in-sync set not published before the hand-over")
			}
			r.log.WithFields(logrus.Fields{"followers_at_end": at, "log_end": end}).Info("handing the lease over: in-sync followers hold the whole log")
			return elector.Resign(ctx)
		}
		select {
		case <-timeout:
			r.log.WithFields(logrus.Fields{"log_end": end, "waited": wait}).Warn("no in-sync follower reached the log end: releasing the lease to the usual election")
			return elector.Resign(ctx)
		case <-t.C:
		}
	}
}

// atEnd lists the in-sync followers of l whose log reaches end, and
// counts the in-sync ones.
func atEnd(l *Leader, end int64) (at []string, inSync int) {
	for _, f := range l.Followers() {
		if !f.InSync {
			continue
		}
		inSync++
		if f.End >= end {
			at = append(at, f.Node)
		}
	}
	return at, inSync
}

// slowestInSync is the retention floor a leader keeps for its in-sync
// followers: the lowest end among them.
func slowestInSync(l *Leader) int64 {
	floor := int64(math.MaxInt64)
	for _, f := range l.Followers() {
		if f.InSync {
			floor = min(floor, f.End)
		}
	}
	return floor
}

// stepDown ends a leadership term.
func (r *Role) stepDown() {
	r.mu.Lock()
	l := r.leader
	r.leader, r.term, r.epoch = nil, nil, 0
	r.mu.Unlock()
	if l != nil {
		l.Close()
		r.log.Info("leadership ended: replication leader closed")
	}
}

// fenced is the Leader's OnFenced: a follower knows a newer epoch, so
// this node stops taking writes now; its lease renewal fails next.
func (r *Role) fenced(newer int64) {
	r.mu.Lock()
	r.epoch = 0
	r.mu.Unlock()
	r.b.Demote()
	r.log.WithField("newer_epoch", newer).Warn("fenced by a newer epoch: writes stopped")
}

// startFollowing replicates from the leader of s until the returned
// function is called (which waits for the follower to stop).
func (r *Role) startFollowing(s controlplane.LeaseState) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.follow(ctx, s)
	}()
	return func() {
		cancel()
		<-done
	}
}

// follow keeps a session with the leader of s, reconnecting with backoff.
// It dials only the replication address the lease holder's own member
// record advertises in this replica group: a lease naming a node that is
// no member of it (written by something that is not a node) is not
// followed anywhere, and said so once.
func (r *Role) follow(ctx context.Context, s controlplane.LeaseState) {
	const minBackoff, maxBackoff = 50 * time.Millisecond, 2 * time.Second
	backoff := minBackoff
	var lastErr string
	warned := false
	for ctx.Err() == nil {
		m, ok := r.node.Load().Member(s.Leader)
		member := ok && m.ReplicaGroup == r.cfg.Group && m.ReplicationAddr != ""
		if !member && !warned {
			warned = true
			r.log.WithFields(logrus.Fields{"leader": s.Leader, "epoch": s.Epoch, "replica_group": r.cfg.Group, "member_record": ok, "its_group": m.ReplicaGroup}).
				Warn("the lease holder is no member of this replica group with a replication address: not following it")
		}
		if member {
			began := time.Now()
			err := r.follower.Follow(ctx, m.ReplicationAddr, int64(s.Epoch))
			if ctx.Err() != nil {
				return
			}
			if time.Since(began) > maxBackoff {
				backoff = minBackoff
			}
			// The leader may be gone: the elector reads the lease now
			// rather than at its next period.
			r.node.Load().Elector().Nudge()
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				r.log.WithError(err).WithFields(logrus.Fields{"leader": s.Leader, "epoch": s.Epoch}).Warn("replication session ended; reconnecting")
			}
			if errors.Is(err, ErrFileSize) {
				backoff = maxBackoff
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// inSync is the in-sync set this node publishes while it leads.
func (r *Role) inSync() []int32 {
	r.mu.Lock()
	l := r.leader
	r.mu.Unlock()
	if l == nil {
		return nil
	}
	return inSyncOf(l)
}

func inSyncOf(l *Leader) []int32 { return nodeIDs(l.InSync()) }

// nodeIDs converts followers' node names (their node ids, as
// FollowerConfig.Node is set) to ids. Any other name is left out: MayLead
// never lets such a node lead, so it need not be published.
func nodeIDs(nodes []string) []int32 {
	var out []int32
	for _, node := range nodes {
		if id, err := strconv.ParseInt(node, 10, 32); err == nil {
			out = append(out, int32(id))
		}
	}
	return out
}

// noteISR remembers the current leader's in-sync set: a leader that stops
// cleanly deletes its member record, and its followers must still know.
func (r *Role) noteISR() {
	st := r.node.Load().Elector().State()
	leader := st.Leader
	if leader < 0 {
		// Released: the set the releasing leader published last.
		r.mu.Lock()
		leader = r.lastLeader
		r.mu.Unlock()
	}
	if leader < 0 || leader == r.cfg.Node {
		return
	}
	m, ok := r.node.Load().LastLed(leader)
	if !ok || m.Epoch != st.Epoch {
		return
	}
	r.mu.Lock()
	changed := m.Epoch != r.isrEpoch || !slices.Equal(m.InSync, r.isr)
	r.isr, r.isrEpoch = m.InSync, m.Epoch
	r.mu.Unlock()
	if changed {
		// This node may just have become eligible for a lease that
		// lapsed or was released: contend now, not a period later.
		r.node.Load().Elector().Nudge()
	}
}

// Eligible is the elector's Eligible (MayLead's rule over the
// last leader's in-sync set and the live members' logs). Nothing is
// eligible before the data directory is open (Attach nudges the elector
// then).
func (r *Role) Eligible() bool {
	node := r.node.Load()
	if node == nil || !r.isAttached() {
		return false
	}
	st := node.Elector().State()
	r.noteISR()
	r.mu.Lock()
	known := r.isrEpoch != 0 && r.isrEpoch == st.Epoch
	isr := r.isr
	r.mu.Unlock()
	var peers []Candidate
	for _, m := range node.Members() {
		peers = append(peers, Candidate{Node: m.NodeID, Group: m.ReplicaGroup, LogEnd: m.LogEndOffset})
	}
	self := Candidate{Node: r.cfg.Node, Group: r.cfg.Group, LogEnd: r.st.WriteOffset()}
	return MayLead(self, st.Leader, isr, known, peers)
}

// HighWatermark is the broker's Replication.HighWatermark.
func (r *Role) HighWatermark() int64 {
	if l := r.current(); l != nil {
		return l.HighWatermark()
	}
	return 0
}

// Changed is the broker's Replication.Changed.
func (r *Role) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leader != nil {
		return r.leader.Changed()
	}
	return r.roleCh
}

// WaitReplicated is the broker's Replication.WaitReplicated.
func (r *Role) WaitReplicated(ctx context.Context, end int64) error {
	l := r.current()
	if l == nil {
		return fmt.Errorf("replicate to %d: %w", end, ErrNotLeader)
	}
	return leaderError(l.WaitReplicated(ctx, end))
}

// CheckInSync is the broker's Replication.CheckInSync.
func (r *Role) CheckInSync() error {
	l := r.current()
	if l == nil {
		return fmt.Errorf("check the in-sync set: %w", ErrNotLeader)
	}
	return leaderError(l.CheckInSync())
}

// leaderError says a Leader closed or fenced is no leader any more.
func leaderError(err error) error {
	if errors.Is(err, ErrFenced) || errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	return err
}

// Followers is the broker's Replication.Followers.
func (r *Role) Followers() []FollowerStatus {
	l := r.current()
	if l == nil {
		return nil
	}
	return l.Followers()
}

func (r *Role) current() *Leader {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leader
}

// Close stops replicating and the listener.
func (r *Role) Close() {
	r.closed.Do(func() {
		close(r.stop)
		r.ln.Close()
		if r.isAttached() {
			<-r.done
		}
	})
}

// accept owns the replication listener for the whole run: connections
// go to the current leadership term, and are closed while there is none
// (the follower dials again).
func (r *Role) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		t := r.term
		r.mu.Unlock()
		if t == nil {
			c.Close()
			continue
		}
		select {
		case t.conns <- c:
		case <-t.closed:
			c.Close()
		}
	}
}
