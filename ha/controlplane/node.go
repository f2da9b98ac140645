package controlplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/internal/clock"
)

// Config configures one node's control plane.
type Config struct {
	Conn ConnConfig
	// Replicas of each bucket; 0 picks (see OpenBuckets).
	Replicas int

	NodeID       int32
	ReplicaGroup string
	// Advertise is the Kafka HOST:PORT clients reach this node at.
	Advertise string
	// ReplicationAddr is the HOST:PORT followers replicate from.
	ReplicationAddr string

	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// HeartbeatInterval is how often the member key is written. Default 1s.
	HeartbeatInterval time.Duration
	// MemberDeadline is how long a member stays live unheard. Default 5s.
	MemberDeadline time.Duration
	// StartTimeout bounds connecting and opening the buckets. Default 30s.
	StartTimeout time.Duration

	// OnRoleChange is the elector's OnChange (see LeaseConfig).
	OnRoleChange func(LeaseState)
	// Eligible is the elector's Eligible (see LeaseConfig).
	Eligible func() bool
	// Epochs is the elector's Epochs (see LeaseConfig).
	Epochs EpochStore
	// NATSServer is the name of the routed NATS server this node embeds,
	// "" when it joins an external NATS: a node that takes its group's
	// lease moves the buckets' stream leaders there (streamleaders.go).
	NATSServer string
	Clock      clock.Clock
	Logger     logrus.FieldLogger
}

// Node is one broker's membership in the control plane: its heartbeat,
// its replica group's lease, and the watched cluster state.
type Node struct {
	cfg       Config
	log       logrus.FieldLogger
	nc        *nats.Conn
	buckets   Buckets
	members   *Membership
	leaders   *Leaders
	meta      *Metadata
	elector   *Elector
	logEnd    atomic.Pointer[func() int64]
	inSync    atomic.Pointer[func() []int32]
	advertise atomic.Pointer[string]
	roleKick  chan struct{}
	// writeMu orders writes of this node's member record: a heartbeat
	// built before a PublishInSync must not land after it and bring back
	// a follower the leader already stopped waiting for.
	writeMu sync.Mutex

	runCtx    context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// Start connects, opens the buckets, loads the cluster state, then
// heartbeats and contends for the replica group's lease until Close.
func Start(cfg Config) (*Node, error) {
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = time.Second
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.StandardLogger()
	}
	if cfg.Conn.Name == "" {
		cfg.Conn.Name = fmt.Sprintf("unilog node %d", cfg.NodeID)
	}
	n := &Node{cfg: cfg, log: cfg.Logger.WithField("node_id", cfg.NodeID), roleKick: make(chan struct{}, 1)}
	n.advertise.Store(&cfg.Advertise)
	if _, err := n.leaseConfig().withDefaults(); err != nil {
		return nil, err
	}
	var err error
	ctx, cancel := context.WithTimeout(context.Background(), cfg.StartTimeout)
	defer cancel()
	if n.nc, err = Dial(cfg.Conn); err != nil {
		return nil, err
	}
	if err := n.open(ctx); err != nil {
		n.stopWatches()
		n.nc.Close()
		return nil, err
	}
	n.runCtx, n.cancel = context.WithCancel(context.Background())
	n.wg.Add(2)
	go func() { defer n.wg.Done(); n.elector.Run(n.runCtx) }()
	go func() { defer n.wg.Done(); n.heartbeatLoop(n.runCtx) }()
	n.log.WithFields(logrus.Fields{"nats": n.nc.ConnectedUrlRedacted(), "replica_group": cfg.ReplicaGroup, "advertise": cfg.Advertise}).Info("control plane joined")
	return n, nil
}

func (n *Node) open(ctx context.Context) error {
	var err error
	if n.buckets, err = OpenBuckets(ctx, n.nc, n.cfg.Replicas, n.cfg.MemberDeadline); err != nil {
		return err
	}
	if n.elector, err = NewElector(n.buckets.Leases, n.leaseConfig()); err != nil {
		return err
	}
	if n.members, err = WatchMembers(ctx, n.buckets.Members, n.cfg.MemberDeadline, n.cfg.Clock, n.log); err != nil {
		return err
	}
	// Announce this node before anything can place partitions on it.
	if err := n.members.Join(ctx, n.self()); err != nil {
		return err
	}
	if n.leaders, err = WatchLeaders(ctx, n.buckets.Leases, n.log); err != nil {
		return err
	}
	n.meta, err = openMetadata(ctx, n.buckets.Metadata, n.place, n.log, n.cfg.NodeID)
	return err
}

