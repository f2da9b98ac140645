package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/dispatcher"
	"github.com/unilog/unilog/ha/controlplane"
	"github.com/unilog/unilog/ha/replication"
	"github.com/unilog/unilog/internal/tlsconf"
)

// replicationFlags configure the data plane of `unilog broker`.
func replicationFlags() []cli.Flag {
	env := func(name string) []string { return []string{"UNILOG_" + name} }
	return []cli.Flag{
		&cli.StringFlag{Name: "replication-listen", Value: "127.0.0.1:0", Usage: "`HOST:PORT` followers of this node's replica group replicate from while it leads; advertised in its member record, so give a routable address across machines (port 0 picks a free one)", EnvVars: env("REPLICATION_LISTEN")},
		&cli.StringFlag{Name: "replication", Value: "sync", Usage: "sync (acks=all and offset commits wait until the in-sync followers have the records, flushed with --flush sync) or async (they do not wait; consumers still see only replicated records)", EnvVars: env("REPLICATION")},
		&cli.IntFlag{Name: "min-insync", Value: 1, Usage: "replicas, the leader counted, that must be in sync for an acks=all produce or an offset commit under sync replication, as Kafka's min.insync.replicas; fewer answer NOT_ENOUGH_REPLICAS and store nothing (1: the leader alone, so a leader left alone keeps taking writes; 2 on three nodes: the leader and one follower)", EnvVars: env("MIN_INSYNC")},
		&cli.StringFlag{Name: "replication-tls-ca", Usage: "mutual TLS on the replication stream: both ends present --tls-cert/--tls-key and verify the other's against this PEM CA `FILE`", EnvVars: env("REPLICATION_TLS_CA")},
		&cli.StringFlag{Name: "replication-peers", Usage: "with --replication-tls-ca, the certificate common `NAMES` (comma-separated) a leader accepts as followers (default: any the CA signed)", EnvVars: env("REPLICATION_PEERS")},
	}
}

// replicationConfig is what the flags say about replication.
type replicationConfig struct {
	listen    string
	sync      bool
	minInSync int
	// key is what both ends of a stream prove they hold (the cluster
	// secret's replication key).
	key []byte
	// With --replication-tls-ca: the leader's listener and the follower's
	// dialer configs; nil is plaintext.
	serverTLS, clientTLS *tls.Config
}

func parseReplicationFlags(c *cli.Context) (replicationConfig, error) {
	rc := replicationConfig{listen: c.String("replication-listen"), minInSync: c.Int("min-insync")}
	switch mode := c.String("replication"); mode {
	case "sync":
		rc.sync = true
	case "async":
	default:
		return rc, fmt.Errorf("--replication %q: want sync or async", mode)
	}
	if rc.minInSync < 1 {
		return rc, fmt.Errorf("--min-insync %d: must be 1 or more (it counts the leader, as Kafka's min.insync.replicas)", rc.minInSync)
	}
	if _, _, err := net.SplitHostPort(rc.listen); err != nil {
		return rc, fmt.Errorf("--replication-listen %q: %w", rc.listen, err)
	}
	ca, peers := c.String("replication-tls-ca"), splitList(c.String("replication-peers"))
	if ca == "" {
		if len(peers) > 0 {
			return rc, errors.New("--replication-peers needs --replication-tls-ca")
		}
		return rc, nil
	}
	files := tlsconf.Files{Cert: c.String("tls-cert"), Key: c.String("tls-key"), ClientCA: ca, CA: ca}
	if files.Cert == "" || files.Key == "" {
		return rc, errors.New("--replication-tls-ca needs --tls-cert and --tls-key: the node's certificate on both ends of the stream")
	}
	var err error
	if rc.serverTLS, err = files.Server(); err != nil {
		return rc, fmt.Errorf("--replication-tls-ca: %w", err)
	}
	if len(peers) > 0 {
		rc.serverTLS.VerifyConnection = tlsconf.RequirePeer(peers...)
	}
	if rc.clientTLS, err = files.Client(true); err != nil {
		return rc, fmt.Errorf("--replication-tls-ca: %w", err)
	}
	return rc, nil
}

