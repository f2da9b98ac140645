package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/group"
	"github.com/unilog/unilog/internal/fileops"
)

// defaultCompactInterval is how often live committed offsets are copied out
// of the oldest commit-log file (see group.Coordinator.Compact) and the
// offsets snapshot is rewritten.
const defaultCompactInterval = time.Minute

// offsetsSnapshotName is the file, in the data directory, holding the
// coordinator's latest snapshot (format in package group). It is derived
// data: a missing or damaged one costs a full replay of the offsets topic.
const offsetsSnapshotName = "offsets.snapshot"

// ensureOffsetsTopic creates the internal offsets topic before storage
// opens, so the dispatcher's Keep filter indexes its records from the
// first one.
func ensureOffsetsTopic(meta MetadataStore) error {
	return ensureInternalTopic(meta, offsetsTopic, group.DefaultPartitions)
}

// ensureInternalTopic creates an internal topic unless metadata has it.
func ensureInternalTopic(meta MetadataStore, name string, partitions int32) error {
	if _, ok := meta.Topic(name); ok {
		return nil
	}
	t := TopicMeta{Name: name, Partitions: partitions, CreatedMs: time.Now().UnixMilli()}
	if _, err := rand.Read(t.ID[:]); err != nil {
		return err
	}
	// Nodes sharing a control plane start together: one creates it.
	if err := meta.CreateTopic(t); err != nil && !errors.Is(err, ErrTopicExists) {
		return err
	}
	return nil
}

// openGroups replays the committed offsets and starts the coordinator.
func (b *Broker) openGroups() error {
	snapPath := filepath.Join(b.cfg.DataDir, offsetsSnapshotName)
	snap, err := os.ReadFile(snapPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		b.log.WithError(err).Warn("offsets snapshot unreadable; replaying the offsets topic")
	}
	c, err := b.newCoordinator(snap)
	if err != nil {
		return err
	}
	b.groups.Store(c)
	b.every(defaultCompactInterval, b.compactGroups)
	return nil
}

// newCoordinator opens a group coordinator over the offsets topic,
// replaying it from snap (nil: from the start).
func (b *Broker) newCoordinator(snap []byte) (*group.Coordinator, error) {
	partitions := group.DefaultPartitions
	if t, ok := b.meta.Topic(offsetsTopic); ok {
		partitions = int(t.Partitions)
	}
	return group.Open(group.Options{
		Log:               offsetsLog{st: b.st, b: b},
		Snapshot:          snap,
		Partitions:        int32(partitions),
		SyncCommits:       b.st.SyncFlush() || b.cfg.Replication != nil && b.cfg.SyncReplication,
		MinSessionTimeout: b.cfg.GroupMinSessionTimeout,
		Logger:            b.log,
	})
}

// retentionFloor keeps the commit-log files holding live committed
// offsets and transaction states; nothing may go before both
// coordinators have loaded them.
func (b *Broker) retentionFloor() int64 {
	c, t := b.groups.Load(), b.txns.Load()
	switch {
	case c == nil:
		return 0
	case b.following.Load():
		// A follower has no transaction coordinator (Demote drops it):
		// Promote replays the states from the log it keeps.
		return c.RetentionFloor()
	case t == nil:
		return 0
	}
	return min(c.RetentionFloor(), t.RetentionFloor())
}

// compactGroups copies live commits out of the oldest commit-log file and
// snapshots the coordinator.
func (b *Broker) compactGroups() {
	if b.notLeading() {
		// Compaction appends; a follower's log is its leader's.
		return
	}
	c := b.groups.Load()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := c.Compact(ctx)
	switch {
	case err != nil:
		b.log.WithError(err).Error("group offsets compaction failed")
	case n > 0:
		b.log.WithField("commits", n).Info("group offsets copied out of the oldest commit-log file")
	}
	b.snapshotGroups(ctx, c)
}

