package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/internal/logcheck"
	"github.com/unilog/unilog/internal/poll"
)

// soakKillsEnv sets how many leaders TestFailoverKeepsAcknowledgedRecords
// kills (make soak-ha); the CI run kills 3.
const soakKillsEnv = "UNILOG_SOAK_KILLS"

// TestFailoverKeepsAcknowledgedRecords runs three brokers of one replica
// group with sync replication while clients produce with acks=-1, read,
// and commit group offsets throughout, and SIGKILLs the leader at random
// moments, restarting it each round. The history the clients recorded
// must be linearizable against a per-partition append-only log (package
// logcheck): every acknowledged record present exactly once and in order,
// nothing served to a consumer ever lost, committed offsets kept. Then
// every node's commit log must hold the same bytes.
func TestFailoverKeepsAcknowledgedRecords(t *testing.T) {
	kills := 3
	if s := os.Getenv(soakKillsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a number of kills", soakKillsEnv, s)
		}
		kills = n
	}
	g := startBrokerGroup(t, 3)
	const topic, group = "failover", "failover-group"
	const partitions = 3
	g.createTopic(topic, partitions)

	h := logcheck.NewHistory()
	var acked atomic.Int64
	var errs errorLog
	ctx, stopClients := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	clientOpts := []kgo.Opt{kgo.SeedBrokers(g.seeds()...), kgo.MetadataMinAge(100 * time.Millisecond)}
	newClient := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append(slices.Clone(clientOpts), opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	for id := range 2 {
		p := &producer{id: id, topic: topic, partitions: partitions, acked: &acked, errs: &errs,
			cl: newClient(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(500),
				kgo.RecordDeliveryTimeout(time.Minute))}
		wg.Go(func() { p.run(ctx, h, 2*time.Millisecond) })
	}
	reader := newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {
		0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}}))
	wg.Go(func() { readAll(ctx, h, 10, reader) })
	member := newClient(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(time.Second))
	wg.Go(func() { consumeAndCommit(ctx, h, 11, member, group) })
	adm := kadm.NewClient(newClient())
	wg.Go(func() { fetchOffsets(ctx, h, 12, adm, group, topic, partitions, 100*time.Millisecond) })

	var failovers []time.Duration
	for round := 1; round <= kills; round++ {
		// Some traffic under the current leader, then a random moment.
		before := acked.Load()
		poll.True(t, "records acknowledged under the current leader", func() bool { return acked.Load() >= before+100 })
		<-time.After(rand.N(1500 * time.Millisecond))

		leader, st := g.leader()
		if leader < 0 {
			t.Fatal("no leader")
		}
		g.kill(leader)
		killed := time.Now()
		next := g.waitLeader(st.Epoch+1, leader)
		took := time.Since(killed)
		failovers = append(failovers, took)
		nst, _ := g.status(next)
		t.Logf("round %d: SIGKILLed leader node %d (epoch %d) after %d acks; node %d leads epoch %d %s later",
			round, g.nodes[leader].id, st.Epoch, acked.Load(), g.nodes[next].id, nst.Epoch, took.Round(time.Millisecond))
		g.start(leader)
		g.waitInSync(next)
	}

	stopClients()
	wg.Wait()
	leader, _ := g.leader()
	g.waitInSync(leader)
	end := g.waitSameEnd()
	finalRead(t, h, 20, g.seeds(), topic, partitions)
	fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := fetchOffsetsOnce(fctx, h, 20, adm, group, topic, partitions); err != nil {
		t.Fatalf("final offset fetch: %v", err)
	}

	t.Logf("client errors: %v", errs.snapshot())
	t.Logf("time to a new leader over %d kills: %s", len(failovers), summarize(failovers))
	checkHistory(t, h, "failover")
	if s := h.Stats(); s.Acked < 100*kills || s.Commits == 0 || s.Fetches == 0 || s.ReadValues == 0 {
		t.Errorf("too little traffic to show anything: %v", s)
	}
	g.compareLogs(end)
	for i := range g.nodes {
		g.stop(i)
	}
}

// summarize is min, median and max.
func summarize(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("min %s, median %s, max %s", r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]))
}
