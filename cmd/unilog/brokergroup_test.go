package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/ha/controlplane"
	"github.com/unilog/unilog/internal/poll"
	"github.com/unilog/unilog/internal/testnet"
)

// The HA tests run one replica group of broker processes (the test binary
// re-executed as `unilog broker`, see TestMain) on loopback, against a NATS
// server the test embeds. Each broker reaches NATS through its own
// natsProxy, so a test can cut one off the control plane.

// haFileSize is small so that the logs roll during a test: replication
// must carry end-of-file markers and keep files aligned.
const haFileSize = 64 << 10

// haLease is the lease the HA tests run with, the default: the soak's
// failover times are those a default cluster has.
const haLease = controlplane.DefaultLeaseDuration

// haStatus is the admin GET /status body of a replicating broker.
type haStatus struct {
	NodeID        int32       `json:"node_id"`
	ReplicaGroup  string      `json:"replica_group"`
	Role          string      `json:"role"`
	Epoch         uint64      `json:"epoch"`
	LogEndOffset  int64       `json:"log_end_offset"`
	HighWatermark int64       `json:"high_watermark"`
	InSync        []haReplica `json:"in_sync"`
}

// haReplica is a follower as its leader reports it.
type haReplica struct {
	Node string `json:"node"`
	End  int64  `json:"end"`
}

type haNode struct {
	id                 int
	dir                string
	kafka, admin, repl string
	// nats is what the broker is given as --nats: its proxy's URL, or
	// the server's in a netnsLab.
	nats  string
	proxy *natsProxy
	// netns is the network namespace it runs in ("": the test's own).
	netns string

	cmd  *exec.Cmd
	done chan error
	runs int
}

type brokerGroup struct {
	t     *testing.T
	nodes []*haNode
	args  []string
	http  *http.Client
}

// startBrokerGroup starts NATS and n brokers of one replica group with sync
// replication, and waits for a leader with every follower in sync. extra
// flags go to every broker.
func startBrokerGroup(t *testing.T, n int, extra ...string) *brokerGroup {
	t.Helper()
	return startBrokerGroupOn(t, n, nil, extra...)
}

// startBrokerGroupOn is startBrokerGroup with each broker in its own
// namespace of lab, reaching NATS directly; nil is loopback, each broker
// through a natsProxy.
func startBrokerGroupOn(t *testing.T, n int, lab *netnsLab, extra ...string) *brokerGroup {
	t.Helper()
	listen := "127.0.0.1:0"
	if lab != nil {
		listen = lab.hostIP() + ":0"
	}
	srv, err := controlplane.StartServer(controlplane.ServerConfig{Name: "ha-test", Dir: t.TempDir(), Listen: listen, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	c := &brokerGroup{t: t, args: extra, http: &http.Client{Timeout: 2 * time.Second}}
	for i := 1; i <= n; i++ {
		nd := &haNode{id: i, dir: t.TempDir()}
		if lab != nil {
			// A namespace of its own: the same ports on every node.
			nd.kafka, nd.admin, nd.repl = lab.ip(i)+":9092", lab.ip(i)+":9644", lab.ip(i)+":9192"
			nd.nats, nd.netns = srv.ClientURL(), lab.ns(i)
		} else {
			nd.kafka, nd.admin, nd.repl = testnet.FreeAddr(t), testnet.FreeAddr(t), testnet.FreeAddr(t)
			nd.proxy = startNATSProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
			nd.nats = nd.proxy.URL()
		}
		c.nodes = append(c.nodes, nd)
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			if nd.cmd != nil {
				nd.cmd.Process.Kill()
				<-nd.done
				nd.cmd = nil
			}
		}
		if t.Failed() {
			c.dumpLogs()
		}
	})
	for i := range c.nodes {
		c.start(i)
	}
	c.waitInSync(c.waitLeader(1, -1))
	return c
}

func (c *brokerGroup) logPath(nd *haNode) string { return runLog(nd, nd.runs) }

// runLog is where run (1, 2, ...) of node nd logs.
func runLog(nd *haNode, run int) string {
	return filepath.Join(nd.dir, fmt.Sprintf("broker-%d.log", run))
}

