package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/poll"
	"github.com/unilog/unilog/store"
)

// groupNode is one broker started by startGroupNodes.
type groupNode struct {
	addr, admin, dir string
	stop             func()
}

// startGroupNodes starts node i+1 in replica group groups[i], node 1
// embedding the NATS the others join, all with one cluster secret; the
// first node of a group leads it, a group named again gets a follower. It
// returns the NATS URL and the secret file; stop stops a node (and the
// test's cleanup the rest).
func startGroupNodes(t *testing.T, groups ...string) ([]*groupNode, string, string) {
	t.Helper()
	return startGroupNodesWith(t, nil, groups...)
}

// startGroupNodesWith is startGroupNodes with extra broker flags on every
// node; their own flags come first, so extra may not repeat them.
func startGroupNodesWith(t *testing.T, extra []string, groups ...string) ([]*groupNode, string, string) {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "cluster.secret")
	natsURL := ""
	var nodes []*groupNode
	for i, group := range groups {
		n := &groupNode{dir: t.TempDir()}
		args := []string{"--data-dir", n.dir, "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0",
			"--file-size", "8MiB", "--node-id", fmt.Sprint(i + 1), "--replica-group", group, "--cluster-secret-file", secret}
		if natsURL != "" {
			args = append(args, "--nats", natsURL)
		}
		args = append(args, extra...)
		ctx, cancel := context.WithCancel(context.Background())
		out, done := startBrokerCommand(ctx, t, args...)
		if natsURL == "" {
			natsURL = controlPlaneLine.FindStringSubmatch(out)[1]
		}
		m := listeningLine.FindStringSubmatch(out)
		n.addr, n.admin = m[1], strings.TrimSuffix(strings.TrimPrefix(m[2], "http://"), "/metrics")
		var once sync.Once
		n.stop = func() {
			once.Do(func() {
				cancel()
				if r := <-done; r.err != nil {
					t.Errorf("node %s: %v\n%s", group, r.err, r.stderr)
				}
			})
		}
		nodes = append(nodes, n)
	}
	t.Cleanup(func() {
		// The joiners first: they reach NATS through node 1.
		for i := len(nodes) - 1; i >= 0; i-- {
			nodes[i].stop()
		}
	})
	for i, n := range nodes {
		role := "leader"
		if slices.Contains(groups[:i], groups[i]) {
			role = "follower"
		}
		poll.True(t, fmt.Sprintf("node %d to be a %s of %s", i+1, role, groups[i]), func() bool {
			st, err := nodeStatus(n.admin)
			return err == nil && st.Role == role && st.ReplicaGroup == groups[i]
		})
	}
	return nodes, natsURL, secret
}

