package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/ha/controlplane"
	"github.com/unilog/unilog/ha/replication"
)

// haMoves is the broker's Moves over the control plane's metadata.
type haMoves struct {
	m *controlplane.Metadata
	n *controlplane.Node
	r *replication.Role
}

// Writer: leading the replica group with the epoch's start recorded, as
// a produce needs (haCluster.PartitionLeader).
func (s haMoves) Writer() (string, bool) {
	st := s.n.Elector().State()
	return st.Group, st.Role == controlplane.RoleLeader && s.n.Elector().Leading(st.Epoch) && s.r.Writable(st.Epoch)
}

func toPartitionMove(pm controlplane.PartitionMove) broker.PartitionMove {
	return broker.PartitionMove{Topic: pm.Topic, Partition: pm.Partition, From: pm.From, To: pm.To, StartedMs: pm.StartedMs,
		Fenced: pm.Fenced, End: pm.End, Copied: pm.Copied, SourceEnd: pm.SourceEnd, SourceEpoch: broker.ClampEpoch(uint64(max(0, pm.SourceEpoch)))}
}

func (s haMoves) Moves() []broker.PartitionMove {
	ms := s.m.Moves()
	out := make([]broker.PartitionMove, len(ms))
	for i, pm := range ms {
		out[i] = toPartitionMove(pm)
	}
	return out
}

func (s haMoves) Move(topic string, partition int32) (broker.PartitionMove, bool) {
	pm, ok := s.m.Move(topic, partition)
	return toPartitionMove(pm), ok
}

// haMoves answers a produce's fence once per topic: without this method
// the broker falls back to Move per partition, silently.
var _ interface {
	FencedInTopic(topic string) func(partition int32) bool
} = haMoves{}

// FencedInTopic is Move's Fenced over the partitions of a topic, resolved
// once (broker.topicFence).
func (s haMoves) FencedInTopic(topic string) func(partition int32) bool {
	return s.m.FencedInTopic(topic)
}

func (s haMoves) StartMove(topic string, partition int32, to string) error {
	return moveError(s.m.StartMove(topic, partition, to, time.Now().UnixMilli()))
}

func (s haMoves) CancelMove(topic string, partition int32) error {
	return moveError(s.m.CancelMove(topic, partition))
}

// UpdateMove lets update change the steps' fields; topic, partition and
// the groups stay the control plane's.
func (s haMoves) UpdateMove(topic string, partition int32, update func(*broker.PartitionMove) error) error {
	return moveError(s.m.UpdateMove(topic, partition, func(mv *controlplane.Move) error {
		pm := toPartitionMove(controlplane.PartitionMove{Topic: topic, Partition: partition, Move: *mv})
		if err := update(&pm); err != nil {
			return err
		}
		mv.Fenced, mv.End, mv.Copied, mv.SourceEnd, mv.SourceEpoch = pm.Fenced, pm.End, pm.Copied, pm.SourceEnd, int64(pm.SourceEpoch)
		return nil
	}))
}

func (s haMoves) FinishMove(topic string, partition int32, sourceEpoch int32, targetLease uint64) error {
	return moveError(s.m.FinishMove(topic, partition, int64(sourceEpoch), targetLease))
}

// SourceEpoch reads the owning group's lease past this node's watch
// (Node.LeaseEpoch), bounded as a metadata operation is: the move step
// retries.
func (s haMoves) SourceEpoch(ctx context.Context, topic string, partition int32) (int32, error) {
	t, ok := s.m.Topic(topic)
	if !ok || partition < 0 || int(partition) >= len(t.Groups) {
		return 0, fmt.Errorf("%w: %s/%d", broker.ErrUnknownTopic, topic, partition)
	}
	ctx, cancel := context.WithTimeout(ctx, sourceEpochTimeout)
	defer cancel()
	lease, err := s.n.LeaseEpoch(ctx, t.Groups[partition])
	if err != nil {
		return 0, brokerError(err)
	}
	return broker.ClampEpoch(s.m.Epoch(topic, partition).Under(lease)), nil
}

// sourceEpochTimeout bounds SourceEpoch: the leases watch may stay quiet
// 10 to 20 s after its server died (package controlplane's doc).
const sourceEpochTimeout = 30 * time.Second

func (s haMoves) MovedEpoch(topic string, partition int32) broker.MovedEpoch {
	e := s.m.Epoch(topic, partition)
	return broker.MovedEpoch{Base: clampBase(e.Base), First: clampBase(e.First), Since: e.Since}
}

// clampBase maps a stored epoch base onto Kafka's int32 epochs.
func clampBase(v int64) int32 { return broker.ClampEpoch(uint64(max(0, v))) }

// moveError maps the control plane's sentinels onto the broker's.
func moveError(err error) error {
	switch {
	case errors.Is(err, controlplane.ErrMoveInProgress):
		return fmt.Errorf("%w: %w", broker.ErrMoveInProgress, err)
	case errors.Is(err, controlplane.ErrNoMove):
		return fmt.Errorf("%w: %w", broker.ErrNoMove, err)
	case errors.Is(err, controlplane.ErrUnknownPartition):
		return fmt.Errorf("%w: %w", broker.ErrUnknownTopic, err)
	}
	return brokerError(err)
}
