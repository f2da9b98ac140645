package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/group"
)

// offsetsTopic is the internal topic holding committed offsets. Its records
// are ordinary v2 record batches in the commit log, dispatched into consume
// queues like any topic's, so whatever carries the log carries them.
const offsetsTopic = "__consumer_offsets"

// isInternalTopic reports names reserved for the broker's own topics.
func isInternalTopic(name string) bool { return len(name) >= 2 && name[:2] == "__" }

// offsetsLog is group.Log over the broker's storage: each commit is one
// record batch appended to a partition of offsetsTopic, replayed through
// its consume queue.
type offsetsLog struct {
	st *dispatcherStorage
	b  *Broker
}

// Append refuses, as an acks=-1 produce, a commit that sync replication
// could not make durable, before storing it.
func (l offsetsLog) Append(partition int32, recs []group.Record) (int64, int64, error) {
	if l.b.following.Load() {
		return 0, 0, fmt.Errorf("broker: commit offsets: %w: %w", group.ErrNotCoordinator, ErrNotLeader)
	}
	if r := l.b.cfg.Replication; r != nil && l.b.cfg.SyncReplication {
		if err := r.CheckInSync(); err != nil {
			return 0, 0, fmt.Errorf("broker: commit offsets: %w", groupError(err))
		}
	}
	now := time.Now().UnixMilli()
	krecs := make([]kmsg.Record, len(recs))
	for i, r := range recs {
		krecs[i] = kmsg.Record{Key: r.Key, Value: r.Value}
	}
	out, err := l.st.Append(nil, []StorageBatch{{Topic: offsetsTopic, Partition: partition, Count: int32(len(recs)), MaxTimestamp: now, Records: newBatch(krecs, now, now)}})
	if err != nil {
		return 0, 0, err
	}
	return out[0].End, out[0].Base + int64(len(recs)), nil
}

// WaitDurable waits until the log is on disk through end and, with sync
// replication, on the in-sync followers too: offsets are records of the
// log and replicate with it.
func (l offsetsLog) WaitDurable(ctx context.Context, end int64) error {
	if err := l.st.WaitDurable(ctx, end); err != nil {
		return err
	}
	if r := l.b.cfg.Replication; r != nil && l.b.cfg.SyncReplication {
		return groupError(r.WaitReplicated(ctx, end))
	}
	return nil
}

// groupError gives a Replication error the group coordinator's meaning.
func groupError(err error) error {
	return coordinatorError(err, group.ErrNotCoordinator, group.ErrNotEnoughReplicas)
}

// coordinatorError wraps a Replication error in a coordinator's sentinels.
func coordinatorError(err, notCoordinator, notEnough error) error {
	switch {
	case errors.Is(err, ErrNotLeader):
		return fmt.Errorf("%w: %w", notCoordinator, err)
	case errors.Is(err, ErrNotEnoughReplicas):
		return fmt.Errorf("%w: %w", notEnough, err)
	}
	return err
}

func (l offsetsLog) OldestFileEnd() int64 { return l.st.OldestFileEnd() }

// Start is the first offset of the partition whose record the log still
// holds: a queue file is dropped only once all of it is before the log's
// start, so its first entries may point at deleted records.
func (l offsetsLog) Start(partition int32) int64 {
	q, ok := l.st.d.Queue(offsetsTopic, partition)
	if !ok {
		return 0
	}
	off := q.MinOffset()
	for ; off < q.MaxOffset(); off++ {
		if e, err := q.Get(off); err != nil || e.PhysOffset >= l.st.log.MinOffset() {
			break
		}
	}
	return off
}

// Replay reads the partition's queue from max(from, Start).
func (l offsetsLog) Replay(partition int32, from int64, fn func(group.Record, int64) error) (int64, error) {
	q, ok := l.st.d.Queue(offsetsTopic, partition)
	if !ok {
		return 0, nil
	}
	off := max(from, l.Start(partition))
	for off < q.MaxOffset() {
		e, err := q.Get(off)
		if err != nil {
			return 0, fmt.Errorf("broker: replay %s/%d offset %d: %w", offsetsTopic, partition, off, err)
		}
		if off, err = l.replayRecord(e, partition, fn); err != nil {
			return 0, fmt.Errorf("broker: replay %s/%d offset %d: %w", offsetsTopic, partition, e.PhysOffset, err)
		}
	}
	return off, nil
}

func (l offsetsLog) replayRecord(e consumequeue.Entry, partition int32, fn func(group.Record, int64) error) (int64, error) {
	v, err := l.st.log.Read(e.PhysOffset)
	if err != nil {
		return 0, err
	}
	defer v.Release()
	r := v.Record()
	if r.Topic != offsetsTopic || r.Partition != partition {
		return 0, fmt.Errorf("%w: queue points at %s/%d", commitlog.ErrCorrupt, r.Topic, r.Partition)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(r.Body); err != nil {
		return 0, fmt.Errorf("%w: record batch: %v", commitlog.ErrCorrupt, err)
	}
	err = eachRecord(&rb, func(kr kmsg.Record) error {
		return fn(group.Record{Key: kr.Key, Value: kr.Value}, r.End())
	})
	if errors.Is(err, errBadRecord) {
		return 0, fmt.Errorf("%w: %w", commitlog.ErrCorrupt, err)
	}
	if err != nil {
		return 0, err
	}
	return r.QueueOffset + int64(r.Count), nil
}
