package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/ha/controlplane"
	"github.com/unilog/unilog/internal/poll"
	"github.com/unilog/unilog/internal/testnet"
)

// brokerProcess is one `unilog broker` in a child process.
type brokerProcess struct {
	id    int
	dir   string
	args  []string
	cmd   *exec.Cmd
	addr  string
	admin string
	exit  chan error
}

// startBrokerProcess starts (or restarts) p and waits for its listening
// line. Its logs go to <dir>.log, shown when the test fails.
func startBrokerProcess(t *testing.T, p *brokerProcess) {
	t.Helper()
	// The test binary acts as unilog (TestMain).
	cmd := exec.Command(os.Args[0], append([]string{"broker"}, p.args...)...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	logf, err := os.OpenFile(p.dir+".log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.cmd, p.exit = cmd, make(chan error, 1)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				lines <- sc.Text()
			}
		}
		close(lines)
		p.exit <- cmd.Wait()
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatalf("node %d exited before listening: %s", p.id, tail(p.dir+".log"))
		}
		m := listeningLine.FindStringSubmatch(line)
		p.addr = m[1]
		p.admin = strings.TrimSuffix(strings.TrimPrefix(m[2], "http://"), "/metrics")
	case <-time.After(60 * time.Second):
		t.Fatalf("node %d printed no listening line: %s", p.id, tail(p.dir+".log"))
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