// startOnG1 starts a node of group g1 and one of g2 (startGroupNodes)
// and creates topic, one partition, led by g1's node 1. ctx ends with the
// test or after a minute; the clients reach every node (clusterClient).
func startOnG1(t *testing.T, topic string) (ctx context.Context, nodes []*groupNode, natsURL, secret string, cl *kgo.Client, adm *kadm.Client) {
	t.Helper()
	nodes, natsURL, secret = startGroupNodes(t, "g1", "g2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cl, adm = clusterClient(ctx, t, nodes)
	createTopic(t, nodes[0].addr, topic, 1)
	poll.True(t, "partition 0 on g1", func() bool { return leaderOf(ctx, adm, topic, 0) == 1 })
	return ctx, nodes, natsURL, secret, cl, adm
}

// clusterClient is a manually partitioning client seeded with every node,
// returned with its admin client once Metadata lists them all.
func clusterClient(ctx context.Context, t *testing.T, nodes []*groupNode) (*kgo.Client, *kadm.Client) {
	t.Helper()
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.addr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	poll.True(t, "every broker listed", func() bool {
		m, err := adm.BrokerMetadata(ctx)
		return err == nil && len(m.Brokers) == len(nodes)
	})
	return cl, adm
}

// leaderOf is the leader Metadata names for a partition (-1: none yet).
func leaderOf(ctx context.Context, adm *kadm.Client, topic string, partition int32) int32 {
	leader, _ := leaderAndEpoch(ctx, adm, topic, partition)
	return leader
}

// leaderAndEpoch is the leader Metadata names for a partition and its
// leader epoch (-1, -1: none yet).
func leaderAndEpoch(ctx context.Context, adm *kadm.Client, topic string, partition int32) (int32, int32) {
	m, err := adm.Metadata(ctx, topic)
	if err != nil {
		return -1, -1
	}
	for _, p := range m.Topics[topic].Partitions {
		if p.Partition == partition && p.Err == nil {
			return p.Leader, p.LeaderEpoch
		}
	}
	return -1, -1
}

// TestPartitionMoveUnderLoad moves a partition from one replica group to
// another while an acks=all idempotent producer writes numbered records to
// it and a consumer group reads and commits it: every acknowledged record
// is read back once, at the offset it was acknowledged with, in offset
// order; the group's committed offset survives and a new member resumes
// there; and the source's record batches are byte for byte the target's at
// the same offsets. Then AlterPartitionReassignments moves the other
// partition, naming its target group's node.
func TestPartitionMoveUnderLoad(t *testing.T) {
	nodes, natsURL, secret := startGroupNodes(t, "g1", "g2")
	seeds := []string{nodes[0].addr, nodes[1].addr}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, adm := clusterClient(ctx, t, nodes)
	createTopic(t, nodes[1].addr, "moving", 2)
	poll.True(t, "partition 0 led by g1's node 1 at epoch 1", func() bool {
		leader, epoch := leaderAndEpoch(ctx, adm, "moving", 0)
		return leader == 1 && epoch == 1
	})

	// The producer: numbered records to partition 0, acks=all and
	// idempotent (franz-go's defaults), retrying through the switch.
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(50*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
		kgo.MaxBufferedRecords(500), kgo.ProducerBatchMaxBytes(4<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	producer := startNumberedProducer(ctx, prod, "moving", 0)
	ackedCount := producer.count

	// The first group member consumes and commits after every poll until
	// told to stop; what it read is checked with the second's.
	var consumed []readRecord
	consume := func(ctx context.Context, until func() bool) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("movers"), kgo.ConsumeTopics("moving"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(100*time.Millisecond),
			kgo.MetadataMinAge(50*time.Millisecond))
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.Close()
		for !until() && ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				if r.Partition == 0 {
					consumed = append(consumed, readRecord{string(r.Value), r.Offset})
				}
			})
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("commit: %v", err)
			}
		}
	}
	moveDone := make(chan struct{})
	firstDone := make(chan struct{})
	go func() {
		defer close(firstDone)
		consume(ctx, func() bool {
			select {
			case <-moveDone:
				return true
			default:
				return false
			}
		})
	}()

	poll.True(t, "2000 records acknowledged by g1", func() bool { return ackedCount() >= 2000 })
	out := mustRun(t, "", "topic", "move", "--nats", natsURL, "--cluster-secret-file", secret,
		"--topic", "moving", "--partition", "0", "--to-group", "g2").stdout
	if !strings.Contains(out, "moved moving/0 to g2 in ") {
		t.Fatalf("topic move printed:\n%s", out)
	}
	// Both groups are at lease epoch 1: the partition's epoch still grows,
	// as Kafka clients expect of a new leader.
	poll.True(t, "partition 0 led by g2's node 2 at epoch 2", func() bool {
		leader, epoch := leaderAndEpoch(ctx, adm, "moving", 0)
		return leader == 2 && epoch == 2
	})
	atMove := ackedCount()
	close(moveDone)
	<-firstDone
	committed, err := adm.FetchOffsets(ctx, "movers")
	if err != nil {
		t.Fatal(err)
	}
	c0, ok := committed.Lookup("moving", 0)
	if !ok || c0.At <= 0 {
		t.Fatalf("committed offset of partition 0 after the move: %+v %v", c0, ok)
	}
	poll.True(t, "1000 more records acknowledged by g2", func() bool { return ackedCount() >= atMove+1000 })
	acked := producer.finish(t)
	total := len(acked)
	// The committed offset is where the group stands after the move: a
	// new member resumes there.
	again, err := adm.FetchOffsets(ctx, "movers")
	if c, _ := again.Lookup("moving", 0); err != nil || c.At != c0.At {
		t.Fatalf("committed offset changed from %d to %+v (%v)", c0.At, c, err)
	}
	firstOfSecond := len(consumed)
	consume(ctx, func() bool { return len(consumed) >= total })
	if firstOfSecond < len(consumed) && consumed[firstOfSecond].offset != c0.At {
		t.Errorf("the group resumed at %d, committed %d", consumed[firstOfSecond].offset, c0.At)
	}
	checkReadOnce(t, "group", consumed, acked)

	// A plain read from the start, from the target.
	var all []readRecord
	rd, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"moving": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	for len(all) < total && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { all = append(all, readRecord{string(r.Value), r.Offset}) })
	}
	rd.Close()
	checkReadOnce(t, "read-back", all, acked)

	// The target counted what it copied.
	resp, err := http.Get("http://" + nodes[1].admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if m := regexp.MustCompile(`(?m)^unilog_partition_move_copied_bytes_total (\d+)$`).FindSubmatch(metrics); m == nil || string(m[1]) == "0" {
		t.Errorf("target's unilog_partition_move_copied_bytes_total: %q", m)
	}

	// Kafka's API moves partition 1 from g2 to g1, naming g1's node.
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("moving", 1, []int32{1})
	if resp, err := adm.AlterPartitionAssignments(ctx, req); err != nil || resp["moving"][1].Err != nil {
		t.Fatalf("AlterPartitionReassignments: %v %+v", err, resp)
	}
	poll.True(t, "partition 1 led by g1's node 1, no reassignment listed", func() bool {
		listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"moving": {0: {}, 1: {}}})
		return err == nil && len(listed["moving"]) == 0 && leaderOf(ctx, adm, "moving", 1) == 1
	})

	for i := len(nodes) - 1; i >= 0; i-- {
		nodes[i].stop()
	}
	src, dst := dumpBatches(t, nodes[0].dir, "moving", 0), dumpBatches(t, nodes[1].dir, "moving", 0)
	if len(src) == 0 || len(dst) <= len(src) {
		t.Fatalf("source holds %d batches, target %d: want some, and more on the target", len(src), len(dst))
	}
	for i, s := range src {
		if d := dst[i]; d.offset != s.offset || !bytes.Equal(d.body, s.body) {
			t.Fatalf("batch %d: source at %d (%d bytes), target at %d (%d bytes), or their bytes differ", i, s.offset, len(s.body), d.offset, len(d.body))
		}
	}
	t.Logf("%d records acknowledged, %d by the end of the move; source kept %d batches, all identical on the target\n%s", total, atMove, len(src), out)
}

