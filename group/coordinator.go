package group

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/clock"
)

// Defaults of Options.
const (
	DefaultPartitions        = 16
	DefaultMinSessionTimeout = 6 * time.Second
	DefaultMaxSessionTimeout = 30 * time.Minute
)

// Options configure a Coordinator.
type Options struct {
	// Log stores committed offsets; required.
	Log Log
	// Snapshot is what Coordinator.Snapshot returned in an earlier run, or
	// nil. Open starts from it and replays only the records after it; a
	// snapshot that fails a check or no longer joins the log (retention
	// deleted records after it) is logged and the whole log replayed.
	Snapshot []byte
	// Partitions of the offsets topic (default DefaultPartitions). It must
	// not change over the life of a data directory: a group's commits are
	// found in partition PartitionFor(group, Partitions).
	Partitions int32
	// SyncCommits makes OffsetCommit answer only once the commit is durable
	// (what acks=-1 gets from a log flushed synchronously).
	SyncCommits bool
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// member may ask for (Kafka's group.min/max.session.timeout.ms).
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// Clock measures session and rebalance timeouts; default clock.System.
	Clock clock.Clock
	// NewMemberID makes a member id from a prefix (the client id, or a
	// static member's instance id); default the prefix, a dash and 32
	// random hex digits, as Kafka.
	NewMemberID func(prefix string) string
	Logger      logrus.FieldLogger
}

// Coordinator is the group coordinator of one broker: the state of every
// group (each owned by its own goroutine) and the committed offsets.
type Coordinator struct {
	opts  Options
	log   logrus.FieldLogger
	clock clock.Clock
	offs  *offsets

	mu     sync.Mutex
	groups map[string]*group
	stop   chan struct{}
	closed bool
	wg     sync.WaitGroup

	// commitCode is the last commit's answer, logged when it changes.
	commitMu   sync.Mutex
	commitCode int16
}

// Open replays the offsets topic into memory and returns a coordinator
// ready to serve.
func Open(opts Options) (*Coordinator, error) {
	if opts.Log == nil {
		return nil, errors.New("group: Options.Log is required")
	}
	if opts.Partitions <= 0 {
		opts.Partitions = DefaultPartitions
	}
	if opts.MinSessionTimeout <= 0 {
		opts.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if opts.MaxSessionTimeout <= 0 {
		opts.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.NewMemberID == nil {
		opts.NewMemberID = randomMemberID
	}
	if opts.Logger == nil {
		opts.Logger = logrus.StandardLogger()
	}
	c := &Coordinator{
		opts:   opts,
		log:    opts.Logger,
		clock:  opts.Clock,
		offs:   newOffsets(opts.Log, opts.Partitions),
		groups: make(map[string]*group),
		stop:   make(chan struct{}),
	}
	start := time.Now()
	n, snapErr, err := c.offs.load(opts.Snapshot)
	if err != nil {
		return nil, err
	}
	if snapErr != nil {
		c.log.WithError(snapErr).Warn("group coordinator: snapshot not used; replayed the whole offsets topic")
	}
	c.log.WithFields(logrus.Fields{"snapshot": opts.Snapshot != nil && snapErr == nil, "records": n, "groups": len(c.offs.groupIDs()), "took": time.Since(start)}).Info("group coordinator: offsets loaded")
	return c, nil
}

func randomMemberID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

func (c *Coordinator) newMemberID(prefix string) string { return c.opts.NewMemberID(prefix) }

// Close ends every group's goroutine; parked calls are answered with
// COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.stop)
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// group returns the live group, starting it if create is set; nil if it
// does not exist (and create is not set) or the coordinator is closed.
func (c *Coordinator) group(id string, create bool) *group {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	g := c.groups[id]
	if g == nil && create {
		g = newGroup(c, id)
		c.groups[id] = g
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			g.run(c.stop)
		}()
	}
	return g
}

// forget drops a deleted group from the map; its goroutine ends after the
// request that deleted it.
func (c *Coordinator) forget(g *group) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[g.id] == g {
		delete(c.groups, g.id)
	}
}

// onGroup runs fn on the group's goroutine and waits, starting the group
// if create is set. It reports false when there is no such group (or the
// coordinator closed). A group deleted in between is looked up again.
func (c *Coordinator) onGroup(id string, create bool, fn func(g *group)) bool {
	for {
		g := c.group(id, create)
		if g == nil {
			return false
		}
		if g.wait(func() { fn(g) }) {
			return true
		}
	}
}

func (c *Coordinator) validJoin(req *kmsg.JoinGroupRequest) int16 {
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	switch {
	case req.Group == "":
		return kerr.InvalidGroupID.Code
	case session < c.opts.MinSessionTimeout || session > c.opts.MaxSessionTimeout:
		return kerr.InvalidSessionTimeout.Code
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		return inconsistentGroupProtocol
	}
	return 0
}

// JoinGroup adds or refreshes a member. It parks until the group's join
// phase completes, the member's rebalance timeout passes, or ctx ends (the
// client's connection closed), whichever is first.
func (c *Coordinator) JoinGroup(ctx context.Context, cl Client, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	if code := c.validJoin(req); code != 0 {
		return joinError(req.Version, code, req.MemberID)
	}
	for {
		g := c.group(req.Group, true)
		if g == nil {
			return joinError(req.Version, coordinatorNotAvailable, req.MemberID)
		}
		reply := make(chan *kmsg.JoinGroupResponse, 1)
		if !g.do(func() { g.join(req, cl, reply) }) {
			continue
		}
		select {
		case resp := <-reply:
			return resp
		case <-ctx.Done():
			g.do(func() { g.cancelJoin(reply) })
			return joinError(req.Version, coordinatorNotAvailable, req.MemberID)
		case <-g.done:
			return joinError(req.Version, coordinatorNotAvailable, req.MemberID)
		}
	}
}

