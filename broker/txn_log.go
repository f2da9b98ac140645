package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/group"
	"github.com/unilog/unilog/txn"
)

// txnStateTopic is the internal topic holding the transaction
// coordinator's state (package txn), ordinary record batches in the
// commit log like __consumer_offsets, so it recovers and replicates with
// the data.
const txnStateTopic = "__transaction_state"

// txnLog is txn.Log over the broker's storage.
type txnLog struct{ b *Broker }

// Append stores the state record and the markers of the partitions this
// node leads with one append (appendMarkers); the other groups' markers
// are txnRemote's. It refuses on a node that does not lead, including one
// whose role is not known yet (Config.AwaitRole): the coordinator's
// timeout scan runs from Open, and on a deposed leader restarting it
// would write states and markers the group's leader never sees. It
// refuses too where the state's partition is not this node's to write,
// as produce would: another group's (each group's leader coordinates the
// ids of its own partitions, and one reached by a stale client would be
// a second coordinator of the id), or this group's under a lease that
// lapsed before Demote came.
func (l txnLog) Append(ctx context.Context, partition int32, rec txn.Record, m *txn.Markers) (int64, error) {
	b := l.b
	if b.notLeading() || !b.leads(txnStateTopic, partition) {
		return 0, fmt.Errorf("broker: transaction state in %s/%d: %w: %w", txnStateTopic, partition, txn.ErrNotCoordinator, ErrNotLeader)
	}
	if r := b.cfg.Replication; r != nil && b.cfg.SyncReplication {
		if err := r.CheckInSync(); err != nil {
			return 0, fmt.Errorf("broker: transaction state: %w", txnError(err))
		}
	}
	now := b.now().UnixMilli()
	state := StorageBatch{Topic: txnStateTopic, Partition: partition, Count: 1, MaxTimestamp: now,
		Records: newBatch([]kmsg.Record{{Key: rec.Key, Value: rec.Value}}, now, now)}
	var markers []txnMarker
	if m != nil {
		for _, tp := range m.Partitions {
			markers = append(markers, txnMarker{topic: tp.Topic, partition: tp.Partition, producerID: m.ProducerID, epoch: m.Epoch, commit: m.Commit})
		}
	}
	end, _, err := b.appendMarkers(&state, markers)
	if err != nil {
		return 0, fmt.Errorf("broker: append transaction state: %w", err)
	}
	return end, l.wait(ctx, end)
}

// wait returns once the append through end is what an acks=-1 produce
// waits for (waitStored): flushed under FlushSync, indexed (so fetches
// see the markers), and on the in-sync replicas under sync replication.
func (l txnLog) wait(ctx context.Context, end int64) error {
	what, err := l.b.waitStored(ctx, -1, end, nil)
	if what == waitReplication {
		return txnError(err)
	}
	return err
}

// txnError gives a Replication error the transaction coordinator's meaning.
func txnError(err error) error {
	return coordinatorError(err, txn.ErrNotCoordinator, txn.ErrNotEnoughReplicas)
}

// Replay reads the partition's records through the consume queue, batch
// by batch.
func (l txnLog) Replay(partition int32, fn func(txn.Record) error) error {
	return eachStoredBatch(l.b.st.Partition(txnStateTopic, partition), func(off int64, batch []byte) error {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(batch); err != nil {
			return fmt.Errorf("%w: %s/%d offset %d: %v", txn.ErrCorrupt, txnStateTopic, partition, off, err)
		}
		if err := eachRecord(&rb, func(r kmsg.Record) error { return fn(txn.Record{Key: r.Key, Value: r.Value}) }); err != nil {
			return fmt.Errorf("%s/%d offset %d: %w", txnStateTopic, partition, off, err)
		}
		return nil
	})
}

// eachStoredBatch calls fn with each batch of the partition and its
// offset, stopping at fn's first error; offsets retention already
// deleted are skipped. The batch is valid until fn returns.
func eachStoredBatch(h PartitionReader, fn func(off int64, batch []byte) error) error {
	lo, hi := h.Bounds()
	var buf []byte
	for off := lo; off < hi; {
		out, _, next, err := h.ReadBatch(off, buf[:0])
		if errors.Is(err, ErrStorageRange) {
			off++
			continue
		}
		if err != nil {
			return err
		}
		buf = out
		if err := fn(off, out); err != nil {
			return err
		}
		off = next
	}
	return nil
}

// txnGroups is txn.Groups over the group coordinator.
type txnGroups struct{ b *Broker }

func (g txnGroups) CheckMember(groupID, member string, instance *string, generation int32) int16 {
	c := g.b.groups.Load()
	if c == nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	return c.CheckCommit(groupID, member, instance, generation)
}

func (g txnGroups) Commit(ctx context.Context, groupID string, offs []txn.Offset) error {
	c := g.b.groups.Load()
	if c == nil {
		return fmt.Errorf("broker: commit transaction offsets: %w", txn.ErrNotCoordinator)
	}
	now := g.b.now().UnixMilli()
	m := make(map[group.TopicPartition]*group.Offset, len(offs))
	for _, o := range offs {
		m[group.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = &group.Offset{Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitMs: now}
	}
	switch code := c.CommitTxnOffsets(ctx, groupID, m); code {
	case 0:
		return nil
	case kerr.NotCoordinator.Code:
		return fmt.Errorf("broker: commit transaction offsets: %w", txn.ErrNotCoordinator)
	default:
		return fmt.Errorf("broker: commit transaction offsets: %w", kerr.ErrorForCode(code))
	}
}

// compactTxns rewrites the transaction states held in the oldest
// commit-log file at the head of the log (txn.Coordinator.Compact), so
// retention can delete the file.
func (b *Broker) compactTxns() {
	c := b.txns.Load()
	if b.notLeading() || c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	switch n, err := c.Compact(ctx, b.st.OldestFileEnd()); {
	case err != nil:
		b.log.WithError(err).Error("transaction state compaction failed")
	case n > 0:
		b.log.WithField("states", n).Info("transaction states copied out of the oldest commit-log file")
	}
}