// snapshotGroups writes the coordinator's snapshot, so the next start
// replays only the offsets committed after it.
func (b *Broker) snapshotGroups(ctx context.Context, c *group.Coordinator) {
	if b.notLeading() {
		// A follower's coordinator is stale; Promote replays the log.
		return
	}
	snap, err := c.Snapshot(ctx)
	if err == nil {
		err = fileops.ReplaceFile(b.cfg.FS, filepath.Join(b.cfg.DataDir, offsetsSnapshotName), snap, 0o644)
	}
	if err != nil {
		b.log.WithError(err).Warn("offsets snapshot not written")
	}
}

// clientHost is how Kafka shows a member's host: "/" and the address.
func (c *conn) clientHost() string {
	host, _, err := net.SplitHostPort(c.remote)
	if err != nil {
		host = c.remote
	}
	return "/" + host
}

// The group APIs: a follower, or a broker without groups, answers
// NOT_COORDINATOR (coordinated); the ACL rules are in authz_group.go.
func init() {
	register(kmsg.FindCoordinator, 0, 5, (*Broker).handleFindCoordinator, func(z authz, req kmsg.Request) (kmsg.Response, error) {
		return z.findCoordinator(req.(*kmsg.FindCoordinatorRequest))
	})
	register(kmsg.JoinGroup, 0, 9, coordinated((*Broker).handleJoinGroup), func(z authz, req kmsg.Request) (kmsg.Response, error) {
		return z.whole(req, req.(*kmsg.JoinGroupRequest).Group)
	})
	register(kmsg.SyncGroup, 0, 5, coordinated((*Broker).handleSyncGroup), func(z authz, req kmsg.Request) (kmsg.Response, error) {
		return z.whole(req, req.(*kmsg.SyncGroupRequest).Group)
	})
	register(kmsg.Heartbeat, 0, 4, coordinated((*Broker).handleHeartbeat), func(z authz, req kmsg.Request) (kmsg.Response, error) {
		return z.whole(req, req.(*kmsg.HeartbeatRequest).Group)
	})
	register(kmsg.LeaveGroup, 0, 5, coordinated((*Broker).handleLeaveGroup), func(z authz, req kmsg.Request) (kmsg.Response, error) {
		return z.whole(req, req.(*kmsg.LeaveGroupRequest).Group)
	})
	register(kmsg.OffsetCommit, 0, 9, coordinated((*Broker).handleOffsetCommit), func(z authz, req kmsg.Request) (kmsg.Response, error) {
		return z.offsetCommit(req.(*kmsg.OffsetCommitRequest))
	})
	register(kmsg.OffsetFetch, 0, 9, coordinated((*Broker).handleOffsetFetch), func(z authz, req kmsg.Request) (kmsg.Response, error) {
		return z.offsetFetch(req.(*kmsg.OffsetFetchRequest))
	})
	register(kmsg.ListGroups, 0, 5, coordinated((*Broker).handleListGroups), func(z authz, _ kmsg.Request) (kmsg.Response, error) {
		return z.listGroups()
	})
	register(kmsg.DescribeGroups, 0, 5, coordinated((*Broker).handleDescribeGroups), func(z authz, req kmsg.Request) (kmsg.Response, error) {
		return z.describeGroups(req.(*kmsg.DescribeGroupsRequest))
	})
	register(kmsg.DeleteGroups, 0, 2, coordinated((*Broker).handleDeleteGroups), func(z authz, req kmsg.Request) (kmsg.Response, error) {
		return z.deleteGroups(req.(*kmsg.DeleteGroupsRequest))
	})
	register(kmsg.OffsetDelete, 0, 0, coordinated((*Broker).handleOffsetDelete), func(z authz, req kmsg.Request) (kmsg.Response, error) {
		return z.offsetDelete(req.(*kmsg.OffsetDeleteRequest))
	})
}

func (b *Broker) handleFindCoordinator(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	find := func(key string) (code int16, cb ClusterBroker) {
		switch req.CoordinatorType {
		case 0:
			return b.coordinator(c, key)
		case 1:
			return b.txnCoordinatorNode(c, key)
		}
		return kerr.InvalidRequest.Code, ClusterBroker{NodeID: -1}
	}
	if req.Version < 4 {
		code, cb := find(req.CoordinatorKey)
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = code, cb.NodeID, cb.Host, cb.Port
		return resp, nil
	}
	for _, k := range req.CoordinatorKeys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		code, cb := find(k)
		rc.Key, rc.ErrorCode, rc.NodeID, rc.Host, rc.Port = k, code, cb.NodeID, cb.Host, cb.Port
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	return resp, nil
}

