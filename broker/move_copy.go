package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/store"
)

// moveFetchBytes bounds one copying fetch; moveFetchWait is its long
// poll while the source takes produce, moveTailWait once it stopped (the
// partition takes no produce anywhere until the copy ends: no waiting
// for records that cannot come).
const (
	moveFetchBytes = 8 << 20
	moveFetchWait  = 500 * time.Millisecond
	moveTailWait   = 5 * time.Millisecond
)

// ErrStorageOffset reports an AppendAt the partition's offsets refuse.
var ErrStorageOffset = store.ErrNotNext

// copyPartition is the target's step: it copies until the move finishes,
// is cancelled, or this node stops leading the target group.
func (b *Broker) copyPartition(ctx context.Context, mv PartitionMove) error {
	c := &moveCopier{b: b, st: b.st, topic: mv.Topic, partition: mv.Partition}
	defer c.close()
	b.log.WithFields(logrus.Fields{"topic": mv.Topic, "partition": mv.Partition, "from": mv.From, "to": mv.To}).Info("partition move: copying")
	for ctx.Err() == nil {
		cur, ok := b.cfg.Moves.Move(mv.Topic, mv.Partition)
		if group, writer := b.cfg.Moves.Writer(); !ok || !writer || group != cur.To {
			return nil
		}
		done, err := c.step(ctx, cur)
		if done || ctx.Err() != nil {
			return err
		}
		if err != nil {
			b.log.WithFields(logrus.Fields{"topic": mv.Topic, "partition": mv.Partition, "error": err}).Info("partition move: copy retrying")
			select {
			case <-ctx.Done():
			case <-time.After(moveCheckInterval * 5):
			}
		}
	}
	return ctx.Err()
}

// moveCopier copies one partition from the source group's leader.
type moveCopier struct {
	b         *Broker
	st        Storage
	topic     string
	partition int32

	cl       *kgo.Client
	clAddr   string
	from     int64 // set when the source's log starts after this one's end
	reported time.Time
}

func (c *moveCopier) close() {
	if c.cl != nil {
		c.cl.Close()
	}
}

// step fetches once and appends what came, fences the source once caught
// up and finishes the move once its End is copied; done when finished.
//
// Caught up means this log's next offset reached the source's high
// watermark. A partition whose records here are none and whose records on
// the source have all gone (its log start is its high watermark) is never
// caught up: its offsets would start at 0 here after the switch, so the
// move waits for a record to copy, which sets them.
func (c *moveCopier) step(ctx context.Context, mv PartitionMove) (done bool, err error) {
	next := c.st.NextOffset(c.topic, c.partition)
	if mv.End >= 0 && next >= mv.End {
		err := c.finish(ctx, mv)
		if errors.Is(err, errSourceChanged) {
			return false, nil // copies on to the end the new leader publishes
		}
		return true, err
	}
	node, _, ok := c.b.cfg.Cluster.PartitionLeader(c.topic, c.partition)
	if !ok {
		return false, errors.New("source group has no leader")
	}
	wait := moveFetchWait
	if mv.Fenced {
		wait = moveTailWait
	}
	hw, err := c.fetch(ctx, node, max(next, c.from), wait)
	if err != nil {
		return false, err
	}
	next = c.st.NextOffset(c.topic, c.partition)
	if err := c.b.atMovePoint(MoveCopied, mv); err != nil {
		return false, err
	}
	if time.Since(c.reported) >= moveProgressInterval || (!mv.Fenced && next >= hw) {
		c.reported = time.Now()
		err = c.b.cfg.Moves.UpdateMove(c.topic, c.partition, func(cur *PartitionMove) error {
			cur.Copied, cur.SourceEnd = next, hw
			// Caught up with the source: it may stop taking produce.
			cur.Fenced = cur.Fenced || next >= hw
			return nil
		})
	}
	return false, err
}