// replicator runs this node's part of its replica group's data plane:
// a replication.Leader while the node holds the group's lease, a
// replication.Follower of the lease holder otherwise. It is the broker's
// Replication, and it decides who may take a lapsed lease (eligible).
type replicator struct {
	cfg      replicationConfig
	self     int32
	group    string
	durable  bool
	fileSize int64
	log      logrus.FieldLogger
	ln       net.Listener

	node atomic.Pointer[controlplane.Node] // set once the control plane started

	// Set by attach, once the broker opened the data directory.
	b        *broker.Broker
	d        *dispatcher.Dispatcher
	epochs   *commitlog.Epochs
	follower *replication.Follower
	attached chan struct{}

	mu       sync.Mutex
	want     controlplane.LeaseState
	leader   *replication.Leader // while leading, from the epoch start on
	epoch    uint64              // the epoch writes are taken under; 0: none
	roleCh   chan struct{}       // closed and replaced on every role change
	isr      []int32             // the current leader's in-sync set, as last seen
	isrEpoch uint64              // its epoch; 0: none seen
	term     *termListener       // the leadership term's view of ln

	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
}

// newReplicator binds the replication listener, so the address it
// advertises is known before the node joins the control plane.
func newReplicator(rc replicationConfig, cfg broker.Config, group string) (*replicator, error) {
	ln, err := net.Listen("tcp", rc.listen)
	if err != nil {
		return nil, fmt.Errorf("--replication-listen %s: %w", rc.listen, err)
	}
	r := &replicator{
		cfg: rc, self: cfg.NodeID, group: group, ln: ln,
		durable:  cfg.Flush == commitlog.FlushSync,
		fileSize: cfg.FileSize,
		log:      cfg.Logger.WithField("component", "replicator"),
		attached: make(chan struct{}),
		roleCh:   make(chan struct{}),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	r.want.Leader = -1
	return r, nil
}

// addr is the replication address to advertise.
func (r *replicator) addr() string { return r.ln.Addr().String() }

// attach starts replicating into the broker's data directory.
func (r *replicator) attach(b *broker.Broker) error {
	r.b, r.d = b, b.Dispatcher()
	if r.d == nil {
		return errors.New("replication needs the broker's own data directory")
	}
	var err error
	if r.epochs, err = commitlog.OpenEpochs(r.d.Log().Dir()); err != nil {
		return err
	}
	r.follower = replication.NewFollower(replication.FollowerConfig{
		Node:     strconv.Itoa(int(r.self)),
		Log:      r.d.Log(),
		Epochs:   r.epochs,
		FileSize: r.d.Log().Options().FileSize,
		Truncate: r.b.TruncateLog,
		Restart:  r.b.RestartLog,
		Durable:  r.durable,
		Key:      r.cfg.key,
		TLS:      r.cfg.clientTLS,
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

// roleChanged is the elector's OnChange. Writes stop here, at once, when
// leadership ends; the rest of the change happens on run's goroutine.
func (r *replicator) roleChanged(s controlplane.LeaseState) {
	r.mu.Lock()
	r.want = s
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

// roleChangedLocked wakes whoever waits on the role (Changed, settle).
func (r *replicator) roleChangedLocked() {
	close(r.roleCh)
	r.roleCh = make(chan struct{})
}

// settle waits, at most max, until this node takes writes or knows the
// leader to follow, so `unilog broker` says it listens once it serves.
func (r *replicator) settle(max time.Duration) {
	timeout := time.After(max)
	for {
		r.mu.Lock()
		done := r.epoch != 0 || r.want.Role == controlplane.RoleFollower && r.want.Leader >= 0 && r.want.Leader != r.self
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

func (r *replicator) nudge() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *replicator) isAttached() bool {
	select {
	case <-r.attached:
		return true
	default:
		return false
	}
}

// writable reports whether this node takes writes under epoch: it leads
// it and the epoch's start is in the epoch file.
func (r *replicator) writable(epoch uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return epoch != 0 && r.epoch == epoch
}

// run applies role changes one at a time and keeps following.
func (r *replicator) run() {
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
			if s.Leader >= 0 && s.Leader != r.self {
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
func (r *replicator) lead(epoch uint64) error {
	end := r.d.Log().WriteOffset()
	if last, ok := r.epochs.Latest(); !ok || last.Epoch < int64(epoch) {
		if err := r.epochs.Assign(int64(epoch), end); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.b.Promote(ctx); err != nil {
		return err
	}
	l := replication.NewLeader(replication.LeaderConfig{
		Log:       r.d.Log(),
		Epochs:    r.epochs,
		Epoch:     int64(epoch),
		FileSize:  r.d.Log().Options().FileSize,
		Offsets:   r.d.OffsetsAt,
		MinInSync: r.cfg.minInSync,
		Durable:   r.durable,
		OnFenced:  r.fenced,
		PublishInSync: func(ctx context.Context, nodes []string) error {
			return r.node.Load().PublishInSync(ctx, nodeIDs(nodes))
		},
		Key:    r.cfg.key,
		TLS:    r.cfg.serverTLS,
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
	removeFloor := r.d.Log().AddRetentionFloor(func() int64 { return slowestInSync(l) })
	go func() {
		// Serve returns once the Leader's Close closed the term.
		if err := l.Serve(term); err != nil {
			r.log.WithError(err).Error("replication leader stopped serving")
		}
		removeFloor()
	}()
	r.log.WithFields(logrus.Fields{"epoch": epoch, "start": end, "replication_addr": r.addr()}).Info("leading: serving followers")
	return nil
}

// slowestInSync is the retention floor a leader keeps for its in-sync
// followers: the lowest end among them.
func slowestInSync(l *replication.Leader) int64 {
	floor := int64(math.MaxInt64)
	for _, f := range l.Followers() {
		if f.InSync {
			floor = min(floor, f.End)
		}
	}
	return floor
}

// stepDown ends a leadership term.
func (r *replicator) stepDown() {
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
func (r *replicator) fenced(newer int64) {
	r.mu.Lock()
	r.epoch = 0
	r.mu.Unlock()
	r.b.Demote()
	r.log.WithField("newer_epoch", newer).Warn("fenced by a newer epoch: writes stopped")
}

// startFollowing replicates from the leader of s until the returned
// function is called (which waits for the follower to stop).
func (r *replicator) startFollowing(s controlplane.LeaseState) func() {
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
func (r *replicator) follow(ctx context.Context, s controlplane.LeaseState) {
	const minBackoff, maxBackoff = 50 * time.Millisecond, 2 * time.Second
	backoff := minBackoff
	var lastErr string
	warned := false
	for ctx.Err() == nil {
		m, ok := r.node.Load().Member(s.Leader)
		member := ok && m.ReplicaGroup == r.group && m.ReplicationAddr != ""
		if !member && !warned {
			warned = true
			r.log.WithFields(logrus.Fields{"leader": s.Leader, "epoch": s.Epoch, "replica_group": r.group, "member_record": ok, "its_group": m.ReplicaGroup}).
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
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				r.log.WithError(err).WithFields(logrus.Fields{"leader": s.Leader, "epoch": s.Epoch}).Warn("replication session ended; reconnecting")
			}
			if errors.Is(err, replication.ErrFileSize) {
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
func (r *replicator) inSync() []int32 {
	r.mu.Lock()
	l := r.leader
	r.mu.Unlock()
	if l == nil {
		return nil
	}
	return inSyncOf(l)
}

func inSyncOf(l *replication.Leader) []int32 {
	var nodes []string
	for _, f := range l.Followers() {
		if f.InSync {
			nodes = append(nodes, f.Node)
		}
	}
	return nodeIDs(nodes)
}

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
func (r *replicator) noteISR() {
	st := r.node.Load().Elector().State()
	if st.Leader < 0 || st.Leader == r.self {
		return
	}
	m, ok := r.node.Load().Member(st.Leader)
	if !ok || m.Role != controlplane.RoleLeader.String() || m.Epoch != st.Epoch {
		return
	}
	r.mu.Lock()
	r.isr, r.isrEpoch = m.InSync, m.Epoch
	r.mu.Unlock()
}

// eligible is the elector's Eligible (replication.MayLead's rule over the
// last leader's in-sync set and the live members' logs). Nothing is
// eligible before the data directory is open (attach nudges the elector
// then).
func (r *replicator) eligible() bool {
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
	var peers []replication.Candidate
	for _, m := range node.Members() {
		peers = append(peers, replication.Candidate{Node: m.NodeID, Group: m.ReplicaGroup, LogEnd: m.LogEndOffset})
	}
	self := replication.Candidate{Node: r.self, Group: r.group, LogEnd: r.d.Log().WriteOffset()}
	return replication.MayLead(self, st.Leader, isr, known, peers)
}

// HighWatermark implements broker.Replication.
func (r *replicator) HighWatermark() int64 {
	if l := r.current(); l != nil {
		return l.HighWatermark()
	}
	return 0
}

// Changed implements broker.Replication.
func (r *replicator) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leader != nil {
		return r.leader.Changed()
	}
	return r.roleCh
}

// WaitReplicated implements broker.Replication.
func (r *replicator) WaitReplicated(ctx context.Context, end int64) error {
	l := r.current()
	if l == nil {
		return fmt.Errorf("replicate to %d: %w", end, broker.ErrNotLeader)
	}
	return replicationError(l.WaitReplicated(ctx, end))
}

// CheckInSync implements broker.Replication.
func (r *replicator) CheckInSync() error {
	l := r.current()
	if l == nil {
		return fmt.Errorf("check the in-sync set: %w", broker.ErrNotLeader)
	}
	return replicationError(l.CheckInSync())
}

// replicationError gives a replication.Leader's error the broker's meaning.
func replicationError(err error) error {
	switch {
	case errors.Is(err, replication.ErrNotEnoughReplicas):
		return fmt.Errorf("%w: %w", broker.ErrNotEnoughReplicas, err)
	case errors.Is(err, replication.ErrFenced), errors.Is(err, net.ErrClosed):
		return fmt.Errorf("%w: %w", broker.ErrNotLeader, err)
	}
	return err
}

// Followers implements broker.Replication.
func (r *replicator) Followers() []broker.ReplicaStatus {
	l := r.current()
	if l == nil {
		return nil
	}
	fs := l.Followers()
	out := make([]broker.ReplicaStatus, len(fs))
	for i, f := range fs {
		out[i] = broker.ReplicaStatus(f)
	}
	return out
}

func (r *replicator) current() *replication.Leader {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leader
}

// close stops replicating and the listener.
func (r *replicator) close() {
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
func (r *replicator) accept() {
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

// termListener is the replication listener as one term's Leader sees it:
// Accept yields the connections accept hands over, and Close (the
// Leader's, at the end of the term) leaves the real listener open.
type termListener struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newTermListener(addr net.Addr) *termListener {
	return &termListener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (t *termListener) Accept() (net.Conn, error) {
	select {
	case c := <-t.conns:
		return c, nil
	case <-t.closed:
		return nil, net.ErrClosed
	}
}

func (t *termListener) Close() error {
	t.once.Do(func() { close(t.closed) })
	return nil
}

func (t *termListener) Addr() net.Addr { return t.addr }
