package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/ha/controlplane"
	"github.com/unilog/unilog/internal/poll"
	"github.com/unilog/unilog/internal/testnet"
)

var controlPlaneLine = regexp.MustCompile(`control plane (nats://\S+): node`)

func nodeStatus(admin string) (broker.NodeStatus, error) {
	var st broker.NodeStatus
	resp, err := http.Get("http://" + admin + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// TestTwoReplicaGroupsServeOneTopic runs two brokers, each the only node
// of its replica group, on one control plane (node 1 embeds NATS, node 2
// joins it as an external NATS). A topic created on node 2 has a partition
// on each group; a client seeded with one node produces to and consumes
// from both, finding each partition's leader through Metadata.
func TestTwoReplicaGroupsServeOneTopic(t *testing.T) {
	ctx := context.Background()
	natsURL := ""
	var nodes []struct{ addr, admin string }
	var runs []<-chan cliResult
	var stops []context.CancelFunc
	for i, group := range []string{"g1", "g2"} {
		args := []string{"--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0",
			"--file-size", "8MiB", "--node-id", fmt.Sprint(i + 1), "--replica-group", group}
		if natsURL != "" {
			args = append(args, "--nats", natsURL)
		}
		nctx, stop := context.WithCancel(ctx)
		out, done := startBrokerCommand(nctx, t, args...)
		natsURL = controlPlaneLine.FindStringSubmatch(out)[1]
		m := listeningLine.FindStringSubmatch(out)
		admin := strings.TrimSuffix(strings.TrimPrefix(m[2], "http://"), "/metrics")
		nodes = append(nodes, struct{ addr, admin string }{m[1], admin})
		runs = append(runs, done)
		stops = append(stops, stop)
	}
	// Node 2 first: it reaches NATS through node 1.
	defer func() {
		for i := len(runs) - 1; i >= 0; i-- {
			stops[i]()
			if r := <-runs[i]; r.err != nil {
				t.Errorf("node %d: %v\n%s", i+1, r.err, r.stderr)
			}
		}
	}()

	for i, n := range nodes {
		poll.True(t, fmt.Sprintf("node %d to lead its group", i+1), func() bool {
			st, err := nodeStatus(n.admin)
			return err == nil && st.Role == "leader" && st.Epoch == 1 && st.NodeID == int32(i+1) && st.ReplicaGroup == fmt.Sprintf("g%d", i+1)
		})
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[1].addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	// Placement spreads over the groups node 2 sees live.
	poll.True(t, "node 2 to list both brokers", func() bool {
		m, err := adm.BrokerMetadata(rctx)
		return err == nil && len(m.Brokers) == 2
	})
	createTopic(t, nodes[1].addr, "spread", 2)
	poll.True(t, "both partitions to have their group's leader", func() bool {
		m, err := adm.Metadata(rctx, "spread")
		if err != nil {
			return false
		}
		ps := m.Topics["spread"].Partitions
		return len(ps) == 2 && ps[0].Leader == 1 && ps[1].Leader == 2 && ps[0].LeaderEpoch == 1
	})

	for p := int32(0); p < 2; p++ {
		for i := 0; i < 3; i++ {
			r := &kgo.Record{Topic: "spread", Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)}
			if err := cl.ProduceSync(rctx, r).FirstErr(); err != nil {
				t.Fatalf("produce to partition %d: %v", p, err)
			}
		}
	}
	got := map[string]bool{}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr), kgo.ConsumeTopics("spread"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for len(got) < 6 {
		fs := consumer.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			t.Fatalf("consumed %v: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got[fmt.Sprintf("%d:%s", r.Partition, r.Value)] = true })
	}
	for p := 0; p < 2; p++ {
		for i := 0; i < 3; i++ {
			if k := fmt.Sprintf("%d:p%d-%d", p, p, i); !got[k] {
				t.Errorf("record %s not consumed; got %v", k, got)
			}
		}
	}

	// Deleted and re-created through node 2, the topic starts empty on
	// node 1 too, which leads partition 0 and kept its records.
	mustRun(t, "", "topic", "delete", "--brokers", nodes[1].addr, "--topic", "spread")
	createTopic(t, nodes[1].addr, "spread", 2)
	poll.True(t, "the re-created topic's partition 0 on node 1", func() bool {
		m, err := adm.Metadata(rctx, "spread")
		return err == nil && len(m.Topics["spread"].Partitions) == 2 && m.Topics["spread"].Partitions[0].Leader == 1
	})
	// Node 1 learns of the new incarnation through its watch of the
	// control plane, a moment after Metadata (from any node) shows it.
	var ends kadm.ListedOffsets
	poll.True(t, "node 1 to serve the re-created topic", func() bool {
		ends, err = adm.ListEndOffsets(rctx, "spread")
		o, _ := ends.Lookup("spread", 0)
		return err == nil && o.Err == nil
	})
	if o, _ := ends.Lookup("spread", 0); o.Offset != 0 {
		t.Errorf("re-created topic's partition 0 ends at %d on node 1, want 0 (%v)", o.Offset, o.Err)
	}

	out := mustRun(t, "", "cluster", "status", "--nats", natsURL).stdout
	for _, want := range []string{
		`(?m)^1\s+g1\s+leader\s+1\s+127\.0\.0\.1:\d+\s+\d+\s+-\s+\S+ ago\s+live$`,
		`(?m)^2\s+g2\s+leader\s+1\s+`,
		`(?m)^g1\s+1\s+1\s+none$`,
		`(?m)^g2\s+2\s+1\s+none$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("cluster status lacks %s:\n%s", want, out)
		}
	}
}

// TestThreeRoutedNodes starts three brokers whose embedded NATS servers
// are routed into one JetStream cluster, as docs/CLUSTER.md's example
// does: the buckets get 3 replicas, and every node sees the others.
func TestThreeRoutedNodes(t *testing.T) {
	const n = 3
	routeAddrs := make([]string, n)
	routes := make([]string, n)
	for i := range routeAddrs {
		routeAddrs[i] = testnet.FreeAddr(t)
		routes[i] = "nats-route://" + routeAddrs[i]
	}
	type node struct {
		addr, admin, nats string
		stop              context.CancelFunc
		done              <-chan cliResult
	}
	// One flag more than a single node needs, as in docs/CLUSTER.md: the
	// shared secret, which the first node to start writes.
	secretFile := filepath.Join(t.TempDir(), "cluster.secret")
	nodes := make([]node, n)
	started := make(chan int, n)
	// Together: each node's JetStream waits for the others before it is
	// ready to create the buckets.
	for i := range nodes {
		go func() {
			// Sent even when startBrokerCommand fails the test and ends
			// this goroutine.
			defer func() { started <- i }()
			ctx, stop := context.WithCancel(context.Background())
			out, done := startBrokerCommand(ctx, t, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0",
				"--file-size", "8MiB", "--node-id", fmt.Sprint(i+1), "--replica-group", fmt.Sprintf("g%d", i+1),
				"--nats-cluster-listen", routeAddrs[i], "--nats-routes", strings.Join(routes, ","), "--cluster-secret-file", secretFile)
			m := listeningLine.FindStringSubmatch(out)
			nodes[i] = node{addr: m[1], admin: strings.TrimSuffix(strings.TrimPrefix(m[2], "http://"), "/metrics"),
				nats: controlPlaneLine.FindStringSubmatch(out)[1], stop: stop, done: done}
		}()
	}
	for range nodes {
		<-started
	}
	// Stopped together: one at a time, the last nodes' JetStream lost its
	// quorum under them and each stop waited out its calls (14 s here).
	defer func() {
		for _, nd := range nodes {
			if nd.stop != nil {
				nd.stop()
			}
		}
		for i, nd := range nodes {
			if nd.stop == nil {
				continue
			}
			if r := <-nd.done; r.err != nil {
				t.Errorf("node %d: %v\n%s", i+1, r.err, r.stderr)
			}
		}
	}()

	if t.Failed() {
		t.FailNow()
	}
	// Any epoch: a node whose first take of its lease met JetStream
	// still electing its own leaders (busy CI) cannot tell whether the
	// take was stored, so it takes the next epoch, as it must.
	poll.Until(t, "every node to see three live leaders", func() error {
		r := runCLI(t, "", "cluster", "status", "--nats", nodes[2].nats, "--cluster-secret-file", secretFile)
		if r.err != nil || len(regexp.MustCompile(`(?m)^\d\s+g\d\s+leader\s+[1-9]\d*\s.*live$`).FindAllString(r.stdout, -1)) != 3 {
			return fmt.Errorf("cluster status: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
		return nil
	})
	// Without the secret, nobody gets in.
	for i, nd := range nodes {
		if nc, err := nats.Connect(nd.nats, nats.MaxReconnects(0)); !errors.Is(err, nats.ErrAuthorization) {
			if err == nil {
				nc.Close()
			}
			t.Errorf("node %d's NATS, no credentials: %v, want an authorization violation", i+1, err)
		}
	}
	secret, err := controlplane.ReadSecret(secretFile)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := controlplane.Dial(controlplane.ConnConfig{URLs: nodes[0].nats, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), controlplane.MetadataBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas; r != 3 {
		t.Fatalf("metadata bucket has %d replicas, want 3", r)
	}
	createTopic(t, nodes[0].addr, "routed", 3)
	mustRun(t, "a\nb\nc\n", "produce", "--brokers", nodes[1].addr, "--topic", "routed")
	if out := mustRun(t, "", "consume", "--brokers", nodes[2].addr, "--topic", "routed").stdout; len(strings.Fields(out)) != 3 {
		t.Errorf("consumed %q, want a b c", out)
	}
}