// start runs node i (0-based) and waits until its admin port answers.
func (c *brokerGroup) start(i int) {
	c.t.Helper()
	nd := c.nodes[i]
	nd.runs++
	out, err := os.Create(c.logPath(nd))
	if err != nil {
		c.t.Fatal(err)
	}
	args := append([]string{"broker",
		"--data-dir", nd.dir, "--listen", nd.kafka, "--admin", nd.admin,
		"--node-id", strconv.Itoa(nd.id), "--replica-group", "ha",
		"--nats", nd.nats, "--replication-listen", nd.repl,
		"--replication", "sync", "--min-insync", "2",
		"--lease-duration", haLease.String(), "--file-size", strconv.Itoa(haFileSize),
	}, c.args...)
	cmd := exec.Command(os.Args[0], args...)
	if nd.netns != "" {
		// ip execs the broker in place: the same process, signals and all.
		cmd = exec.Command("ip", append([]string{"netns", "exec", nd.netns, os.Args[0]}, args...)...)
	}
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	cmd.Stdout, cmd.Stderr = out, out
	// A test binary killed by its -timeout runs no cleanup: the kernel
	// then takes its brokers with it instead of leaving them running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		c.t.Fatal(err)
	}
	out.Close()
	nd.cmd = cmd
	nd.done = make(chan error, 1)
	go func() { nd.done <- cmd.Wait() }()
	poll.True(c.t, fmt.Sprintf("node %d to serve /status", nd.id), func() bool {
		select {
		case err := <-nd.done:
			nd.cmd = nil
			c.t.Fatalf("node %d exited at start: %v\n%s", nd.id, err, c.tail(nd, 40))
		default:
		}
		_, err := c.status(i)
		return err == nil
	})
}

// kill SIGKILLs node i and reaps it.
func (c *brokerGroup) kill(i int) {
	c.t.Helper()
	nd := c.nodes[i]
	if err := nd.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	<-nd.done
	nd.cmd = nil
}

// signal sends sig to node i, which keeps running (SIGSTOP, SIGCONT).
func (c *brokerGroup) signal(i int, sig syscall.Signal) {
	c.t.Helper()
	if err := c.nodes[i].cmd.Process.Signal(sig); err != nil {
		c.t.Fatal(err)
	}
}

// pause SIGSTOPs node i and returns once it stopped running: the signal
// is only queued when kill returns.
func (c *brokerGroup) pause(i int) {
	c.t.Helper()
	c.signal(i, syscall.SIGSTOP)
	stat := fmt.Sprintf("/proc/%d/stat", c.nodes[i].cmd.Process.Pid)
	poll.True(c.t, fmt.Sprintf("node %d to stop", c.nodes[i].id), func() bool {
		b, err := os.ReadFile(stat)
		// pid (comm) state ...: comm may hold spaces, not ')'.
		j := bytes.LastIndexByte(b, ')')
		return err == nil && j >= 0 && j+2 < len(b) && b[j+2] == 'T'
	})
}

// stop SIGTERMs node i and fails the test unless it stops cleanly.
func (c *brokerGroup) stop(i int) {
	c.t.Helper()
	nd := c.nodes[i]
	if err := nd.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatal(err)
	}
	select {
	case err := <-nd.done:
		if err != nil {
			c.t.Errorf("node %d after SIGTERM: %v\n%s", nd.id, err, c.tail(nd, 20))
		}
	case <-time.After(60 * time.Second):
		c.t.Errorf("node %d did not stop on SIGTERM", nd.id)
		nd.cmd.Process.Kill()
		<-nd.done
	}
	nd.cmd = nil
}

