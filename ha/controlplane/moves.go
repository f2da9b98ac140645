package controlplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"
)

// Move is a partition on its way from the replica group that owns it
// (Topic.Groups) to another, Topic.Moves[partition]. The steps, each a
// compare-and-set on the topic's key (see "Partition moves" in the
// package doc): StartMove records it; the target group's leader copies
// and sets Fenced once caught up; the source group's leader stops taking
// produce, waits for what it took, and sets End; the target copies up
// to End and FinishMove hands the partition over.
type Move struct {
	// To is the target replica group.
	To        string `json:"to"`
	StartedMs int64  `json:"started_ms"`
	// Fenced asks the source to stop taking produce for the partition.
	Fenced bool `json:"fenced,omitempty"`
	// End is -1 until the source stopped; then the partition's next
	// offset there, the last the target must copy up to.
	End int64 `json:"end"`
	// Copied is the target's next offset and SourceEnd the source's high
	// watermark, as the target last reported them (progress).
	Copied    int64 `json:"copied"`
	SourceEnd int64 `json:"source_end"`
	// SourceEpoch is the partition's epoch as the source reported it
	// when it set End (PartitionEpoch).
	SourceEpoch int64 `json:"source_epoch"`
}

// Errors of partition moves.
var (
	ErrUnknownPartition = errors.New("ha: unknown partition")
	ErrMoveInProgress   = errors.New("ha: partition move in progress")
	ErrNoMove           = errors.New("ha: no partition move in progress")
	ErrMoveNotReady     = errors.New("ha: partition move not ready to switch")
)

// moveOf returns the move of a partition of t, checking the partition.
func moveOf(t *Topic, partition int32) (Move, bool, error) {
	if partition < 0 || partition >= t.Partitions || int(partition) >= len(t.Groups) {
		return Move{}, false, fmt.Errorf("%w: %s/%d", ErrUnknownPartition, t.Name, partition)
	}
	mv, ok := t.Moves[partition]
	return mv, ok, nil
}

// StartMove records a move of a partition to the replica group to, at
// nowMs. Moving a partition to the group that owns it is a no-op;
// ErrMoveInProgress if it is already moving (to any group).
func (m *Metadata) StartMove(topic string, partition int32, to string, nowMs int64) error {
	if !validToken(to) {
		return fmt.Errorf("ha: move %s/%d: replica group %q is not a name of letters, digits, '-' and '_'", topic, partition, to)
	}
	return m.UpdateTopic(topic, func(t *Topic) error {
		_, moving, err := moveOf(t, partition)
		switch {
		case err != nil:
			return err
		case moving:
			return fmt.Errorf("%w: %s/%d", ErrMoveInProgress, topic, partition)
		case t.Groups[partition] == to:
			return nil
		}
		if t.Moves == nil {
			t.Moves = make(map[int32]Move)
		}
		t.Moves[partition] = Move{To: to, StartedMs: nowMs, End: -1}
		return nil
	})
}

// changeMove applies change to a partition's move and its topic with a
// compare-and-set; ErrNoMove when the partition has none.
func (m *Metadata) changeMove(topic string, partition int32, change func(t *Topic, mv *Move) error) error {
	return m.UpdateTopic(topic, func(t *Topic) error {
		mv, moving, err := moveOf(t, partition)
		if err != nil {
			return err
		}
		if !moving {
			return fmt.Errorf("%w: %s/%d", ErrNoMove, topic, partition)
		}
		return change(t, &mv)
	})
}

// UpdateMove changes a partition's move in place; ErrNoMove when it has
// none. An update's error aborts the change and is returned.
func (m *Metadata) UpdateMove(topic string, partition int32, update func(*Move) error) error {
	return m.changeMove(topic, partition, func(t *Topic, mv *Move) error {
		if err := update(mv); err != nil {
			return err
		}
		t.Moves[partition] = *mv
		return nil
	})
}

// CancelMove drops a move the source has not been asked to stop for;
// once Fenced a move only finishes (ErrMoveInProgress), as its records
// are on their way.
func (m *Metadata) CancelMove(topic string, partition int32) error {
	return m.changeMove(topic, partition, func(t *Topic, mv *Move) error {
		if mv.Fenced {
			return fmt.Errorf("%w: %s/%d is switching to %s", ErrMoveInProgress, topic, partition, mv.To)
		}
		delete(t.Moves, partition)
		return nil
	})
}