func (n *Node) leaseConfig() LeaseConfig {
	return LeaseConfig{
		Group: n.cfg.ReplicaGroup, NodeID: n.cfg.NodeID,
		Duration: n.cfg.LeaseDuration, RenewDeadline: n.cfg.RenewDeadline, RetryPeriod: n.cfg.RetryPeriod,
		Eligible: n.cfg.Eligible, OnChange: n.roleChanged, Epochs: n.cfg.Epochs, Clock: n.cfg.Clock, Logger: n.cfg.Logger,
	}
}

func (n *Node) stopWatches() {
	if n.meta != nil {
		n.meta.Close()
	}
	if n.leaders != nil {
		n.leaders.Stop()
	}
	if n.members != nil {
		n.members.Stop()
	}
}

// roleChanged forwards the elector's change and re-announces this node.
func (n *Node) roleChanged(s LeaseState) {
	if n.cfg.OnRoleChange != nil {
		n.cfg.OnRoleChange(s)
	}
	select {
	case n.roleKick <- struct{}{}:
	default:
	}
	// A take happens in the elector's Run, which Close waits for, so the
	// wait group is above zero here.
	if s.Role == RoleLeader && n.cfg.NATSServer != "" {
		n.wg.Add(1)
		go func() { defer n.wg.Done(); n.pullStreamLeaders(n.runCtx, n.cfg.NATSServer, s.Epoch) }()
	}
}

func (n *Node) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(n.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.roleKick:
		}
		hctx, cancel := context.WithTimeout(ctx, n.cfg.HeartbeatInterval)
		n.writeMu.Lock()
		err := n.members.Heartbeat(hctx, n.self())
		n.writeMu.Unlock()
		cancel()
		if err != nil {
			n.log.WithError(err).Warn("heartbeat not written")
		}
	}
}

// self is this node's member record now.
func (n *Node) self() Member {
	s := n.elector.State()
	m := Member{
		NodeID: n.cfg.NodeID, Advertise: *n.advertise.Load(), ReplicationAddr: n.cfg.ReplicationAddr,
		ReplicaGroup: n.cfg.ReplicaGroup, Role: s.Role.String(), Epoch: s.Epoch,
	}
	if f := n.logEnd.Load(); f != nil {
		m.LogEndOffset = (*f)()
	}
	if f := n.inSync.Load(); f != nil && s.Role == RoleLeader {
		m.InSync = (*f)()
	}
	return m
}

// place spreads new partitions over the replica groups of the live
// members, round robin in name order; with no live member known yet, on
// this node's group.
func (n *Node) place(partitions int32) []string {
	seen := map[string]bool{n.cfg.ReplicaGroup: true}
	groups := []string{n.cfg.ReplicaGroup}
	for _, m := range n.members.Live() {
		if !seen[m.ReplicaGroup] {
			seen[m.ReplicaGroup] = true
			groups = append(groups, m.ReplicaGroup)
		}
	}
	sort.Strings(groups)
	out := make([]string, partitions)
	for p := range out {
		out[p] = groups[p%len(groups)]
	}
	return out
}

// SetAdvertise changes the advertised Kafka address from the next
// heartbeat on, for a listener whose port is known only once bound.
func (n *Node) SetAdvertise(addr string) {
	n.advertise.Store(&addr)
	n.Announce()
}

// SetLogEndOffset installs the function reporting the physical end of the
// local commit log, published with every heartbeat.
func (n *Node) SetLogEndOffset(f func() int64) { n.logEnd.Store(&f) }

// SetInSync installs the function listing the in-sync followers, published
// with every heartbeat while this node leads.
func (n *Node) SetInSync(f func() []int32) { n.inSync.Store(&f) }

// ErrNotLeading is returned by PublishInSync on a node that does not lead
// its replica group: only a leader's record carries an in-sync set.
var ErrNotLeading = errors.New("ha: not leading the replica group")

// PublishInSync stores this node's member record with ids as its in-sync
// set and returns once the members bucket holds it. A leader calls it
// before a shrink of its in-sync set takes effect, so a follower it no
// longer waits for can never be elected on a stale record. Heartbeats
// that follow carry SetInSync's set again, which by then is this one or
// newer.
//
// The lease must be valid (Elector.Leading) before the write and once it
// is stored, not only the role leader: a leader resuming past its renew
// deadline, its step-down not run yet, may find another node elected on
// the set before, and the shrink would release a high watermark over
// records that node never had.
func (n *Node) PublishInSync(ctx context.Context, ids []int32) error {
	n.writeMu.Lock()
	defer n.writeMu.Unlock()
	m := n.self()
	if m.Role != RoleLeader.String() || !n.elector.Leading(m.Epoch) {
		return fmt.Errorf("ha: publish in-sync set %v of node %d: %w", ids, n.cfg.NodeID, ErrNotLeading)
	}
	m.InSync = slices.Clone(ids)
	if err := n.members.Heartbeat(ctx, m); err != nil {
		return err
	}
	if !n.elector.Leading(m.Epoch) {
		return fmt.Errorf("ha: in-sync set %v of node %d stored past its lease: %w", ids, n.cfg.NodeID, ErrNotLeading)
	}
	return nil
}

