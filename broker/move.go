package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// Partition moves between replica groups. The control plane holds each
// move's state (package ha/controlplane, "Partition moves"); this file is
// what the two group leaders do about it, driven by a check every
// moveCheckInterval:
//
//   - the target group's leader copies the partition (move_copy.go): it
//     fetches from the source group's leader over the Kafka protocol and
//     appends each batch, as stored there, at the same offsets; once a
//     fetch reaches the source's high watermark it sets the move Fenced;
//   - the source group's leader, seeing Fenced, stops taking produce for
//     the partition (NOT_LEADER_OR_FOLLOWER, which producers retry),
//     waits for the appends it already took to be indexed and replicated,
//     and sets End to the partition's next offset;
//   - the target copies up to End, waits for that to be durable and
//     replicated in its group, and finishes the move: the partition's
//     group changes in one compare-and-set and clients follow Metadata.
//
// The target rebuilds the partition's producer and transaction state
// from the batches it copies, as recovery does from the log
// (partitionState.applyStored): a transaction open at the move stays
// open on the target, with its last stable offset, and its marker lands
// there; the source takes no marker once fenced (takesMarkers), so none
// is left behind the copy's End.
//
// Copying pulls through the source's own Fetch path: only records below
// its high watermark (on every in-sync replica of the source group) are
// copied, each stored batch is sent whole and unchanged, and nothing new
// runs on the source; its log serves one partition's batches in log
// order, one sequential read. (The replication stream cannot be used: it
// copies a whole log at the same physical offsets, and the target's log
// holds other partitions.) A leader change on either side only restarts
// the step: the new target leader copies on from its own log's next
// offset (replicated from the old one), a new source leader fences
// itself, and the copier fetches from whoever leads the source. The
// switch happens only on the word of the source leader that leads it
// then: End carries the epoch of the leader that published it
// (SourceEpoch), and a target finding another epoch clears End, so the
// new leader stops produce and publishes its own (move_copy.go, finish).
// Offsets do not change, so committed offsets stay valid, and the
// consumer groups' coordinators, which own __consumer_offsets partitions
// that never move, do not change either. The source's records are left to
// the commit log's retention. The partition's leader epoch grows across
// the switch (MovedEpoch), as Kafka clients expect of a new leader.
//
// The copier reaches the source as the nodes reach each other's
// listeners (interbroker.go): with TLS and the inter-broker login where
// the listeners ask for them.
//
// Nothing acknowledged is left behind, across any failover of the
// source: a leader takes produce for the partition only while its view
// of the metadata shows no Fenced move, and a newly elected one takes
// none until that view is at least as new as the metadata bucket was
// after it took the lease (replication.Role's lead waits for
// controlplane.Metadata.CatchUp before the node is Writable; produce
// meanwhile gets NOT_LEADER_OR_FOLLOWER, which producers retry). Say
// Fenced is stored at r1, End by the leader of epoch E at r2 > r1, and
// the target then reads the source's epoch at t1 > r2 and switches. A
// leader E' > E that took the lease after r2 saw Fenced before its first
// produce and never took one for the partition. One that took it before
// t1 is seen at t1: the target reads the newest lease from the bucket,
// past its own watch (Moves.SourceEpoch), finds E' != SourceEpoch and
// clears End, and the switch waits for E' (or a later leader) to stop
// produce and publish its own End, which holds all it acknowledged.
// Every lease taken after t1 is also taken after r2. The old leader E
// stops taking produce at its renew deadline, before any E' can take
// the lease (package controlplane, "Leases and epochs").

// Moves is what the broker needs from the control plane to move
// partitions between replica groups (package ha/controlplane behind it,
// wired in by cmd/unilog). nil: partitions never move.
type Moves interface {
	// Writer is this node's replica group and whether the node leads it
	// and may append under its epoch: a leader acts on moves only then.
	Writer() (group string, ok bool)
	// Moves lists the moves in progress.
	Moves() []PartitionMove
	// Move is one partition's move; false when it has none.
	Move(topic string, partition int32) (PartitionMove, bool)
	// StartMove records a move of the partition to the replica group to
	// (none when it is there already); ErrMoveInProgress when it moves.
	StartMove(topic string, partition int32, to string) error
	// CancelMove drops a move before its source stopped taking produce;
	// ErrNoMove, or ErrMoveInProgress once that happened.
	CancelMove(topic string, partition int32) error
	// UpdateMove changes the move with a compare-and-set; ErrNoMove when
	// it has none.
	UpdateMove(topic string, partition int32, update func(*PartitionMove) error) error
	// FinishMove gives the partition to the move's target and ends it;
	// sourceEpoch is the partition's epoch as SourceEpoch reports it now
	// (the move's SourceEpoch counts too), targetLease the target group's
	// lease epoch (MovedEpoch).
	FinishMove(topic string, partition int32, sourceEpoch int32, targetLease uint64) error
	// SourceEpoch is the partition's epoch under the newest lease of the
	// group that owns it, as the control plane holds it now: not this
	// node's view, which may lag an election by seconds.
	SourceEpoch(ctx context.Context, topic string, partition int32) (int32, error)
	// MovedEpoch is the partition's epoch base; zero for one never moved.
	MovedEpoch(topic string, partition int32) MovedEpoch
}

// MovedEpoch keeps a partition's leader epoch growing across moves: the
// epoch Kafka clients see is Base plus the owning group's lease epoch
// (Cluster.PartitionLeader adds it), and a move sets Base so that the
// target's first epoch, First, is above the source's last. Epochs below
// First are the source's; they ended at Since, where the move switched.
type MovedEpoch struct {
	Base, First int32
	Since       int64
}

