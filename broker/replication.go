package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/unilog/unilog/ha/replication"
)

// Replication is what the broker needs from the data plane (package
// ha/replication, wired in by cmd/unilog) while it leads a replica group
// that has followers. A broker without one (Config.Replication nil) serves
// everything it stores.
type Replication interface {
	// HighWatermark is the physical offset below which every record is on
	// every in-sync replica: consumers are served only records ending at
	// or below it, so a failover never takes back what they read.
	HighWatermark() int64
	// Changed returns a channel closed once the high watermark may have
	// moved.
	Changed() <-chan struct{}
	// WaitReplicated blocks until the high watermark reaches end. It fails
	// with an error wrapping ErrNotEnoughReplicas when too few followers
	// are in sync, ErrNotLeader once this node no longer leads.
	WaitReplicated(ctx context.Context, end int64) error
	// CheckInSync fails as WaitReplicated would at once, without waiting:
	// an acks=-1 write asks it before its append, so that one refused for
	// too few in-sync replicas is never stored.
	CheckInSync() error
	// Followers reports the followers the leader knows, for /status.
	Followers() []ReplicaStatus
}

// ReplicaStatus is one follower as its leader sees it (LagBytes: how far
// its end is behind the leader's).
type ReplicaStatus = replication.FollowerStatus

var (
	// ErrNotEnoughReplicas: fewer replicas than required are in sync.
	ErrNotEnoughReplicas = replication.ErrNotEnoughReplicas
	// ErrNotLeader: this node stopped leading while a write waited.
	ErrNotLeader = replication.ErrNotLeader
)

// checkInSync refuses an acks=-1 write under sync replication before it is
// appended while too few replicas are in sync: Kafka's NOT_ENOUGH_REPLICAS
// means nothing was written, so a client may retry it without making a
// duplicate. It returns a Kafka error code.
func (b *Broker) checkInSync() int16 {
	if b.cfg.Replication == nil || !b.cfg.SyncReplication {
		return 0
	}
	return b.replicationCode(b.cfg.Replication.CheckInSync(), kerr.NotEnoughReplicas)
}

// enoughInSync applies the topic's min.insync.replicas to an acks=-1
// write: this node and its in-sync followers (all of them, not only those
// of a partition: the whole log is replicated) must be at least that
// many. *isr caches the count for the request; -1 until counted.
func (b *Broker) enoughInSync(t TopicMeta, isr *int) bool {
	if _, own := t.Configs[cfgMinInsync]; !own {
		return true
	}
	if *isr < 0 {
		*isr = 1
		if b.cfg.Replication != nil {
			for _, f := range b.cfg.Replication.Followers() {
				if f.InSync {
					*isr++
				}
			}
		}
	}
	return int64(*isr) >= b.configInt(t, cfgMinInsync)
}

// waitReplicated waits, for an acks=-1 write under sync replication, until
// the in-sync followers hold everything through end; it returns a Kafka
// error code. The write is stored by now, so an in-sync set that shrank
// below the minimum meanwhile is NOT_ENOUGH_REPLICAS_AFTER_APPEND.
func (b *Broker) waitReplicated(ctx context.Context, end int64) int16 {
	if b.cfg.Replication == nil || !b.cfg.SyncReplication {
		return 0
	}
	return b.replicationCode(b.cfg.Replication.WaitReplicated(ctx, end), kerr.NotEnoughReplicasAfterAppend)
}

// replicationCode is the Kafka error code of a Replication error;
// notEnough answers ErrNotEnoughReplicas.
func (b *Broker) replicationCode(err error, notEnough *kerr.Error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrNotEnoughReplicas):
		return notEnough.Code
	case errors.Is(err, ErrNotLeader):
		return kerr.NotLeaderForPartition.Code
	}
	return b.waitError("replication", err)
}

// visibleBounds is the partition's first offset and the end consumers may
// read to: past the last record that ends at or below the high watermark.
// stored is the end of what the consume queue holds. The first offset is
// the later of the queue's first and the log start DeleteRecords moved
// (TopicMeta.LogStarts).
func (b *Broker) visibleBounds(t TopicMeta, partition int32) (lo, hi, stored int64) {
	return b.readerBounds(t, partition, b.st.Partition(t.Name, partition))
}

// readerBounds is visibleBounds through the partition's read handle h.
func (b *Broker) readerBounds(t TopicMeta, partition int32, h PartitionReader) (lo, hi, stored int64) {
	lo, stored = h.Bounds()
	lo, stored = withLogStart(t, partition, lo, stored)
	if b.cfg.Replication == nil || lo == stored {
		return lo, stored, stored
	}
	hw := b.cfg.Replication.HighWatermark()
	if hw >= b.st.WriteOffset() {
		return lo, stored, stored
	}
	return lo, firstEndingAfter(h, lo, stored, hw), stored
}

