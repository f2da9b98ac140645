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
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/internal/logcheck"
	"github.com/unilog/unilog/internal/poll"
)

// soakFaultsEnv sets how many faults TestFailoverKeepsAcknowledgedRecords
// injects (make soak-ha), round robin over haFaults; the CI run injects
// one of each.
const soakFaultsEnv = "UNILOG_SOAK_FAULTS"

// slowFailover is the failover past which a round shows the brokers' logs.
const slowFailover = 5 * time.Second

// haFault is one kind of round of the failover soak: what it does to a
// node of the group, and what makes the group whole again. hit calls
// mark once the fault holds: a failover is timed from there.
type haFault struct {
	name string
	// leader: the fault hits the leader, and a follower takes over.
	leader bool
	hit    func(g *brokerGroup, i int, mark func()) (heal func())
}

var haFaults = []haFault{
	{"leader SIGKILL", true, func(g *brokerGroup, i int, mark func()) func() {
		g.kill(i)
		mark()
		return func() { g.start(i) }
	}},
	// Timed from the signal: the hand-over is part of the stop.
	{"leader SIGTERM (hand-over)", true, func(g *brokerGroup, i int, mark func()) func() {
		mark()
		g.stop(i)
		return func() { g.start(i) }
	}},
	// Paused, the leader keeps its connections open and its lease until
	// it lapses; resumed, it finds itself deposed and follows.
	{"leader SIGSTOP", true, func(g *brokerGroup, i int, mark func()) func() {
		g.pause(i)
		mark()
		return func() { g.signal(i, syscall.SIGCONT) }
	}},
	{"follower SIGKILL", false, func(g *brokerGroup, i int, mark func()) func() {
		g.kill(i)
		mark()
		return func() { g.start(i) }
	}},
}

// partitionFault cuts the leader off the network of lab (netnsLab): it
// keeps running, loses its lease, and rejoins when the link comes back.
func partitionFault(lab *netnsLab) haFault {
	return haFault{"leader network partition", true, func(g *brokerGroup, i int, mark func()) func() {
		lab.cut(g.nodes[i].id)
		mark()
		return func() { lab.heal(g.nodes[i].id) }
	}}
}

// TestFailoverKeepsAcknowledgedRecords runs three brokers of one replica
// group with sync replication while clients produce with acks=-1, read,
// and commit group offsets throughout, and injects haFaults at random
// moments (SIGKILL, SIGTERM or SIGSTOP of the leader, SIGKILL of a
// follower, and where the machine can make network namespaces a network
// partition of the leader), making the group whole after each. The history the clients
// recorded must be linearizable against a per-partition append-only log
// (package logcheck, on porcupine): every acknowledged record present
// exactly once and in order, nothing served to a consumer ever lost,
// committed offsets kept; a final read-back of every partition is part
// of it. Then every node's commit log must hold the same bytes. Each
// fault's failover, from the fault to the first acknowledgement of a
// record produced after it, is logged, and summed up by kind.
func TestFailoverKeepsAcknowledgedRecords(t *testing.T) {
	faults := 0
	if s := os.Getenv(soakFaultsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a number of faults", soakFaultsEnv, s)
		}
		faults = n
	}
	kinds := slices.Clone(haFaults)
	var lab *netnsLab
	if why := netnsUnavailable(); why != "" {
		t.Logf("network partitions skipped: %s", why)
	} else if l, err := newNetnsLab(t, 3); err != nil {
		t.Logf("network partitions skipped: this machine refused a network namespace: %v", err)
	} else {
		lab = l
		kinds = append(kinds, partitionFault(lab))
	}
	if faults == 0 {
		faults = len(kinds)
	}
	g := startBrokerGroupOn(t, 3, lab)
	const topic, group = "failover", "failover-group"
	const partitions = 3
	g.createTopic(topic, partitions)

	h := logcheck.NewHistory()
	var acked atomic.Int64
	var errs errorLog
	var first firstAck
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
		// Tuned as a client that cares for latency would be: a paused
		// leader keeps its connections open, and the defaults wait 20 s
		// (the produce timeout plus the overhead) before asking another
		// broker; one cut off the network does not answer a dial, which
		// the default gives 10 s; the default backoff grows to a second
		// while a lease lapses.
		p := &producer{id: id, topic: topic, partitions: partitions, acked: &acked, errs: &errs, firstAck: &first,
			cl: newClient(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(500),
				kgo.RecordDeliveryTimeout(time.Minute), kgo.ProduceRequestTimeout(time.Second),
				kgo.RequestTimeoutOverhead(time.Second), kgo.DialTimeout(time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))}
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

	failovers := map[string][]time.Duration{}
	for round := 1; round <= faults; round++ {
		f := kinds[(round-1)%len(kinds)]
		// Some traffic under the current leader, then a random moment.
		before := acked.Load()
		poll.True(t, "records acknowledged under the current leader", func() bool { return acked.Load() >= before+100 })
		<-time.After(rand.N(1500 * time.Millisecond))

		leader, st := g.leader()
		if leader < 0 {
			t.Fatal("no leader")
		}
		target := leader
		if !f.leader {
			target = (leader + 1 + rand.N(len(g.nodes)-1)) % len(g.nodes)
		}
		var at time.Time
		var acks <-chan time.Time
		heal := f.hit(g, target, func() {
			at = time.Now()
			acks = first.after(at)
		})
		var took time.Duration
		select {
		case ack := <-acks:
			took = ack.Sub(at)
		case <-time.After(2 * time.Minute):
			t.Fatalf("round %d: no record produced after the %s of node %d acknowledged", round, f.name, g.nodes[target].id)
		}
		failovers[f.name] = append(failovers[f.name], took)
		next := leader
		if f.leader {
			next = g.waitLeader(st.Epoch+1, target)
		}
		t.Logf("round %d: %s of node %d (epoch %d) after %d acks; the first record produced after it acknowledged %s later; node %d leads",
			round, f.name, g.nodes[target].id, st.Epoch, acked.Load(), took.Round(time.Millisecond), g.nodes[next].id)
		if took > slowFailover {
			// Evidence while it is fresh: the next rounds bury it.
			for _, nd := range g.nodes {
				t.Logf("round %d, slow failover: node %d's last lines:\n%s", round, nd.id, g.tail(nd, 25))
			}
		}
		heal()
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
	for _, f := range kinds {
		t.Logf("failover, fault to the first acknowledged produce after it, %s over %d: %s",
			f.name, len(failovers[f.name]), summarize(failovers[f.name]))
	}
	checkHistory(t, h, "failover")
	if s := h.Stats(); s.Acked < 100*faults || s.Commits == 0 || s.Fetches == 0 || s.ReadValues == 0 {
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