// PartitionMove is a partition moving from replica group From to To.
type PartitionMove struct {
	Topic     string
	Partition int32
	From, To  string
	StartedMs int64
	// Fenced: the source takes no more produce for the partition.
	Fenced bool
	// End is -1 until the source stopped, then its next offset.
	End int64
	// Copied and SourceEnd are the target's progress: its next offset
	// and the source's high watermark when it last reported.
	Copied, SourceEnd int64
	// SourceEpoch is the partition's epoch the source reported when it
	// set End.
	SourceEpoch int32
}

// Errors of Moves.
var (
	ErrMoveInProgress = errors.New("broker: partition move in progress")
	ErrNoMove         = errors.New("broker: no partition move in progress")
)

// moveCheckInterval is how often a leader looks for moves to act on, and
// how soon it acts on a step another node took.
const moveCheckInterval = 100 * time.Millisecond

// moveProgressInterval is how often a copying target reports progress.
const moveProgressInterval = time.Second

// moveRunner tracks the moves this node is acting on, one goroutine each.
type moveRunner struct {
	mu      sync.Mutex
	running map[topicPartition]bool
	// copied counts the record batch bytes copied in (metrics).
	copied atomic.Int64
}

// steps is how many move steps run here (metrics).
func (r *moveRunner) steps() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running)
}

// checkMoves starts acting on the moves this node has a step in: only the
// leader of a replica group acts.
func (b *Broker) checkMoves() {
	group, ok := b.cfg.Moves.Writer()
	if !ok {
		return
	}
	for _, mv := range b.cfg.Moves.Moves() {
		switch {
		case mv.To == group:
			b.runMoveStep(mv, b.copyPartition)
		case mv.From == group && mv.Fenced && mv.End < 0:
			b.runMoveStep(mv, b.stopProducing)
		}
	}
}

// runMoveStep runs step for mv on a goroutine of its own unless one runs.
func (b *Broker) runMoveStep(mv PartitionMove, step func(context.Context, PartitionMove) error) {
	tp := topicPartition{mv.Topic, mv.Partition}
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	if b.moves.running[tp] {
		return
	}
	if b.moves.running == nil {
		b.moves.running = make(map[topicPartition]bool)
	}
	b.moves.running[tp] = true
	b.loopWG.Add(1)
	go func() {
		defer b.loopWG.Done()
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-b.closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := step(ctx, mv)
		cancel()
		if err != nil && ctx.Err() == nil {
			b.log.WithFields(logrus.Fields{"topic": mv.Topic, "partition": mv.Partition, "from": mv.From, "to": mv.To, "error": err}).Warn("partition move step failed; retrying")
			// Retried after a pause, not at the next check: a step that
			// keeps failing (too few replicas in sync) logs once a second.
			select {
			case <-b.closing:
			case <-time.After(time.Second):
			}
		}
		b.moves.mu.Lock()
		delete(b.moves.running, tp)
		b.moves.mu.Unlock()
	}()
}

// stopProducing is the source's step: produce to the partition is refused
// from the moment the move says Fenced (handleProduce checks it under
// topicMu), so once topicMu has been held exclusively no append taken
// before is still running. The partition's end is then final; it is
// published once indexed and replicated, so the target can fetch all of
// it.
func (b *Broker) stopProducing(ctx context.Context, mv PartitionMove) error {
	if err := b.atMovePoint(MoveStopping, mv); err != nil {
		return err
	}
	b.topicMu.Lock()
	end := b.st.WriteOffset()
	b.topicMu.Unlock()
	if err := b.st.WaitDispatched(ctx, end); err != nil {
		return err
	}
	if code := b.waitReplicated(ctx, end); code != 0 {
		return errors.New("source's last appends not replicated")
	}
	_, next := b.st.Bounds(mv.Topic, mv.Partition)
	epoch, ok := b.leaderEpoch(mv.Topic, mv.Partition)
	if !ok {
		// Deposed meanwhile: the new leader publishes the end, from a
		// log that may hold more.
		return errors.New("no longer leads the partition")
	}
	set := false
	err := b.cfg.Moves.UpdateMove(mv.Topic, mv.Partition, func(cur *PartitionMove) error {
		set = cur.Fenced && cur.End < 0 // else no longer this node's step
		if set {
			cur.End, cur.SourceEpoch = next, epoch
		}
		return nil
	})
	if err == nil && set {
		b.log.WithFields(logrus.Fields{"topic": mv.Topic, "partition": mv.Partition, "to": mv.To, "end": next}).Info("partition move: produce stopped here, handing over")
	}
	return err
}

// takesMarkers reports whether this node writes the partition's
// transaction markers: it leads the partition and no move stopped its
// writes. A marker the source took after the move's End would be left
// behind, with its transaction open for ever on the target; refused,
// the coordinator sends it again until the move is done and then to the
// target. Asked under topicMu, as produce asks produceFenced.
func (b *Broker) takesMarkers(topic string, partition int32) bool {
	return b.leads(topic, partition) && !b.produceFenced(topic, partition)
}

// produceFenced reports whether a move stopped produce to the partition.
func (b *Broker) produceFenced(topic string, partition int32) bool {
	if b.cfg.Moves == nil {
		return false
	}
	mv, ok := b.cfg.Moves.Move(topic, partition)
	return ok && mv.Fenced
}
