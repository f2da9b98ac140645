package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/internal/poll"
	"github.com/unilog/unilog/internal/txntest"
)

// TestPartitionMoveDuringTransaction moves a partition while a
// transaction in it is open, as Kafka's reassignment allows: the target
// rebuilds the partition's transaction state from the records it copies
// (the aborted transaction before it, the open one), so its last stable
// offset stays at the open transaction's first record, and the marker
// written after the move lands on the target. Once with a commit, once
// with an abort: a read_committed consumer reads exactly the committed
// records once, and the last stable offset reaches the high watermark.
func TestPartitionMoveDuringTransaction(t *testing.T) {
	// Node 1 starts the cluster, so its group coordinates the
	// transactions: the partition moves away from the coordinator's
	// group, and in the second layout to it.
	for _, groups := range [][]string{{"g1", "g2"}, {"g2", "g1"}} {
		t.Run("node 1 in "+groups[0], func(t *testing.T) { moveDuringTransaction(t, groups) })
	}
}

func moveDuringTransaction(t *testing.T, groups []string) {
	nodes, natsURL, secret := startGroupNodes(t, groups...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, adm := clusterClient(ctx, t, nodes)
	seeds := []string{nodes[0].addr, nodes[1].addr}
	source, target := int32(1), int32(2) // the nodes of g1 and g2
	if groups[0] != "g1" {
		source, target = 2, 1
	}
	for _, commit := range []bool{true, false} {
		topic := fmt.Sprintf("txmove-%t", commit)
		createTopic(t, nodes[0].addr, topic, 2)
		part := partitionLedBy(ctx, t, adm, topic, 2, source)
		txp := txnClient(t, seeds, topic, topic)
		want := map[string]bool{}
		txn := func(prefix string, from, to int) {
			t.Helper()
			for i := from; i < to; i++ {
				v := fmt.Sprintf("%s%d", prefix, i)
				if err := txp.ProduceSync(ctx, &kgo.Record{Partition: part, Value: []byte(v)}).FirstErr(); err != nil {
					t.Fatalf("produce %s: %v", v, err)
				}
			}
		}
		end := func(commit bool) {
			t.Helper()
			if err := txntest.End(ctx, txp, kgo.TransactionEndTry(commit), topic); err != nil {
				t.Fatalf("end transaction (commit %t): %v", commit, err)
			}
		}
		begin := func() {
			t.Helper()
			if err := txp.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
		}
		begin()
		txn("aborted-", 0, 5)
		end(false)
		begin()
		txn("committed-", 0, 5)
		end(true)
		for i := range 5 {
			want[fmt.Sprintf("committed-%d", i)] = true
		}
		begin()
		txn("open-", 0, 5)
		lso := stableOffset(ctx, t, adm, topic, part)
		if hw := endOffset(ctx, t, adm, topic, part); lso >= hw {
			t.Fatalf("%s: last stable offset %d with a transaction open, high watermark %d", topic, lso, hw)
		}

		mustRun(t, "", "topic", "move", "--nats", natsURL, "--cluster-secret-file", secret,
			"--topic", topic, "--partition", fmt.Sprint(part), "--to-group", "g2", "--timeout", "60s")
		poll.True(t, fmt.Sprintf("%s/%d led by g2", topic, part), func() bool { return leaderOf(ctx, adm, topic, part) == target })
		if got := stableOffset(ctx, t, adm, topic, part); got != lso {
			t.Errorf("%s: last stable offset %d on the target, %d on the source before the move", topic, got, lso)
		}
		txn("open-", 5, 10)
		end(commit)
		if commit {
			for i := range 10 {
				want[fmt.Sprintf("open-%d", i)] = true
			}
		}
		poll.True(t, topic+": last stable offset at the high watermark", func() bool {
			return stableOffset(ctx, t, adm, topic, part) == endOffset(ctx, t, adm, topic, part)
		})
		// A plain record after it all: read_committed reaches it only
		// past every record before, aborted ones dropped.
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte("last")}).FirstErr(); err != nil {
			t.Fatal(err)
		}

		rc, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().AtStart()}}),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for seen["last"] == 0 && ctx.Err() == nil {
			rc.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		}
		rc.Close()
		delete(seen, "last")
		for v, n := range seen {
			if !want[v] || n != 1 {
				t.Errorf("%s: read_committed read %q %d times; committed %t", topic, v, n, want[v])
			}
		}
		if len(seen) != len(want) {
			t.Errorf("%s: read_committed read %d distinct records, want %d", topic, len(seen), len(want))
		}
	}
}