// readRecord is a record a consumer read.
type readRecord struct {
	value  string
	offset int64
}

// checkReadOnce checks that reads hold every acknowledged record once, at
// its acknowledged offset, in offset order, and nothing else.
func checkReadOnce(t *testing.T, what string, reads []readRecord, acked map[string]int64) {
	t.Helper()
	seen := map[string]bool{}
	prev := int64(-1)
	for _, v := range reads {
		want, ok := acked[v.value]
		switch {
		case !ok:
			t.Fatalf("%s: record %q at %d was never acknowledged", what, v.value, v.offset)
		case seen[v.value]:
			t.Fatalf("%s: record %q read twice", what, v.value)
		case want != v.offset:
			t.Fatalf("%s: record %q at %d, acknowledged at %d", what, v.value, v.offset, want)
		case v.offset <= prev:
			t.Fatalf("%s: offset %d after %d", what, v.offset, prev)
		}
		seen[v.value], prev = true, v.offset
	}
	if len(seen) != len(acked) {
		t.Fatalf("%s: %d of %d acknowledged records read", what, len(seen), len(acked))
	}
}

// storedBatch is one commit-log record of a partition: a Kafka batch.
type storedBatch struct {
	offset int64
	body   []byte
}

func dumpBatches(t *testing.T, dir, topic string, partition int32) []storedBatch {
	t.Helper()
	var out []storedBatch
	err := store.Dump(dir, topic, partition, 0, 0, func(r *commitlog.Record) error {
		out = append(out, storedBatch{r.QueueOffset, bytes.Clone(r.Body)})
		return nil
	})
	if err != nil {
		t.Fatalf("dump %s: %v", dir, err)
	}
	return out
}