func (c *brokerGroup) status(i int) (haStatus, error) {
	var st haStatus
	resp, err := c.http.Get("http://" + c.nodes[i].admin + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET /status: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// leader returns the running node that leads the highest epoch, or -1.
func (c *brokerGroup) leader() (int, haStatus) {
	best, bestSt := -1, haStatus{}
	for i, nd := range c.nodes {
		if nd.cmd == nil {
			continue
		}
		if st, err := c.status(i); err == nil && st.Role == "leader" && (best < 0 || st.Epoch > bestSt.Epoch) {
			best, bestSt = i, st
		}
	}
	return best, bestSt
}

// waitLeader waits for a running node other than except to lead an epoch
// of at least minEpoch.
func (c *brokerGroup) waitLeader(minEpoch uint64, except int) int {
	c.t.Helper()
	leader := -1
	poll.True(c.t, fmt.Sprintf("a leader of epoch %d or later", minEpoch), func() bool {
		i, st := c.leader()
		if i < 0 || i == except || st.Epoch < minEpoch {
			return false
		}
		leader = i
		return true
	})
	return leader
}

// waitInSync waits until leader lists every other running node in sync.
func (c *brokerGroup) waitInSync(leader int) {
	c.t.Helper()
	poll.True(c.t, fmt.Sprintf("every follower in sync with node %d", c.nodes[leader].id), func() bool {
		st, err := c.status(leader)
		if err != nil || st.Role != "leader" {
			return false
		}
		for i, nd := range c.nodes {
			if i == leader || nd.cmd == nil {
				continue
			}
			if !slices.ContainsFunc(st.InSync, func(f haReplica) bool { return f.Node == strconv.Itoa(nd.id) }) {
				return false
			}
		}
		return true
	})
}

// waitSameEnd waits until every running node's log ends at the same
// offset and returns it: with the clients stopped, replication drains.
func (c *brokerGroup) waitSameEnd() int64 {
	c.t.Helper()
	var end int64
	poll.True(c.t, "every log to end at the same offset", func() bool {
		end = -1
		for i, nd := range c.nodes {
			if nd.cmd == nil {
				continue
			}
			st, err := c.status(i)
			if err != nil || (end >= 0 && st.LogEndOffset != end) {
				return false
			}
			end = st.LogEndOffset
		}
		return end > 0
	})
	return end
}

// compareLogs checks that every node's commit log holds the same bytes
// over [0, end): a CRC32C of each node's range, file by file, so the
// failure names the first file that differs.
func (c *brokerGroup) compareLogs(end int64) {
	c.t.Helper()
	var ref []uint32
	for _, nd := range c.nodes {
		crcs, err := logCRCs(filepath.Join(nd.dir, "commitlog"), end)
		if err != nil {
			c.t.Fatalf("node %d: %v", nd.id, err)
		}
		if ref == nil {
			ref = crcs
			continue
		}
		for f := range ref {
			if crcs[f] != ref[f] {
				c.t.Errorf("node %d: commit log bytes [%d, %d) have CRC %08x, node %d's %08x", nd.id,
					int64(f)*haFileSize, min(int64(f+1)*haFileSize, end), crcs[f], c.nodes[0].id, ref[f])
			}
		}
	}
	c.t.Logf("commit logs byte-identical over [0, %d) on all %d nodes (%d files)", end, len(c.nodes), len(ref))
}

// logCRCs returns the CRC32C of each file's part of [0, end).
func logCRCs(dir string, end int64) ([]uint32, error) {
	table := crc32.MakeTable(crc32.Castagnoli)
	var crcs []uint32
	for base := int64(0); base < end; base += haFileSize {
		path := filepath.Join(dir, fmt.Sprintf("%020d", base))
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, min(haFileSize, end-base))
		_, err = f.ReadAt(buf, 0)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		crcs = append(crcs, crc32.Checksum(buf, table))
	}
	return crcs, nil
}

// seeds are every node's Kafka address.
func (c *brokerGroup) seeds() []string {
	var out []string
	for _, nd := range c.nodes {
		out = append(out, nd.kafka)
	}
	return out
}

func (c *brokerGroup) createTopic(topic string, partitions int32) {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		c.t.Fatalf("create topic %s: %v", topic, err)
	}
}

// tail is the end of node nd's current log.
func (c *brokerGroup) tail(nd *haNode, lines int) string {
	return tailFile(c.logPath(nd), lines)
}

func tailFile(path string, lines int) string {
	b, _ := os.ReadFile(path)
	all := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	return string(bytes.Join(all[max(len(all)-lines, 0):], []byte("\n")))
}

func (c *brokerGroup) dumpLogs() {
	for _, nd := range c.nodes {
		for run := 1; run <= nd.runs; run++ {
			c.t.Logf("node %d, run %d, last lines:\n%s", nd.id, run, tailFile(runLog(nd, run), 30))
		}
	}
}
