package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/internal/poll"
)

// TestPartitionMoveSourceFailover moves a partition from replica group g1
// (node 2 leading, node 3 following) to g2 (node 1) under an acks=all
// producer, and stops g1's leader at one point of the move each run:
// while the target copies, when the source is about to stop taking
// produce, and after it published where the partition ends, just before
// the switch. Node 3 takes over each time and the move completes: every
// acknowledged record is read back from the target once at its offset,
// and a committed offset is unchanged. After a switch-time failover the
// target does not switch on the deposed leader's word: the new leader
// stops produce and confirms the end first (a leader elected with a
// lagging view of the move may have taken produce past the old end).
func TestPartitionMoveSourceFailover(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   broker.MovePoint
		on   int32 // the node whose hook stops node 2
	}{
		{"while copying", broker.MoveCopied, 1},
		{"as the source stops", broker.MoveStopping, 2},
		{"at the switch", broker.MoveSwitching, 1},
	} {
		t.Run(tc.name, func(t *testing.T) { moveWithSourceFailover(t, tc.at, tc.on) })
	}
}

var errSteppedDown = errors.New("test: this node stops here")

func moveWithSourceFailover(t *testing.T, at broker.MovePoint, on int32) {
	nodes, natsURL, secret := startGroupNodes(t, "g2", "g1", "g1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, adm := clusterClient(ctx, t, nodes)
	createTopic(t, nodes[0].addr, "fo", 2)
	part := partitionLedBy(ctx, t, adm, "fo", 2, 2)
	// The target's own view of who leads the partition.
	targetAdm := kadm.NewClient(plainClient(t, nodes[0].addr))

	var fired, confirmedBy3 atomic.Bool
	stopped := make(chan struct{})
	broker.SetMoveHook(func(node int32, point broker.MovePoint, mv broker.PartitionMove) error {
		if point == broker.MoveStopping && node == 3 {
			confirmedBy3.Store(true)
		}
		if point != at || node != on || mv.Topic != "fo" || !fired.CompareAndSwap(false, true) {
			return nil
		}
		if node == 2 {
			// A crash here: the step ends, the node goes.
			go func() { nodes[1].stop(); close(stopped) }()
			return errSteppedDown
		}
		nodes[1].stop()
		close(stopped)
		if point == broker.MoveSwitching {
			// The target sees the new source leader before it decides.
			for leaderOf(ctx, targetAdm, "fo", part) != 3 && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
		}
		return nil
	})
	t.Cleanup(func() { broker.SetMoveHook(nil) })

	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "fo", Partition: part, At: 6, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "fo-readers", offsets); err != nil {
		t.Fatal(err)
	}
	producer := produceAndMove(ctx, t, []string{nodes[0].addr, nodes[2].addr}, natsURL, secret, "fo", part)
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("the move never reached the point where node 2 stops")
	}
	poll.True(t, "the partition led by g2's node 1", func() bool { return leaderOf(ctx, adm, "fo", part) == 1 })
	atMove := producer.count()
	poll.True(t, "500 more records acknowledged by g2", func() bool { return producer.count() >= atMove+500 })
	acked := producer.finish(t)
	if at == broker.MoveSwitching && !confirmedBy3.Load() {
		t.Error("the partition switched on the deposed leader's end: node 3, leading the source, never confirmed it")
	}

	var all []readRecord
	rd := plainClient(t, nodes[0].addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"fo": {part: kgo.NewOffset().AtStart()}}))
	for len(all) < len(acked) && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { all = append(all, readRecord{string(r.Value), r.Offset}) })
	}
	checkReadOnce(t, "read-back from the target", all, acked)
	committed, err := adm.FetchOffsets(ctx, "fo-readers")
	if c, _ := committed.Lookup("fo", part); err != nil || c.At != 6 {
		t.Errorf("committed offset after the move: %+v (%v), want 6", c, err)
	}
	t.Logf("%d records acknowledged, %d by the switch, all read back once", len(acked), atMove)
}

// plainClient is a client of the broker at addr alone.
func plainClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