// coordinator is the broker coordinating a group: the leader of the
// offsets-topic partition its commits go to, whose log they must be in.
func (b *Broker) coordinator(c *conn, key string) (int16, ClusterBroker) {
	partitions := int32(group.DefaultPartitions)
	if t, ok := b.meta.Topic(offsetsTopic); ok {
		partitions = t.Partitions
	}
	return b.coordinatorOf(c, offsetsTopic, group.PartitionFor(key, partitions))
}

// coordinatorOf is the leader of the internal topic's partition, where a
// coordinator's records must be written.
func (b *Broker) coordinatorOf(c *conn, topic string, partition int32) (int16, ClusterBroker) {
	list := b.brokers(c)
	if b.cfg.Cluster == nil {
		return 0, list[0]
	}
	node, _, ok := b.cfg.Cluster.PartitionLeader(topic, partition)
	for _, cb := range list {
		if ok && cb.NodeID == node {
			return 0, cb
		}
	}
	return kerr.CoordinatorNotAvailable.Code, ClusterBroker{NodeID: -1}
}

func (b *Broker) handleJoinGroup(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	var resp kmsg.Response
	c.whilePending(func(ctx context.Context) {
		resp = b.groups.Load().JoinGroup(ctx, group.Client{ID: c.clientID, Host: c.clientHost()}, kreq.(*kmsg.JoinGroupRequest))
	})
	return resp, nil
}

func (b *Broker) handleSyncGroup(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	var resp kmsg.Response
	c.whilePending(func(ctx context.Context) {
		resp = b.groups.Load().SyncGroup(ctx, kreq.(*kmsg.SyncGroupRequest))
	})
	return resp, nil
}

func (b *Broker) handleHeartbeat(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	return b.groups.Load().Heartbeat(kreq.(*kmsg.HeartbeatRequest)), nil
}

func (b *Broker) handleLeaveGroup(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	return b.groups.Load().LeaveGroup(kreq.(*kmsg.LeaveGroupRequest)), nil
}

// handleOffsetCommit answers once the commit is durable under FlushSync,
// bounded like an acks=-1 produce.
func (b *Broker) handleOffsetCommit(ctx context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, defaultProduceTimeout)
	defer cancel()
	return b.groups.Load().OffsetCommit(ctx, kreq.(*kmsg.OffsetCommitRequest)), nil
}

func (b *Broker) handleOffsetFetch(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetFetchRequest)
	return b.markUnstable(req, b.groups.Load().OffsetFetch(req)), nil
}

func (b *Broker) handleListGroups(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	return b.groups.Load().ListGroups(kreq.(*kmsg.ListGroupsRequest)), nil
}

func (b *Broker) handleDescribeGroups(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	return b.groups.Load().DescribeGroups(kreq.(*kmsg.DescribeGroupsRequest)), nil
}

func (b *Broker) handleDeleteGroups(ctx context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, defaultProduceTimeout)
	defer cancel()
	return b.groups.Load().DeleteGroups(ctx, kreq.(*kmsg.DeleteGroupsRequest)), nil
}

func (b *Broker) handleOffsetDelete(ctx context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, defaultProduceTimeout)
	defer cancel()
	return b.groups.Load().OffsetDelete(ctx, kreq.(*kmsg.OffsetDeleteRequest)), nil
}

// groupLag is the records a group has still to consume: per committed
// partition, the partition's end offset minus the commit.
func (b *Broker) groupLag(c *group.Coordinator, id string) int64 {
	var lag int64
	for tp, o := range c.Committed(id) {
		_, end := b.st.Bounds(tp.Topic, tp.Partition)
		lag += max(0, end-o.Offset)
	}
	return lag
}

// closeGroups answers parked group calls, stops the groups' goroutines and
// leaves a snapshot for the next start.
func (b *Broker) closeGroups() {
	if c := b.groups.Load(); c != nil {
		c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		b.snapshotGroups(ctx, c)
	}
}