// startReplicaGroup starts a NATS server and three broker processes in
// one replica group on it, with args added to each; they stop, and their
// logs are shown if the test failed, when it ends.
func startReplicaGroup(t *testing.T, args ...string) (*controlplane.Server, []*brokerProcess) {
	t.Helper()
	srv, err := controlplane.StartServer(controlplane.ServerConfig{Name: "group-test", Dir: t.TempDir(), Listen: "127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)

	base := t.TempDir()
	nodes := make([]*brokerProcess, 3)
	t.Cleanup(func() {
		for _, p := range nodes {
			if p == nil {
				continue
			}
			if p.cmd.ProcessState == nil {
				p.cmd.Process.Signal(syscall.SIGTERM)
				if err := <-p.exit; err != nil {
					t.Errorf("node %d did not stop cleanly: %v", p.id, err)
				}
			}
			if log, _ := os.ReadFile(p.dir + ".log"); bytes.Contains(log, []byte("DATA RACE")) {
				t.Errorf("node %d: the race detector reported a race", p.id)
			}
		}
		if t.Failed() {
			for _, p := range nodes {
				if p != nil {
					t.Logf("node %d log:\n%s", p.id, tail(p.dir+".log"))
				}
			}
		}
	})
	for i := range nodes {
		p := &brokerProcess{id: i + 1, dir: filepath.Join(base, fmt.Sprintf("n%d", i+1))}
		p.args = append([]string{"--data-dir", p.dir, "--node-id", fmt.Sprint(p.id), "--nats", srv.ClientURL(),
			// The same addresses after a restart, where clients look for it.
			"--listen", testnet.FreeAddr(t), "--admin", testnet.FreeAddr(t), "--replication-listen", testnet.FreeAddr(t),
			"--file-size", "8MiB", "--lease-duration", "2s", "--log-level", "debug"}, args...)
		startBrokerProcess(t, p)
		nodes[i] = p
	}
	return srv, nodes
}

// TestReplicaGroupFailover runs three broker processes in one replica
// group on a NATS the test starts, produces with acks=all under sync
// replication, SIGKILLs the leader, and checks that a follower takes over
// within a few seconds, that every acknowledged record and a committed
// group offset survive exactly once, and that the killed node, back, ends
// with a commit log byte-identical to the others'. A log start moved by
// DeleteRecords on the old leader holds on the new one, which also says
// where the old leader epoch ends.
func TestReplicaGroupFailover(t *testing.T) {
	srv, nodes := startReplicaGroup(t, "--replication", "sync")

	leader := waitLeader(t, nodes, 0, 2)
	t.Logf("node %d leads epoch %d with both followers in sync", leader.id, mustStatus(t, leader).Epoch)

	seeds := []string{nodes[0].addr, nodes[1].addr, nodes[2].addr}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "ha"); err != nil {
		t.Fatal(err)
	}
	replicasAre(t, ctx, adm, []int32{1, 2, 3}, []int32{1, 2, 3})

	// A producer that keeps going through the failover.
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		errs  []error
	)
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	stop := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; ; i++ {
			select {
			case <-stop:
				cl.Flush(ctx)
				return
			default:
			}
			v := fmt.Sprintf("v%06d", i)
			cl.Produce(ctx, &kgo.Record{Topic: "ha", Value: []byte(v)}, func(_ *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				acked[v] = true
			})
			if i%50 == 49 {
				cl.Flush(ctx)
			}
		}
	}()
	poll.True(t, "300 acknowledged records", func() bool { return ackedCount() >= 300 })

	// A committed group offset, which lives in the log and must replicate.
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: "ha", Partition: 1, At: 42, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "g", commit); err != nil {
		t.Fatalf("commit offset: %v", err)
	}

	// A batch the old leader acknowledged, retried against the new one:
	// the new leader must answer with its original offset, not store it
	// again (its producer state is the one it kept as a follower).
	retry := newIdempotentRetry(t, ctx, cl, "ha", 0, "exactly-once")
	retryBase := retry.send(t, ctx, cl)

	// A log start moved on the old leader holds on the new one.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "trim"); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"t0", "t1", "t2", "t3"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "trim", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	trimTo := kadm.Offsets{}
	trimTo.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 3})
	if r, err := adm.DeleteRecords(ctx, trimTo); err != nil || r.Error() != nil {
		t.Fatalf("delete records: %v %v", err, r.Error())
	}

	oldEpoch := mustStatus(t, leader).Epoch
	ackedByOld := ackedCount()
	killedAt := time.Now()
	if err := leader.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-leader.exit
	var next *brokerProcess
	poll.True(t, "a new leader", func() bool {
		for _, p := range nodes {
			if st, err := nodeStatus(p.admin); p != leader && err == nil && st.Role == "leader" && st.Epoch > oldEpoch {
				next = p
				return true
			}
		}
		return false
	})
	t.Logf("failover: node %d leads after %s (lease 2s)", next.id, time.Since(killedAt).Round(time.Millisecond))
	if got := retry.send(t, ctx, cl); got != retryBase {
		t.Fatalf("an acknowledged idempotent batch retried on the new leader: offset %d, the old leader's %d", got, retryBase)
	}
	before := ackedCount()
	poll.True(t, "300 records acknowledged by the new leader", func() bool { return ackedCount() >= before+300 })
	close(stop)
	<-produced
	alive := slices.DeleteFunc([]int32{1, 2, 3}, func(id int32) bool { return id == int32(leader.id) })
	replicasAre(t, ctx, adm, alive, alive)
	oldEpochEnds(t, ctx, cl, adm, int32(oldEpoch), ackedByOld)
	if starts, err := adm.ListStartOffsets(ctx, "trim"); err != nil || starts["trim"][0].Offset != 3 {
		t.Fatalf("log start on the new leader: %v %+v, want 3 as DeleteRecords set it on the old one", err, starts["trim"])
	}

	// The killed node comes back, truncates what the new leader lacks and
	// follows it.
	startBrokerProcess(t, leader)
	waitLeader(t, nodes, next.id, 2)

	var status string
	poll.True(t, "cluster status to show both followers in sync", func() bool {
		r := runCLI(t, "", "cluster", "status", "--nats", srv.ClientURL())
		status = r.stdout
		return r.err == nil && regexp.MustCompile(fmt.Sprintf(`(?m)^main\s+%d\s+\d+\s+\d+ \d+$`, next.id)).MatchString(status) &&
			len(regexp.MustCompile(`(?m)^\d\s+main\s+follower\s+\d+\s+\S+\s+\d+\s+\d+\s+\S+ ago\s+live$`).FindAllString(status, -1)) == 2
	})
	t.Logf("cluster status:\n%s", status)

	fetched, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("ha", 1); !ok || o.Err != nil || o.At != 42 {
		t.Fatalf("committed offset after failover: %+v (found %v), want 42", o, ok)
	}

	seen := consumeAll(t, ctx, seeds, "ha")
	if n := seen["exactly-once"]; n != 1 {
		t.Errorf("the retried idempotent batch consumed %d times", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for v := range acked {
		if n := seen[v]; n != 1 {
			t.Errorf("acknowledged record %s consumed %d times", v, n)
		}
	}
	t.Logf("%d records acknowledged, %d consumed, %d produce errors (retried or given up: %v)", len(acked), len(seen), len(errs), firstErr(errs))

	// Every node's log is the same bytes over its whole length.
	end := mustStatus(t, next).LogEndOffset
	poll.True(t, "every node at the leader's end", func() bool {
		for _, p := range nodes {
			if st, err := nodeStatus(p.admin); err != nil || st.LogEndOffset != end {
				return false
			}
		}
		return true
	})
	want := logCRC(t, next.dir, end)
	wantEpochs, err := os.ReadFile(filepath.Join(next.dir, "commitlog", commitlog.EpochFileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range nodes {
		if got := logCRC(t, p.dir, end); got != want {
			t.Errorf("node %d: commit log [0, %d) CRC %08x, leader's %08x", p.id, end, got, want)
		}
		if got, err := os.ReadFile(filepath.Join(p.dir, "commitlog", commitlog.EpochFileName)); err != nil || !bytes.Equal(got, wantEpochs) {
			t.Errorf("node %d: epoch file differs from the leader's (%v)", p.id, err)
		}
	}
}

// replicasAre waits until Metadata names replicas and isr for every
// partition of topic "ha".
func replicasAre(t *testing.T, ctx context.Context, adm *kadm.Client, replicas, isr []int32) {
	t.Helper()
	poll.Until(t, fmt.Sprintf("Metadata to show replicas %v, in sync %v", replicas, isr), func() error {
		md, err := adm.Metadata(ctx, "ha")
		if err != nil {
			return err
		}
		for _, p := range md.Topics["ha"].Partitions {
			if !slices.Equal(p.Replicas, replicas) || !slices.Equal(p.ISR, isr) {
				return fmt.Errorf("partition %d: replicas %v, in sync %v", p.Partition, p.Replicas, p.ISR)
			}
		}
		return nil
	})
}

func firstErr(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}

func mustStatus(t *testing.T, p *brokerProcess) broker.NodeStatus {
	t.Helper()
	st, err := nodeStatus(p.admin)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitLeader waits until a node (node id want, or any if 0) leads with
// inSync followers in sync, and returns it.
func waitLeader(t *testing.T, nodes []*brokerProcess, want, inSync int) *brokerProcess {
	t.Helper()
	var leader *brokerProcess
	poll.True(t, fmt.Sprintf("a leader with %d followers in sync", inSync), func() bool {
		for _, p := range nodes {
			st, err := nodeStatus(p.admin)
			if err == nil && st.Role == "leader" && len(st.InSync) == inSync && (want == 0 || p.id == want) {
				leader = p
				return true
			}
		}
		return false
	})
	return leader
}

// consumeAll reads every partition of topic from the start to its end and
// counts each value.
func consumeAll(t *testing.T, ctx context.Context, seeds []string, topic string) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	seen := map[string]int{}
	for n := int64(0); n < total; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", n, total, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			n++
		})
	}
	return seen
}