// TestClusterRebalance gathers a topic's partitions on one of two groups
// with `unilog topic move`, then has `unilog cluster rebalance` plan by
// partitions (two moves back) and by bytes (only the heavy partition),
// and runs the latter.
func TestClusterRebalance(t *testing.T) {
	nodes, natsURL, secret := startGroupNodes(t, "g1", "g2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, adm := clusterClient(ctx, t, nodes)
	createTopic(t, nodes[0].addr, "r", 4)
	poll.True(t, "partitions on g1, g2, g1, g2", func() bool {
		return leaderOf(ctx, adm, "r", 0) == 1 && leaderOf(ctx, adm, "r", 1) == 2 && leaderOf(ctx, adm, "r", 2) == 1 && leaderOf(ctx, adm, "r", 3) == 2
	})
	for p := int32(0); p < 4; p++ {
		n := 1
		if p == 0 {
			n = 200 // the heavy one
		}
		for i := 0; i < n; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "r", Partition: p, Value: bytes.Repeat([]byte{'x'}, 100)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cp := []string{"--nats", natsURL, "--cluster-secret-file", secret}
	for _, p := range []string{"1", "3"} {
		mustRun(t, "", append([]string{"topic", "move", "--topic", "r", "--partition", p, "--to-group", "g1"}, cp...)...)
	}
	byCount := mustRun(t, "", append([]string{"cluster", "rebalance", "--dry-run"}, cp...)...).stdout
	if !strings.HasPrefix(byCount, "2 moves over replica groups [g1 g2], evening out partitions\n") || strings.Count(byCount, " g1 ") != 2 {
		t.Errorf("rebalance by partitions planned:\n%s", byCount)
	}
	byBytes := mustRun(t, "", append([]string{"cluster", "rebalance", "--by", "bytes", "--brokers", nodes[0].addr}, cp...)...).stdout
	for _, want := range []string{`^1 move over replica groups \[g1 g2\], evening out bytes$`, `^r\s+0\s+g1\s+g2\s+\d+$`, `^moved r/0 to g2 in `} {
		if !regexp.MustCompile("(?m)" + want).MatchString(byBytes) {
			t.Errorf("rebalance by bytes lacks %s:\n%s", want, byBytes)
		}
	}
	poll.True(t, "partition 0 led by g2's node 2", func() bool { return leaderOf(ctx, adm, "r", 0) == 2 })
}

// TestMoveAfterDeleteRecords moves a partition whose log start
// DeleteRecords moved into its first batch: the batch is copied whole, as
// the source serves it, the target serves from the same log start and
// the next produce continues the offsets.
func TestMoveAfterDeleteRecords(t *testing.T) {
	ctx, nodes, natsURL, secret, cl, adm := startOnG1(t, "trimmed")
	produceBatch := func(from, n int) {
		var rs []*kgo.Record
		for i := from; i < from+n; i++ {
			rs = append(rs, &kgo.Record{Topic: "trimmed", Partition: 0, Value: []byte(fmt.Sprint(i))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produceBatch(0, 10)
	produceBatch(10, 5)
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "trimmed", Partition: 0, At: 5})
	if resp, err := adm.DeleteRecords(ctx, offsets); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}
	mustRun(t, "", "topic", "move", "--nats", natsURL, "--cluster-secret-file", secret, "--topic", "trimmed", "--partition", "0", "--to-group", "g2")
	poll.True(t, "partition 0 on g2", func() bool { return leaderOf(ctx, adm, "trimmed", 0) == 2 })
	produceBatch(15, 1)

	starts, err := adm.ListStartOffsets(ctx, "trimmed")
	if s, _ := starts.Lookup("trimmed", 0); err != nil || s.Offset != 5 {
		t.Errorf("log start on the target %+v (%v), want 5", s, err)
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(nodes[1].addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"trimmed": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	for len(got) < 11 && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if fmt.Sprint(r.Offset) != string(r.Value) {
				t.Errorf("record %q at offset %d", r.Value, r.Offset)
			}
			got = append(got, string(r.Value))
		})
	}
	if strings.Join(got, " ") != "5 6 7 8 9 10 11 12 13 14 15" {
		t.Errorf("read %v, want 5 to 15", got)
	}
	rd.Close()
	for i := len(nodes) - 1; i >= 0; i-- {
		nodes[i].stop()
	}
	src, dst := dumpBatches(t, nodes[0].dir, "trimmed", 0), dumpBatches(t, nodes[1].dir, "trimmed", 0)
	if len(src) != 2 || len(dst) != 3 || src[0].offset != 0 || dst[0].offset != 0 || !bytes.Equal(src[0].body, dst[0].body) || !bytes.Equal(src[1].body, dst[1].body) {
		t.Errorf("source batches %d, target %d: want the source's two, identical, and one more", len(src), len(dst))
	}
}

// TestPartitionMoveIntoReplicatedGroup moves a partition into a group of
// two nodes: the copy is replicated to the target's follower like any
// append, and all three logs hold the partition's batches byte for byte.
func TestPartitionMoveIntoReplicatedGroup(t *testing.T) {
	nodes, natsURL, secret := startGroupNodes(t, "g1", "g2", "g2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, adm := clusterClient(ctx, t, nodes)
	createTopic(t, nodes[0].addr, "repl", 1)
	poll.True(t, "partition 0 on g1", func() bool { return leaderOf(ctx, adm, "repl", 0) == 1 })
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "repl", Partition: 0, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0, 200)
	mustRun(t, "", "topic", "move", "--nats", natsURL, "--cluster-secret-file", secret, "--topic", "repl", "--partition", "0", "--to-group", "g2")
	poll.True(t, "partition 0 led by node 2 with node 3 in sync", func() bool {
		m, err := adm.Metadata(ctx, "repl")
		if err != nil {
			return false
		}
		p := m.Topics["repl"].Partitions[0]
		return p.Leader == 2 && slices.Equal(p.Replicas, []int32{2, 3}) && slices.Equal(p.ISR, []int32{2, 3})
	})
	produce(200, 250)
	ends, err := adm.ListEndOffsets(ctx, "repl")
	if e, _ := ends.Lookup("repl", 0); err != nil || e.Offset != 250 {
		t.Fatalf("end offset %+v (%v), want 250", e, err)
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		nodes[i].stop()
	}
	src := dumpBatches(t, nodes[0].dir, "repl", 0)
	for _, n := range nodes[1:] {
		dst := dumpBatches(t, n.dir, "repl", 0)
		if len(dst) != 250 || len(src) != 200 {
			t.Fatalf("%s: %d batches, source %d; want 250 and 200", n.dir, len(dst), len(src))
		}
		for i, s := range src {
			if dst[i].offset != s.offset || !bytes.Equal(dst[i].body, s.body) {
				t.Fatalf("%s: batch %d differs from the source's", n.dir, i)
			}
		}
	}
}

// TestMoveListedAndCancelled: a move to a group whose node is down waits
// for it, ListPartitionReassignments shows it in progress, and
// `unilog topic move --cancel` drops it, leaving the partition where it
// was. A group no node ever led is refused.
func TestMoveListedAndCancelled(t *testing.T) {
	ctx, nodes, natsURL, secret, cl, adm := startOnG1(t, "waiting")
	cp := []string{"--nats", natsURL, "--cluster-secret-file", secret, "--topic", "waiting", "--partition", "0"}
	if r := runCLI(t, "", append([]string{"topic", "move", "--to-group", "nowhere"}, cp...)...); r.err == nil || !strings.Contains(r.err.Error(), `no node ever led replica group "nowhere"`) {
		t.Errorf("move to an unknown group: %v", r.err)
	}
	nodes[1].stop()
	out := mustRun(t, "", append([]string{"topic", "move", "--to-group", "g2", "--wait=false"}, cp...)...).stdout
	if out != "moving waiting/0 from g1 to g2\n" {
		t.Errorf("topic move --wait=false printed %q", out)
	}
	// Node 1 sees the move once its watch of the control plane brings it.
	poll.True(t, "waiting/0 listed, removing node 1 and adding none (g2 is down)", func() bool {
		listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"waiting": {0: {}}})
		got, ok := listed["waiting"][0]
		return err == nil && ok && slices.Equal(got.RemovingReplicas, []int32{1}) && len(got.AddingReplicas) == 0
	})
	if out := mustRun(t, "", append([]string{"topic", "move", "--cancel"}, cp...)...).stdout; out != "cancelled the move of waiting/0\n" {
		t.Errorf("topic move --cancel printed %q", out)
	}
	poll.True(t, "no reassignment listed", func() bool {
		listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"waiting": {0: {}}})
		return err == nil && len(listed["waiting"]) == 0
	})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "waiting", Partition: 0, Value: []byte("still g1")}).FirstErr(); err != nil || leaderOf(ctx, adm, "waiting", 0) != 1 {
		t.Errorf("produce after the cancel: %v, leader %d", err, leaderOf(ctx, adm, "waiting", 0))
	}
}