// firstEndingAfter is the first offset in [lo, stored) whose record ends
// beyond the physical offset phys, or stored if none does. Entries are in
// log order, so those past phys are a suffix; an entry that cannot be read
// counts as past it, which makes the answer earlier, never later.
func firstEndingAfter(h PartitionReader, lo, stored, phys int64) int64 {
	n := sort.Search(int(stored-lo), func(i int) bool {
		end, ok := h.RecordEnd(lo + int64(i))
		return !ok || end > phys
	})
	return lo + int64(n)
}

// logBounds is the partition's log start and stored end: the later of
// the consume queue's first offset and the start DeleteRecords or
// retention moved it to.
func (b *Broker) logBounds(t TopicMeta, partition int32) (lo, stored int64) {
	lo, stored = b.st.Bounds(t.Name, partition)
	return withLogStart(t, partition, lo, stored)
}

// withLogStart moves the queue's bounds [lo, stored) of a partition to
// the log start DeleteRecords or retention stored for it, if later.
func withLogStart(t TopicMeta, partition int32, lo, stored int64) (int64, int64) {
	if start, ok := t.LogStarts[partition]; ok && start > lo {
		// Never past the end: a log cut back below the start (a
		// follower's truncation) serves nothing until it grows again.
		lo, stored = start, max(stored, start)
	}
	return lo, stored
}

// replicationChanged is Replication.Changed, nil without replication.
func (b *Broker) replicationChanged() <-chan struct{} {
	if b.cfg.Replication == nil {
		return nil
	}
	return b.cfg.Replication.Changed()
}

// replicaStatus fills the replication part of /status.
func (b *Broker) replicaStatus(s *NodeStatus) {
	if b.cfg.Replication == nil || s.Role != "leader" {
		return
	}
	s.Followers = b.cfg.Replication.Followers()
	s.InSync = []ReplicaStatus{}
	for _, f := range s.Followers {
		if f.InSync {
			s.InSync = append(s.InSync, f)
		}
	}
	s.HighWatermark = b.cfg.Replication.HighWatermark()
}

// notLeading reports whether this node must coordinate nothing and append
// nothing of its own: it follows its group's leader, or its role has not
// been decided since Start (Config.AwaitRole).
func (b *Broker) notLeading() bool { return b.following.Load() || b.roleUnknown.Load() }

// Demote stops every local append (offset commits and their compaction;
// produces are refused by the Cluster's leadership): this node now
// replicates another's log, byte for byte, and may truncate it. The
// producer state of its own appends is dropped and rebuilt from the log as
// it replicates it, starting from the producer-state snapshot
// (producer_replica.go); the offsets snapshot is removed, as it could name
// records a truncation removes.
func (b *Broker) Demote() {
	wasFollowing := b.following.Swap(true)
	b.roleUnknown.Store(false)
	if wasFollowing {
		return
	}
	b.snapMu.Lock()
	defer b.snapMu.Unlock()
	b.partsMu.Lock()
	clear(b.parts)
	b.partsMu.Unlock()
	if err := os.Remove(filepath.Join(b.cfg.DataDir, offsetsSnapshotName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		b.log.WithError(err).WithField("file", offsetsSnapshotName).Error("snapshot of leader state not removed on becoming a follower")
	}
	b.followProducers()
	b.dropTxns()
}

// Promote completes, from the log, the state a follower did not keep
// current, before this node takes writes as leader: the producers'
// idempotence state, caught up from where the follower's own catch-up
// reached (so failover reads the last moments of the log, not all of it),
// and the group coordinator's committed offsets, replayed from the offsets
// topic.
func (b *Broker) Promote(ctx context.Context) error {
	if !b.following.Load() {
		// Leading from Start on (Config.AwaitRole): the state loaded
		// then is this log's, and nothing appended since.
		b.roleUnknown.Store(false)
		return nil
	}
	if err := b.st.WaitDispatched(ctx, b.st.WriteOffset()); err != nil {
		return fmt.Errorf("broker: promote: %w", err)
	}
	began := time.Now()
	from, to, err := b.takeReplicaProducers()
	if err != nil {
		return fmt.Errorf("broker: promote: rebuild producer state: %w", err)
	}
	c, err := b.newCoordinator(nil)
	if err != nil {
		return fmt.Errorf("broker: promote: %w", err)
	}
	if old := b.groups.Swap(c); old != nil {
		old.Close()
	}
	b.following.Store(false)
	b.roleUnknown.Store(false)
	if err := b.openTxns(); err != nil {
		return fmt.Errorf("broker: promote: %w", err)
	}
	b.log.WithFields(logrus.Fields{"producer_state_from": from, "to": to, "elapsed": time.Since(began).String()}).Info("promoted: producer state caught up, group offsets rebuilt from the log")
	return nil
}
