package main

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/internal/fetchcheck"
)

// TestReplicaGroupFetchNeverPastHighWatermark runs the plain fetch loop of
// package fetchcheck against the leader of a replica group of three under
// sync replication, flushing each write (--flush sync): the high watermark
// is the followers' and the leader stores records before it reaches them,
// yet no fetch serves a record at or past the high watermark it reports or
// is refused an offset it was just given.
func TestReplicaGroupFetchNeverPastHighWatermark(t *testing.T) {
	_, nodes := startReplicaGroup(t, "--replication", "sync", "--flush", "sync")
	leader := waitLeader(t, nodes, 0, 2)
	seeds := []string{nodes[0].addr, nodes[1].addr, nodes[2].addr}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 8, 1, nil, "hwm"); err != nil {
		t.Fatal(err)
	}
	res, err := fetchcheck.Run(ctx, fetchcheck.Config{
		Seeds: seeds, Leader: leader.addr, Topic: "hwm", Partitions: 8,
		Produce: 5 * time.Second, Records: 100_000,
	})
	t.Logf("%d records produced, %d fetched in %d fetches", res.Produced, res.Fetched, res.Fetches)
	if err != nil {
		t.Fatal(err)
	}
	if res.Fetched != res.Produced {
		t.Fatalf("fetched %d records, %d produced", res.Fetched, res.Produced)
	}
}
