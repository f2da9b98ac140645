package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

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
	st Storage
	b  *Broker
}

// Append refuses, as an acks=-1 produce, a commit that sync replication
// could not make durable, before storing it.
func (l offsetsLog) Append(partition int32, recs []group.Record) (int64, int64, error) {
	if l.b.notLeading() {
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
// holds.
func (l offsetsLog) Start(partition int32) int64 { return l.st.FirstHeld(offsetsTopic, partition) }

// Replay reads the partition's batches from max(from, Start).
func (l offsetsLog) Replay(partition int32, from int64, fn func(group.Record, int64) error) (int64, error) {
	h := l.st.Partition(offsetsTopic, partition)
	_, stored := h.Bounds()
	off := max(from, l.Start(partition))
	var buf []byte
	for off < stored {
		batch, _, next, err := h.ReadBatch(off, buf[:0])
		if err != nil {
			return 0, fmt.Errorf("broker: replay %s/%d offset %d: %w", offsetsTopic, partition, off, err)
		}
		end, _ := h.RecordEnd(off)
		if err := replayBatch(batch, end, fn); err != nil {
			return 0, fmt.Errorf("broker: replay %s/%d offset %d: %w", offsetsTopic, partition, off, err)
		}
		off, buf = next, batch
	}
	return off, nil
}

// replayBatch calls fn with each record of one offsets-topic batch, whose
// record in the log ends at end.
func replayBatch(batch []byte, end int64, fn func(group.Record, int64) error) error {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(batch); err != nil {
		return fmt.Errorf("%w: record batch: %v", group.ErrCorrupt, err)
	}
	err := eachRecord(&rb, func(kr kmsg.Record) error {
		return fn(group.Record{Key: kr.Key, Value: kr.Value}, end)
	})
	if errors.Is(err, errBadRecord) {
		return fmt.Errorf("%w: %w", group.ErrCorrupt, err)
	}
	return err
}