// partitionLedBy is a partition of topic's first partitions that node
// leads, once Metadata names one.
func partitionLedBy(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, partitions, node int32) int32 {
	t.Helper()
	part := int32(-1)
	poll.True(t, fmt.Sprintf("a partition of %s led by node %d", topic, node), func() bool {
		for p := range partitions {
			if leaderOf(ctx, adm, topic, p) == node {
				part = p
				return true
			}
		}
		return false
	})
	return part
}

// txnClient is a transactional producer of id to topic, partitioning by
// hand and retrying quickly through a move's switch.
func txnClient(t *testing.T, seeds []string, id, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(50*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// stableOffset is the partition's last stable offset (ListOffsets at
// read_committed).
func stableOffset(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, partition int32) int64 {
	t.Helper()
	o, err := adm.ListCommittedOffsets(ctx, topic)
	return partitionOffset(t, topic, partition, "last stable offset", o, err)
}

// endOffset is the partition's high watermark.
func endOffset(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, partition int32) int64 {
	t.Helper()
	o, err := adm.ListEndOffsets(ctx, topic)
	return partitionOffset(t, topic, partition, "high watermark", o, err)
}

// partitionOffset is the partition's offset in a ListOffsets answer.
func partitionOffset(t *testing.T, topic string, partition int32, what string, o kadm.ListedOffsets, err error) int64 {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	lo, _ := o.Lookup(topic, partition)
	if lo.Err != nil {
		t.Fatalf("%s/%d: %s: %v", topic, partition, what, lo.Err)
	}
	return lo.Offset
}

// TestTxnMarkerWhileMoveSwitches ends a transaction while its partition's
// move is switching: the source has stopped taking produce and published
// where the partition ends, and the target is about to take it over. The
// source must not take the marker then (the copy ends before it, so the
// transaction would stay open on the target for ever, its records never
// readable at read_committed): the coordinator sends it again and it lands
// on the target after the switch. Node 1 starts the cluster, so its group
// holds the transaction state and coordinates: the partition moves from
// it (its own append leaves the marker out) and, in the second run, to it
// (its WriteTxnMarkers to the source is refused).
func TestTxnMarkerWhileMoveSwitches(t *testing.T) {
	for _, groups := range [][]string{{"g1", "g2"}, {"g2", "g1"}} {
		t.Run("node 1 in "+groups[0], func(t *testing.T) { txnMarkerWhileMoveSwitches(t, groups) })
	}
}

func txnMarkerWhileMoveSwitches(t *testing.T, groups []string) {
	nodes, natsURL, secret := startGroupNodes(t, groups...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, adm := clusterClient(ctx, t, nodes)
	seeds := []string{nodes[0].addr, nodes[1].addr}
	source := int32(1) // the node of g1, where the partition starts
	if groups[0] != "g1" {
		source = 2
	}
	const topic, id = "marker", "marker-txn"
	createTopic(t, nodes[0].addr, topic, 2)
	part := partitionLedBy(ctx, t, adm, topic, 2, source)
	txp := txnClient(t, seeds, id, topic)
	if err := txp.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := txp.ProduceSync(ctx, &kgo.Record{Partition: part, Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	coordinator := adm.FindTxnCoordinators(ctx, id)[id]
	t.Logf("%s is coordinated by node %d (%v); the partition moves from node %d", id, coordinator.NodeID, coordinator.Err, source)

	ended := make(chan error, 1)
	var endErr error
	var once sync.Once
	broker.SetMoveHook(func(node int32, at broker.MovePoint, mv broker.PartitionMove) error {
		if at != broker.MoveSwitching || mv.Topic != topic {
			return nil
		}
		once.Do(func() {
			commit := make(chan error, 1)
			go func() { commit <- txntest.End(ctx, txp, kgo.TryCommit, topic) }()
			// The commit cannot complete before the switch, its marker
			// refused by the fenced source; it did before the fix. Up
			// to 2 s for it to reach the coordinator and its markers
			// the source, then the switch.
			select {
			case endErr = <-commit:
				close(ended)
			case <-time.After(2 * time.Second):
				go func() { endErr = <-commit; close(ended) }()
			}
		})
		return nil
	})
	t.Cleanup(func() { broker.SetMoveHook(nil) })
	mustRun(t, "", "topic", "move", "--nats", natsURL, "--cluster-secret-file", secret,
		"--topic", topic, "--partition", fmt.Sprint(part), "--to-group", "g2", "--timeout", "60s")
	select {
	case <-ended:
		if endErr != nil {
			t.Fatalf("commit: %v", endErr)
		}
	case <-ctx.Done():
		t.Fatal("the commit never returned")
	}
	rc, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	seen := map[string]int{}
	poll.True(t, "the committed records readable at read_committed on the target", func() bool {
		fctx, fcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer fcancel()
		rc.PollFetches(fctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		return len(seen) == 5
	})
	for v, n := range seen {
		if n != 1 {
			t.Errorf("read %q %d times", v, n)
		}
	}
}
