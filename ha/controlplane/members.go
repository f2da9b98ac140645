package controlplane

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/internal/clock"
)

// Member is the heartbeat value of one node, members.node.<id>.
type Member struct {
	NodeID          int32  `json:"node_id"`
	Advertise       string `json:"advertise"`
	ReplicationAddr string `json:"replication_addr,omitempty"`
	ReplicaGroup    string `json:"replica_group"`
	Role            string `json:"role"`
	Epoch           uint64 `json:"epoch"`
	LogEndOffset    int64  `json:"log_end_offset"`
	// InSync (a leader's) lists the followers in sync at the heartbeat:
	// only they may take the lease after it (see the package doc).
	InSync []int32 `json:"in_sync,omitempty"`
	// HeartbeatMs is the sender's clock, for people reading the bucket;
	// liveness never compares it with another clock.
	HeartbeatMs int64 `json:"heartbeat_ms"`
}

// DefaultMemberDeadline is how long a member stays live without a heartbeat.
const DefaultMemberDeadline = 5 * time.Second

func memberKey(id int32) string { return "node." + strconv.FormatInt(int64(id), 10) }

// Membership keeps the live members from a watch on the members bucket.
type Membership struct {
	kv       jetstream.KeyValue
	clock    clock.Clock
	deadline time.Duration
	log      logrus.FieldLogger

	mu   sync.Mutex
	seen map[int32]memberSeen
	// led is each node's newest record written while it led: its
	// in-sync set outlives its step-down and its leaving (LastLed).
	led map[int32]Member

	watcher jetstream.KeyWatcher
	done    chan struct{}
}

type memberSeen struct {
	m  Member
	at time.Time
}

// WatchMembers starts watching the members bucket and returns once the
// current members are loaded. A member is live while its last heartbeat
// was seen less than deadline ago on clk.
func WatchMembers(ctx context.Context, kv jetstream.KeyValue, deadline time.Duration, clk clock.Clock, log logrus.FieldLogger) (*Membership, error) {
	if deadline <= 0 {
		deadline = DefaultMemberDeadline
	}
	if clk == nil {
		clk = clock.System{}
	}
	w, err := kv.WatchAll(context.Background())
	if err != nil {
		return nil, fmt.Errorf("ha: watch members: %w", err)
	}
	m := &Membership{kv: kv, clock: clk, deadline: deadline, log: log, seen: make(map[int32]memberSeen), led: make(map[int32]Member), watcher: w, done: make(chan struct{})}
	if err := loadInitial(ctx, w, m.apply); err != nil {
		w.Stop()
		return nil, fmt.Errorf("ha: watch members: %w", err)
	}
	go m.follow()
	return m, nil
}

// loadInitial applies the watcher's initial values, which end with a nil.
func loadInitial(ctx context.Context, w jetstream.KeyWatcher, apply func(jetstream.KeyValueEntry)) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("watcher stopped")
			}
			if e == nil {
				return nil
			}
			apply(e)
		}
	}
}

func (m *Membership) follow() {
	defer close(m.done)
	for e := range m.watcher.Updates() {
		if e != nil {
			m.apply(e)
		}
	}
}

func (m *Membership) apply(e jetstream.KeyValueEntry) {
	id, err := strconv.ParseInt(strings.TrimPrefix(e.Key(), "node."), 10, 32)
	if err != nil {
		m.log.WithField("key", e.Key()).Warn("members bucket: key is not node.<id>")
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(m.seen, int32(id))
		return
	}
	var mem Member
	if err := decodeValue(e.Value(), &mem); err != nil {
		m.log.WithError(err).WithField("key", e.Key()).Warn("members bucket: value unreadable")
		return
	}
	m.seen[int32(id)] = memberSeen{m: mem, at: m.clock.Now()}
	if mem.Role == RoleLeader.String() {
		m.led[int32(id)] = mem
	}
}

// LastLed is the newest record node id wrote while it led, kept once it
// stepped down or left: a leader that hands its lease over publishes its
// in-sync set and then a follower's record, and its successor must still
// know the set, however late it reads.
func (m *Membership) LastLed(id int32) (Member, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem, ok := m.led[id]
	return mem, ok
}

// Live lists the members heard from within the deadline, by node id.
func (m *Membership) Live() []Member {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Member, 0, len(m.seen))
	for _, s := range m.seen {
		if now.Sub(s.at) < m.deadline {
			out = append(out, s.m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeID < out[j].NodeID })
	return out
}

// Last is the newest record of a node seen, live or not: a dead leader's
// last in-sync set decides who may succeed it.
func (m *Membership) Last(id int32) (Member, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.seen[id]
	return s.m, ok
}

// Heartbeat publishes mem as this node's heartbeat.
func (m *Membership) Heartbeat(ctx context.Context, mem Member) error {
	mem.HeartbeatMs = m.clock.Now().UnixMilli()
	val, err := encodeValue(mem)
	if err != nil {
		return err
	}
	if _, err := m.kv.Put(ctx, memberKey(mem.NodeID), val); err != nil {
		return fmt.Errorf("ha: heartbeat node %d: %w", mem.NodeID, err)
	}
	return nil
}

// Join writes a node's first heartbeat, retried (see retry): the members
// stream of a JetStream cluster that has just formed may have no leader
// yet. A heartbeat is a plain put, so a try applied after all does no
// harm.
func (m *Membership) Join(ctx context.Context, mem Member) error {
	return retry(ctx, func(tctx context.Context) error { return m.Heartbeat(tctx, mem) })
}

// Leave removes a node's heartbeat so the others see it gone at once.
func (m *Membership) Leave(ctx context.Context, id int32) error {
	if err := m.kv.Delete(ctx, memberKey(id)); err != nil {
		return fmt.Errorf("ha: leave node %d: %w", id, err)
	}
	return nil
}

// Stop ends the watch.
func (m *Membership) Stop() {
	m.watcher.Stop()
	<-m.done
}
