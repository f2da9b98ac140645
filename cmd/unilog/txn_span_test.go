package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/internal/poll"
	"github.com/unilog/unilog/internal/txntest"
)

// TestTxnSpansReplicaGroups: a franz-go transactional producer writes each
// transaction to partitions led by both replica groups of a cluster,
// committing some transactions and aborting others. Whichever group
// coordinates the id, the other group's partitions take the producer's
// batches and get their markers through WriteTxnMarkers, so a
// read_committed consumer sees every committed record once, on both
// groups' partitions, and no aborted one.
func TestTxnSpansReplicaGroups(t *testing.T) {
	nodes, _, _ := startGroupNodes(t, "g1", "g2")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, adm := clusterClient(ctx, t, nodes)
	const partitions = 4
	createTopic(t, nodes[0].addr, "span", partitions)
	poll.True(t, "partitions led by both groups", func() bool {
		led := map[int32]bool{}
		for p := range int32(partitions) {
			led[leaderOf(ctx, adm, "span", p)] = true
		}
		return len(led) == 2 && led[1] && led[2]
	})

	producer, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr, nodes[1].addr), kgo.TransactionalID("span"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	committed := map[string]bool{}
	aborted := map[string]bool{}
	const txns = 7 // the last commits: reading all committed passes every abort
	for i := range txns {
		if err := producer.BeginTransaction(); err != nil {
			t.Fatalf("begin %d: %v", i, err)
		}
		for p := range int32(partitions) {
			for j := range 2 {
				v := fmt.Sprintf("txn%d-p%d-%d", i, p, j)
				if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "span", Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
					t.Fatalf("produce %s: %v", v, err)
				}
				if i%2 == 0 {
					committed[v] = true
				} else {
					aborted[v] = true
				}
			}
		}
		if err := txntest.End(ctx, producer, kgo.TransactionEndTry(i%2 == 0), "span"); err != nil {
			t.Fatalf("end %d: %v", i, err)
		}
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(nodes[1].addr), kgo.ConsumeTopics("span"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]int{}
	for n := 0; n < len(committed); {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d committed records: %v", n, len(committed), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			if committed[string(r.Value)] {
				n++
			}
		})
	}
	for v, c := range seen {
		switch {
		case aborted[v]:
			t.Errorf("aborted record %s read %d times", v, c)
		case c != 1:
			t.Errorf("committed record %s read %d times", v, c)
		}
	}
	for v := range committed {
		if seen[v] == 0 {
			t.Errorf("committed record %s not read", v)
		}
	}
}