// logCRC is the CRC32C of a data directory's commit log over [0, end).
func logCRC(t *testing.T, dir string, end int64) uint32 {
	t.Helper()
	logDir := filepath.Join(dir, "commitlog")
	var all []byte
	for base := int64(0); base < end; base += 8 << 20 {
		b, err := os.ReadFile(filepath.Join(logDir, fmt.Sprintf("%020d", base)))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b[:min(int64(len(b)), end-base)]...)
	}
	return crc32.Checksum(all, crc32.MakeTable(crc32.Castagnoli))
}

// oldEpochEnds asks the new leader where the old leader's epoch ends in
// each partition of topic ha (OffsetForLeaderEpoch, as a consumer that
// read under the old epoch does): every record the old leader had
// acknowledged (acked, plus the retried idempotent batch) lies below those
// ends, and the records the new leader took since lie at or above them.
func oldEpochEnds(t *testing.T, ctx context.Context, cl *kgo.Client, adm *kadm.Client, epoch int32, acked int) {
	t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = "ha"
	for p := int32(0); p < 3; p++ {
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p, -1, epoch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "ha")
	if err != nil {
		t.Fatal(err)
	}
	var epochEnds, logEnds int64
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 || p.LeaderEpoch != epoch {
				t.Fatalf("partition %d: %v, epoch %d, want the old epoch %d", p.Partition, kerr.ErrorForCode(p.ErrorCode), p.LeaderEpoch, epoch)
			}
			end, _ := ends.Lookup("ha", p.Partition)
			if p.EndOffset > end.Offset {
				t.Fatalf("partition %d: epoch %d ends at %d, past the log end %d", p.Partition, epoch, p.EndOffset, end.Offset)
			}
			epochEnds += p.EndOffset
			logEnds += end.Offset
		}
	}
	if epochEnds < int64(acked)+1 || epochEnds >= logEnds {
		t.Fatalf("epoch %d ends at %d records in all, want at least the %d the old leader acknowledged and fewer than the %d stored", epoch, epochEnds, acked+1, logEnds)
	}
	t.Logf("epoch %d ends after %d of %d records", epoch, epochEnds, logEnds)
}
