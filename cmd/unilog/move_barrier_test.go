package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/ha/controlplane"
	"github.com/unilog/unilog/internal/poll"
)

// TestPartitionMoveLaggingSourceLeader moves a partition from g1 (node 2
// leading, node 3 following) to g2 (node 1) while node 3's metadata
// watch is held from before the move's fence. Once the target confirmed
// the source's epoch, and before it switches, node 2 stops and node 3
// takes g1's lease: with a view that shows the partition neither fenced
// nor moved, it must still take no produce for it (it catches up with
// the metadata before it leads), where taking one would acknowledge
// records the switch leaves behind. Every acknowledged record is read
// back once from the target at its offset.
func TestPartitionMoveLaggingSourceLeader(t *testing.T) {
	nodes, natsURL, secret := startGroupNodes(t, "g2", "g1", "g1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, adm := clusterClient(ctx, t, nodes)
	createTopic(t, nodes[0].addr, "lag", 2)
	part := partitionLedBy(ctx, t, adm, "lag", 2, 2)
	targetAdm := kadm.NewClient(plainClient(t, nodes[0].addr))

	var holding atomic.Bool
	release := make(chan struct{})
	var releaseOnce sync.Once
	unhold := func() { releaseOnce.Do(func() { close(release) }) }
	controlplane.SetMetadataWatchHook(func(node int32) {
		if node == 3 && holding.Load() {
			<-release
		}
	})
	t.Cleanup(func() { unhold(); controlplane.SetMetadataWatchHook(nil) })
	var fired atomic.Bool
	confirmed := make(chan struct{})
	broker.SetMoveHook(func(node int32, at broker.MovePoint, mv broker.PartitionMove) error {
		if node != 1 || mv.Topic != "lag" {
			return nil
		}
		switch {
		case at == broker.MoveCopied:
			// Before the copy reports: the fence is not stored yet.
			holding.Store(true)
		case at == broker.MoveConfirmed && fired.CompareAndSwap(false, true):
			nodes[1].stop()
			for leaderOf(ctx, targetAdm, "lag", part) != 3 && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			close(confirmed)
		}
		return nil
	})
	t.Cleanup(func() { broker.SetMoveHook(nil) })

	producer := produceAndMove(ctx, t, []string{nodes[0].addr, nodes[2].addr}, natsURL, secret, "lag", part)
	select {
	case <-confirmed:
	case <-ctx.Done():
		t.Fatal("the move never reached its switch")
	}
	// Node 3 holds g1's lease; its view is held before the fence.
	direct := plainClient(t, nodes[2].addr)
	for i := 0; i < 50; i++ {
		if err := produceOne(ctx, direct, 3, "lag", part); !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("produce to node 3, the new source leader lagging behind the fence: %v, want NOT_LEADER_OR_FOLLOWER", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	unhold()
	poll.True(t, "the partition led by g2's node 1", func() bool { return leaderOf(ctx, adm, "lag", part) == 1 })
	atMove := producer.count()
	poll.True(t, "500 more records acknowledged by g2", func() bool { return producer.count() >= atMove+500 })
	acked := producer.finish(t)

	var all []readRecord
	rd := plainClient(t, nodes[0].addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"lag": {part: kgo.NewOffset().AtStart()}}))
	for len(all) < len(acked) && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { all = append(all, readRecord{string(r.Value), r.Offset}) })
	}
	checkReadOnce(t, "read-back from the target", all, acked)
}

// produceOne sends one record, outside any client's retries, to node and
// returns the partition's error.
func produceOne(ctx context.Context, cl *kgo.Client, node int32, topic string, partition int32) error {
	rec := kmsg.NewRecord()
	rec.Value = []byte("from the lagging leader")
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = -1, -1, -1
	rb.NumRecords = 1
	rb.Records = rec.AppendTo(nil)
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
	if err != nil {
		return fmt.Errorf("produce to node %d: %w", node, err)
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}