// Announce writes the heartbeat now instead of at the next interval, and
// returns at once: for news that may lag (a new advertised address). A
// leader's in-sync set, which must be stored before it counts, goes
// through PublishInSync.
func (n *Node) Announce() {
	select {
	case n.roleKick <- struct{}{}:
	default:
	}
}

// Member is the newest record of a node seen, live or not.
func (n *Node) Member(id int32) (Member, bool) { return n.members.Last(id) }

// LastLed is the newest record node id wrote while it led (see
// Membership.LastLed).
func (n *Node) LastLed(id int32) (Member, bool) { return n.members.LastLed(id) }

// Metadata is the cluster metadata store.
func (n *Node) Metadata() *Metadata { return n.meta }

// Elector is this node's replica group elector.
func (n *Node) Elector() *Elector { return n.elector }

// Members lists the live members.
func (n *Node) Members() []Member { return n.members.Live() }

// Leaders lists every replica group's lease holder.
func (n *Node) Leaders() []GroupLeader { return n.leaders.All() }

// Self is this node's own member record.
func (n *Node) Self() Member { return n.self() }

// LeaseEpoch is the epoch of the group's newest lease as the bucket holds
// it when LeaseEpoch is called, not as this node's watch last showed it
// (Leaders.CatchUp): a decision that only holds if no leader was elected
// since an earlier point (a move's switch) must see every such election.
func (n *Node) LeaseEpoch(ctx context.Context, group string) (uint64, error) {
	if err := n.leaders.CatchUp(ctx); err != nil {
		return 0, err
	}
	return n.leaders.Epoch(group), nil
}

// PartitionLeader is the live member leading a partition's replica
// group and its epoch; false while there is none. For this node's own
// group the elector decides, not the watched lease: a fenced leader still
// sees its own last lease in the bucket until another node takes it.
func (n *Node) PartitionLeader(topic string, partition int32) (Member, uint64, bool) {
	t, ok := n.meta.Topic(topic)
	if !ok || partition < 0 || int(partition) >= len(t.Groups) {
		return Member{}, 0, false
	}
	group := t.Groups[partition]
	gl, ok := n.leaders.Leader(group)
	if group == n.cfg.ReplicaGroup {
		// On every produce: no heartbeat record (log end offset) built.
		s := n.elector.State()
		if s.Role == RoleLeader && n.elector.Leading(s.Epoch) {
			return Member{NodeID: n.cfg.NodeID, Advertise: *n.advertise.Load(), ReplicaGroup: group, Role: s.Role.String(), Epoch: s.Epoch}, s.Epoch, true
		}
		// The elector reads the lease every retry period; the watch
		// behind n.leaders goes quiet for 10 to 20 s when the NATS server
		// holding its consumer dies (the client notices the missing
		// heartbeats that late), which a leader's crash may do.
		if newer := !ok || s.Epoch > gl.Epoch || (s.Epoch == gl.Epoch && s.Leader < 0); newer && s.Epoch > 0 {
			gl, ok = GroupLeader{Group: group, NodeID: s.Leader, Epoch: s.Epoch}, s.Leader >= 0
		}
		if !ok || gl.NodeID == n.cfg.NodeID {
			return Member{}, 0, false
		}
	}
	if !ok {
		return Member{}, 0, false
	}
	for _, m := range n.members.Live() {
		if m.NodeID == gl.NodeID {
			return m, gl.Epoch, true
		}
	}
	return Member{}, 0, false
}

// Close steps down and releases the lease (a follower takes over at
// once), removes this node's heartbeat, and disconnects. With NATS
// unreachable the release and the leave are only logged: the lease lapses
// and the heartbeat ages out as after a crash, which is safe, just slower.
func (n *Node) Close() {
	n.closeOnce.Do(func() {
		n.cancel()
		n.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if !n.nc.IsConnected() {
			// Still step down: nothing may act under the lease after Close.
			ctx, cancel = context.WithCancel(ctx)
			cancel()
		}
		if err := n.elector.Release(ctx); err != nil {
			n.log.WithError(err).Warn("lease not released: followers take over once it lapses")
		}
		if err := n.members.Leave(ctx, n.cfg.NodeID); err != nil {
			n.log.WithError(err).Warn("membership not left: the heartbeat ages out")
		}
		// Disconnect first: ending a watch waits for its subscription to
		// close, which a cut-off connection would only do after timeouts.
		if err := n.nc.Drain(); err != nil {
			n.nc.Close()
		}
		n.stopWatches()
	})
}