// PartitionEpoch keeps a partition's leader epoch, as Kafka clients see
// it, growing across moves: it is Base plus the lease epoch of the group
// that owns the partition, and a move sets Base so that the target's first
// epoch (First) is above the last one the source reported. Epochs below
// First are the source's, which ended where the move switched (Since).
type PartitionEpoch struct {
	Base  int64 `json:"base"`
	First int64 `json:"first"`
	Since int64 `json:"since"`
}

// Under is the partition's epoch while its group holds lease epoch
// lease: Base (never negative in effect) plus lease.
func (e PartitionEpoch) Under(lease uint64) uint64 { return lease + uint64(max(0, e.Base)) }

// FinishMove hands a partition to its move's target group and ends the
// move, in one compare-and-set: every node then sends its clients to the
// target. sourceEpoch is the partition's epoch as the source reports it
// now (its base included; -1 when it has no leader), taken with the one
// the move recorded at End; targetLease is the target group's lease
// epoch. The move must have its End (ErrMoveNotReady otherwise).
func (m *Metadata) FinishMove(topic string, partition int32, sourceEpoch int64, targetLease uint64) error {
	return m.changeMove(topic, partition, func(t *Topic, mv *Move) error {
		if !mv.Fenced || mv.End < 0 {
			return fmt.Errorf("%w: %s/%d", ErrMoveNotReady, topic, partition)
		}
		t.Groups[partition] = mv.To
		delete(t.Moves, partition)
		if t.Epochs == nil {
			t.Epochs = make(map[int32]PartitionEpoch)
		}
		base := max(0, max(sourceEpoch, mv.SourceEpoch)+1-int64(targetLease))
		t.Epochs[partition] = PartitionEpoch{Base: base, First: base + int64(targetLease), Since: mv.End}
		return nil
	})
}

// PartitionMove is one move in progress with its topic, partition and
// source group.
type PartitionMove struct {
	Topic     string
	Partition int32
	From      string
	Move
}

// Moves lists the moves in progress, by topic and partition.
func (m *Metadata) Moves() []PartitionMove {
	m.mu.RLock()
	topics := make([]Topic, 0, len(m.moving))
	for name := range m.moving {
		topics = append(topics, m.topics[name].t)
	}
	m.mu.RUnlock()
	var out []PartitionMove
	for _, t := range topics {
		for p, mv := range t.Moves {
			if int(p) < len(t.Groups) {
				out = append(out, PartitionMove{Topic: t.Name, Partition: p, From: t.Groups[p], Move: mv})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Move is one partition's move; false when it has none. It is on every
// produce's path (the source's fence), so a topic without moves costs a
// map lookup.
func (m *Metadata) Move(topic string, partition int32) (PartitionMove, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if !m.moving[topic] {
		return PartitionMove{}, false
	}
	e := m.topics[topic]
	mv, ok := e.t.Moves[partition]
	if !ok || int(partition) >= len(e.t.Groups) {
		return PartitionMove{}, false
	}
	return PartitionMove{Topic: topic, Partition: partition, From: e.t.Groups[partition], Move: mv}, true
}

// FencedInTopic reports, as of the call, which partitions of topic have a
// move that stopped their source's produce (Move's Fenced), for a produce
// to ask once per topic of a request rather than once per partition.
func (m *Metadata) FencedInTopic(topic string) func(partition int32) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if !m.moving[topic] {
		return fencedNone
	}
	e := m.topics[topic]
	var fenced []int32
	for p, mv := range e.t.Moves {
		if mv.Fenced && int(p) < len(e.t.Groups) {
			fenced = append(fenced, p)
		}
	}
	return func(p int32) bool { return slices.Contains(fenced, p) }
}

func fencedNone(int32) bool { return false }

// Epoch is a partition's PartitionEpoch; zero for one that never moved.
// Every Metadata answer and produce asks it: two map lookups.
func (m *Metadata) Epoch(topic string, partition int32) PartitionEpoch {
	m.mu.RLock()
	defer m.mu.RUnlock()
	e, ok := m.topics[topic]
	if !ok || e.deleted {
		return PartitionEpoch{}
	}
	return e.t.Epochs[partition]
}

// BindMetadata follows the metadata bucket the brokers created, for
// operators' tools (unilog topic move, unilog cluster rebalance); it
// creates nothing, and creating topics through it is refused.
func BindMetadata(ctx context.Context, nc *nats.Conn, log logrus.FieldLogger) (*Metadata, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("ha: jetstream: %w", err)
	}
	kv, err := js.KeyValue(ctx, MetadataBucket)
	if err != nil {
		return nil, fmt.Errorf("ha: bucket %s: %w", MetadataBucket, err)
	}
	return OpenMetadata(ctx, kv, nil, log)
}