// fetch copies what one Fetch from the source leader returns from next
// and returns the source's high watermark.
func (c *moveCopier) fetch(ctx context.Context, node int32, next int64, wait time.Duration) (int64, error) {
	cl, err := c.client(node)
	if err != nil {
		return 0, err
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(wait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = moveFetchBytes
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = c.topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes = c.partition, next, -1, moveFetchBytes
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
	if err != nil {
		return 0, fmt.Errorf("fetch %s/%d at %d from node %d: %w", c.topic, c.partition, next, node, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, fmt.Errorf("fetch from node %d: %w", node, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("fetch from node %d: answer without the partition", node)
	}
	p := resp.Topics[0].Partitions[0]
	switch err := kerr.ErrorForCode(p.ErrorCode); {
	case errors.Is(err, kerr.OffsetOutOfRange) && next < p.LogStartOffset:
		// The source's records start later than this log's end: a
		// partition new here starts where the source's does.
		if lo, hi := c.b.st.Bounds(c.topic, c.partition); lo != hi {
			return 0, fmt.Errorf("source starts at %d, past this group's copy ending at %d: %w", p.LogStartOffset, hi, ErrStorageOffset)
		}
		c.from = p.LogStartOffset
		return p.HighWatermark, nil
	case err != nil:
		return 0, fmt.Errorf("fetch %s/%d at %d from node %d: %w", c.topic, c.partition, next, node, err)
	}
	return p.HighWatermark, c.appendBatches(p.RecordBatches, next)
}

// client is a Kafka client of the source leader's listener.
func (c *moveCopier) client(node int32) (*kgo.Client, error) {
	addr, err := c.b.peerAddr(node)
	if err != nil {
		return nil, fmt.Errorf("source leader: %w", err)
	}
	if c.cl != nil && c.clAddr == addr {
		return c.cl, nil
	}
	c.close()
	cl, err := c.b.dialPeer(addr, "unilog-partition-move")
	if err != nil {
		return nil, fmt.Errorf("source leader node %d: %w", node, err)
	}
	c.cl, c.clAddr = cl, addr
	return cl, nil
}

// appendBatches stores the fetched batches from next on, each as the
// source stored it and at its offsets, and records idempotent producers'
// batches in this node's producer state as a produce would: a producer
// moving with the partition continues its sequence here, and a retry of
// a batch the source stored is answered with its offset.
func (c *moveCopier) appendBatches(raw []byte, next int64) error {
	for first := true; len(raw) > 0; first = false {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			if first {
				// The first batch of a fetch is sent whole (KIP-74).
				return fmt.Errorf("batch at %d unreadable: %w", next, err)
			}
			return nil // cut by the fetch's byte limit: the next fetch gets it
		}
		size := 12 + int(rb.Length)
		batch := raw[:size]
		raw = raw[size:]
		if rb.FirstOffset+int64(rb.LastOffsetDelta) < next {
			continue
		}
		if rb.FirstOffset != next {
			// Only a batch straddling the source's log start, served
			// whole as Kafka serves it, may begin before the fetch
			// offset: it starts a partition that holds nothing here.
			lo, hi := c.b.st.Bounds(c.topic, c.partition)
			if rb.FirstOffset > next || lo != hi || c.st.NextOffset(c.topic, c.partition) > rb.FirstOffset {
				return fmt.Errorf("batch at %d straddles the copy's next offset %d: %w", rb.FirstOffset, next, ErrStorageOffset)
			}
			next = rb.FirstOffset
		}
		bi, err := validateCopied(batch)
		if err != nil {
			return fmt.Errorf("batch at %d: %w", rb.FirstOffset, err)
		}
		if err := c.appendBatch(batch, bi, next); err != nil {
			return err
		}
		next += int64(bi.numRecords)
	}
	return nil
}

// validateCopied checks a batch fetched from the source as a produced one
// is checked, but for a transaction marker: no client may produce one, and
// the source's log holds one wherever a transaction in the partition
// ended. A marker's checksum and its record are checked instead.
func validateCopied(batch []byte) (batchInfo, error) {
	bi, ok := storedBatchProducer(batch)
	if !ok || !bi.control() {
		bi, berr := validateBatch(batch, math.MaxInt32)
		if berr != nil {
			return bi, berr
		}
		return bi, nil
	}
	if crc := crc32.Checksum(batch[batchAttributes:], castagnoli); crc != binary.BigEndian.Uint32(batch[batchCRCAt:]) {
		return bi, fmt.Errorf("transaction marker CRC %08x, computed %08x", binary.BigEndian.Uint32(batch[batchCRCAt:]), crc)
	}
	if _, marker := markerCommits(batch); !marker {
		return bi, errors.New("control batch without a commit or abort marker")
	}
	return bi, nil
}

// appendBatch stores one batch under the locks a produce takes.
func (c *moveCopier) appendBatch(batch []byte, bi batchInfo, base int64) error {
	b := c.b
	b.topicMu.RLock()
	defer b.topicMu.RUnlock()
	if _, ok := b.meta.Topic(c.topic); !ok {
		return fmt.Errorf("copy %s: %w", c.topic, ErrUnknownTopic)
	}
	p := b.partition(c.topic, c.partition)
	b.appendMu.Lock()
	defer b.appendMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	out, err := c.st.AppendAt(nil, StorageBatch{Topic: c.topic, Partition: c.partition, Count: bi.numRecords, MaxTimestamp: bi.maxTimestamp, Records: batch}, base)
	b.noteAppend(err)
	if err != nil {
		return fmt.Errorf("copy %s/%d at %d: %w", c.topic, c.partition, base, err)
	}
	if bi.producerID >= 0 {
		p.applyStored(bi, batch, out[0].Base, out[0].End)
		b.producerChanges.Add(1)
	}
	b.moves.copied.Add(int64(len(batch)))
	return nil
}

// errSourceChanged: the source group's leader changed since it published
// the move's End; the move asks the new one for it.
var errSourceChanged = errors.New("source leader changed since it stopped taking produce")

// finish waits for the copy to be durable, indexed and replicated here as
// an acks=-1 produce would, then hands the partition over.
//
// Only if no leader was elected in the source group since the one that
// published End (its epoch, SourceEpoch, is the partition's under the
// group's newest lease): a leader elected since then may have taken
// produce before its view of the control plane showed the move fenced,
// past End, and switching would lose those records. The move's End is
// cleared instead, so the new leader stops produce and publishes its
// own, at least as far (it holds everything the old one replicated) and
// copied before the switch.
func (c *moveCopier) finish(ctx context.Context, mv PartitionMove) error {
	if code := c.b.waitProduced(ctx, -1, c.b.st.WriteOffset()); code != 0 {
		return fmt.Errorf("copy not replicated: %w", kerr.ErrorForCode(code))
	}
	if err := c.b.atMovePoint(MoveSwitching, mv); err != nil {
		return err
	}
	// The source's epoch now, read past this node's view: the target's
	// first is above it, and a leader elected since End was published
	// must be seen (see the safety argument in move.go).
	sourceEpoch, err := c.b.cfg.Moves.SourceEpoch(ctx, c.topic, c.partition)
	if err != nil {
		return fmt.Errorf("source group's epoch: %w", err)
	}
	if sourceEpoch != mv.SourceEpoch {
		err := c.b.cfg.Moves.UpdateMove(c.topic, c.partition, func(cur *PartitionMove) error {
			if cur.End == mv.End && cur.SourceEpoch == mv.SourceEpoch {
				cur.End = -1
			}
			return nil
		})
		if err != nil {
			return err
		}
		c.b.log.WithFields(logrus.Fields{"topic": c.topic, "partition": c.partition, "end": mv.End, "epoch": mv.SourceEpoch, "source_epoch": sourceEpoch}).
			Info("partition move: the source's leader changed since it stopped; the new one confirms the end")
		return errSourceChanged
	}
	if err := c.b.atMovePoint(MoveConfirmed, mv); err != nil {
		return err
	}
	if err := c.b.cfg.Moves.FinishMove(c.topic, c.partition, sourceEpoch, c.b.cfg.Cluster.Status().Epoch); err != nil {
		return err
	}
	c.b.log.WithFields(logrus.Fields{"topic": c.topic, "partition": c.partition}).Info("partition move: finished, this group leads the partition")
	return nil
}