// SyncGroup hands the leader's assignment to every member; a follower's
// call parks until the leader's arrives or ctx ends.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	g := c.group(req.Group, false)
	if g == nil {
		return syncError(req.Version, unknownMemberID)
	}
	reply := make(chan *kmsg.SyncGroupResponse, 1)
	if !g.do(func() { g.sync(req, reply) }) {
		return syncError(req.Version, coordinatorNotAvailable)
	}
	select {
	case resp := <-reply:
		return resp
	case <-ctx.Done():
		g.do(func() { g.cancelSync(reply) })
		return syncError(req.Version, coordinatorNotAvailable)
	case <-g.done:
		return syncError(req.Version, coordinatorNotAvailable)
	}
}

// Heartbeat keeps a member's session alive.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = unknownMemberID
	c.onGroup(req.Group, false, func(g *group) { resp.ErrorCode = g.heartbeat(req) })
	return resp
}

// LeaveGroup removes members: one by id (v0-2) or a batch (v3+).
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	ids := req.Members
	if req.Version < 3 {
		ids = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	codes := make([]int16, len(ids))
	for i := range codes {
		codes[i] = unknownMemberID
	}
	c.onGroup(req.Group, false, func(g *group) { codes = g.leave(ids) })
	if req.Version < 3 {
		resp.ErrorCode = codes[0]
		return resp
	}
	for i, l := range ids {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID = l.MemberID
		rm.InstanceID = l.InstanceID
		rm.ErrorCode = codes[i]
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

// Stats describes one group for metrics and tools.
type Stats struct {
	Group        string
	State        State
	ProtocolType string
	Protocol     string
	Generation   int32
	Members      int
	Rebalances   int64
}

// Groups lists every group: the live ones and those known only by their
// committed offsets (Empty).
func (c *Coordinator) Groups() []Stats {
	c.mu.Lock()
	live := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		live = append(live, g)
	}
	c.mu.Unlock()
	seen := make(map[string]bool)
	var out []Stats
	for _, g := range live {
		var s Stats
		if g.wait(func() { s = g.stats() }) {
			out = append(out, s)
			seen[g.id] = true
		}
	}
	for _, id := range c.offs.groupIDs() {
		if !seen[id] {
			out = append(out, Stats{Group: id, State: Empty, ProtocolType: "consumer"})
		}
	}
	return out
}

func (g *group) stats() Stats {
	return Stats{
		Group: g.id, State: g.state, ProtocolType: g.protocolType, Protocol: g.protocol,
		Generation: g.generation, Members: len(g.members), Rebalances: g.rebalances,
	}
}

// Committed returns a group's committed offsets.
func (c *Coordinator) Committed(group string) map[TopicPartition]Offset { return c.offs.get(group) }

// RetentionFloor is the physical offset below which the commit log may
// delete files without taking a live commit with it (see
// commitlog.Log.SetRetentionFloor); 0 until the offsets are loaded.
func (c *Coordinator) RetentionFloor() int64 { return c.offs.floor() }

// Compact copies live commits out of the oldest commit-log file (see
// offsets.rewrite) so that retention can delete it. The broker calls it
// periodically; it returns the number of commits copied.
func (c *Coordinator) Compact(ctx context.Context) (int, error) { return c.offs.rewrite(ctx) }

// store commits offsets (nil values delete) and, with SyncCommits, waits
// until they are durable; only then do they enter the view, so a commit
// answered with an error is never seen. It returns the Kafka error code for
// the answer; what names the operation in the log.
func (c *Coordinator) store(ctx context.Context, group, what string, offs map[TopicPartition]*Offset) int16 {
	pc, err := c.offs.commit(group, offs)
	if err == nil {
		if c.opts.SyncCommits {
			if err = c.opts.Log.WaitDurable(ctx, pc.end); err != nil {
				err = fmt.Errorf("group: %s of %q: wait durable: %w", what, group, err)
			}
		}
		c.offs.settle(pc, err == nil)
	}
	code := commitCode(err)
	c.noteCommit(what, group, code, err)
	return code
}

// commitCode is the Kafka error code answering a commit that failed with
// err, as Kafka's group coordinator maps its log's errors: a node that no
// longer leads is NOT_COORDINATOR; too few in-sync replicas and a timeout
// (before or after the append) are COORDINATOR_NOT_AVAILABLE, so the
// client retries; only the storage's own failures are KAFKA_STORAGE_ERROR.
func commitCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrNotCoordinator):
		return kerr.NotCoordinator.Code
	case errors.Is(err, ErrNotEnoughReplicas), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return coordinatorNotAvailable
	}
	return kerr.KafkaStorageError.Code
}

// noteCommit logs a commit's outcome when it differs from the last one's:
// a log that cannot take commits fails every one of them, several a second
// while clients retry, and one line says so as well as all of them.
func (c *Coordinator) noteCommit(what, group string, code int16, err error) {
	if errors.Is(err, context.Canceled) {
		// The request ended under the wait: its client went away or the
		// broker is closing. Nothing timed out, and no one is left to answer.
		c.log.WithFields(logrus.Fields{"group": group, "error": err}).Debug(what + " cancelled while waiting to be durable")
		return
	}
	c.commitMu.Lock()
	last := c.commitCode
	c.commitCode = code
	c.commitMu.Unlock()
	switch {
	case code == last:
	case code == 0:
		c.log.WithField("after", kerr.ErrorForCode(last)).Info("offset commits succeed again")
	default:
		c.log.WithFields(logrus.Fields{"group": group, "answer": kerr.ErrorForCode(code), "error": err}).Warn(what + " failed; commits answered the same are not logged until the answer changes")
	}
}
