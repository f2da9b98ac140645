package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/ha/controlplane"
	"github.com/unilog/unilog/ha/replication"
	"github.com/unilog/unilog/internal/poll"
	"github.com/unilog/unilog/internal/testnet"
)

func TestEmbeddedReplicas(t *testing.T) {
	for _, tc := range []struct {
		routes []string
		self   string
		want   int
	}{
		{nil, "", 1},
		{[]string{"nats-route://a:6222"}, "b:6222", 1},
		{[]string{"nats-route://a:6222", "nats-route://b:6222"}, "b:6222", 1},
		{[]string{"nats-route://a:6222", "nats-route://b:6222"}, "c:6222", 3},
		{[]string{"nats-route://a:6222", "nats-route://b:6222", "nats-route://c:6222"}, "a:6222", 3},
	} {
		if got := embeddedReplicas(tc.routes, tc.self); got != tc.want {
			t.Errorf("routes %v, self %s: %d replicas, want %d", tc.routes, tc.self, got, tc.want)
		}
	}
}

func TestBrokerRefusesConflictingControlPlaneFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nats", "nats://127.0.0.1:1", "--nats-routes", "nats-route://127.0.0.1:2"}, "give one or the other"},
		{[]string{"--nats-creds", "/x.creds"}, "need --nats"},
		{[]string{"--advertise", "no-port"}, "--advertise"},
		{[]string{"--nats-routes", "nats-route://127.0.0.1:2"}, "cluster listen address and routes"},
		{[]string{"--nats-cluster-listen", "127.0.0.1:0", "--nats-routes", "http://127.0.0.1:2"}, "want nats-route://host:port"},
		{[]string{"--replica-group", "a.b"}, "replica group"},
		{[]string{"--lease-duration", "500ms"}, "at least 1s"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"broker", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--admin", "", "--nats-listen", "127.0.0.1:0"}, tc.args...)
			r := runCLI(t, "", args...)
			if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
				t.Fatalf("%v, want an error with %q", r.err, tc.want)
			}
		})
	}
}

// TestBrokerMovesFileMetadataIntoTheControlPlane starts the control plane
// on a data directory written without it: its topics and records must
// still be there.
func TestBrokerMovesFileMetadataIntoTheControlPlane(t *testing.T) {
	dir := t.TempDir()
	b, err := broker.Open(broker.Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: quietLogger()}, testStore())
	if err != nil {
		t.Fatal(err)
	}
	createTopic(t, b.Addr(), "old", 2)
	mustRun(t, "one\ntwo\n", "produce", "--brokers", b.Addr(), "--topic", "old")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	addr, done := runBrokerCommand(ctx, t, "--data-dir", dir, "--listen", "127.0.0.1:0", "--admin", "", "--file-size", "8MiB")
	if list := mustRun(t, "", "topic", "list", "--brokers", addr).stdout; !regexp.MustCompile(`(?m)^old\s+2$`).MatchString(list) {
		t.Errorf("topic list:\n%s", list)
	}
	if out := mustRun(t, "", "consume", "--brokers", addr, "--topic", "old").stdout; len(strings.Fields(out)) != 2 {
		t.Errorf("consumed %q, want one and two", out)
	}
	// Deleted in the control plane, the topic must not come back from the
	// old file on the next start.
	mustRun(t, "", "topic", "delete", "--brokers", addr, "--topic", "old")
	cancel()
	if r := <-done; r.err != nil || !strings.Contains(r.stderr, "topic moved from the metadata file into the control plane") {
		t.Errorf("broker: %v\n%s", r.err, r.stderr)
	}
	ctx, cancel = context.WithCancel(context.Background())
	addr, done = runBrokerCommand(ctx, t, "--data-dir", dir, "--listen", "127.0.0.1:0", "--admin", "", "--file-size", "8MiB")
	if list := mustRun(t, "", "topic", "list", "--brokers", addr).stdout; strings.Contains(list, "old") {
		t.Errorf("deleted topic back after a restart:\n%s", list)
	}
	cancel()
	if r := <-done; r.err != nil {
		t.Errorf("second start: %v\n%s", r.err, r.stderr)
	}
}

// TestDefaultControlPlaneAdmitsOnlyTheSecret runs a broker with no
// control plane flag at all: its embedded NATS refuses a client without
// credentials, and `unilog cluster status` gets in with the secret the
// broker wrote into its data directory.
func TestDefaultControlPlaneAdmitsOnlyTheSecret(t *testing.T) {
	t.Setenv(clusterSecretEnv, "")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	replAddr := testnet.FreeAddr(t)
	out, done := startBrokerCommand(ctx, t, "--data-dir", dir, "--listen", "127.0.0.1:0", "--admin", "", "--file-size", "8MiB",
		"--replication-listen", replAddr)
	url := controlPlaneLine.FindStringSubmatch(out)[1]
	secretFile := filepath.Join(dir, controlplane.SecretFileName)
	if st, err := os.Stat(secretFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file %s: %v; want mode 0600", secretFile, err)
	}

	if nc, err := nats.Connect(url, nats.MaxReconnects(0)); !errors.Is(err, nats.ErrAuthorization) {
		if err == nil {
			nc.Close()
		}
		t.Fatalf("NATS client without credentials: %v, want an authorization violation", err)
	}
	if r := runCLI(t, "", "cluster", "status", "--nats", url); r.err == nil || !strings.Contains(r.err.Error(), "--cluster-secret-file") {
		t.Errorf("cluster status without the secret: %v, want a hint at --cluster-secret-file", r.err)
	}
	if r := runCLI(t, "", "cluster", "status", "--nats", url, "--cluster-secret-file", secretFile); r.err != nil || !regexp.MustCompile(`(?m)^0\s+main\s+leader`).MatchString(r.stdout) {
		t.Errorf("cluster status with the secret: %v\n%s", r.err, r.stdout)
	}

	// Nor does its replication stream serve a follower without it.
	log, err := commitlog.Open(commitlog.Options{Dir: t.TempDir(), FileSize: 8 << 20, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if _, err := log.Recover(0, nil); err != nil {
		t.Fatal(err)
	}
	epochs, err := commitlog.OpenEpochs(log.Dir())
	if err != nil {
		t.Fatal(err)
	}
	intruder := replication.NewFollower(replication.FollowerConfig{Node: "9", Log: log, Epochs: epochs, FileSize: 8 << 20,
		Key: []byte("guessed"), Logger: quietLogger()})
	fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
	defer fcancel()
	if err := intruder.Follow(fctx, replAddr, 1); !errors.Is(err, replication.ErrUnauthenticated) {
		t.Errorf("replication follower without the secret: %v, want ErrUnauthenticated", err)
	}
	cancel()
	if r := <-done; r.err != nil {
		t.Errorf("broker: %v\n%s", r.err, r.stderr)
	} else if !strings.Contains(r.stderr, "refused a follower without the replication key") {
		t.Errorf("the leader did not log the refused follower:\n%s", r.stderr)
	}
}

// TestForgedLeaseNotFollowed: a lease written into the control plane by
// something that is not a node (holder 5, epoch 50, no member record)
// takes the leader's lease away for one lease duration, but the node
// follows no address, takes the lease back above epoch 50, takes it again
// when the key is deleted, and after a restart over a wiped control plane
// store still leads above every epoch it has seen.
func TestForgedLeaseNotFollowed(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--file-size", "8MiB", "--lease-duration", "1s"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, done := startBrokerCommand(ctx, t, args...)
	admin := strings.TrimSuffix(strings.TrimPrefix(listeningLine.FindStringSubmatch(out)[2], "http://"), "/metrics")
	leading := func(min uint64) func() bool {
		return func() bool {
			st, err := nodeStatus(admin)
			return err == nil && st.Role == "leader" && st.Epoch > min
		}
	}
	poll.True(t, "the node to lead", leading(0))

	secret, err := controlplane.ReadSecret(os.Getenv(clusterSecretEnv))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := controlplane.Dial(controlplane.ConnConfig{URLs: controlPlaneLine.FindStringSubmatch(out)[1], Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	leases, err := js.KeyValue(ctx, controlplane.LeasesBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Put(ctx, "lease.main", framedValue(t, `{"group":"main","holder":5,"epoch":50,"duration_ms":1000}`)); err != nil {
		t.Fatal(err)
	}
	poll.True(t, "the node to lead above the forged epoch", leading(50))
	if err := leases.Delete(ctx, "lease.main"); err != nil {
		t.Fatal(err)
	}
	st, _ := nodeStatus(admin)
	poll.True(t, "the node to lead again after the key's deletion", leading(st.Epoch))
	st, _ = nodeStatus(admin)
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"unilog_lease_read_errors_total ", `unilog_lease_reads_ignored_total{reason="stale"} `, `unilog_lease_reads_ignored_total{reason="older_epoch"} `} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	cancel()
	r := <-done
	if r.err != nil {
		t.Fatalf("broker: %v\n%s", r.err, r.stderr)
	}
	if !regexp.MustCompile(`level=warning msg="the lease holder is no member.*leader=5`).MatchString(r.stderr) {
		t.Errorf("no warning about the forged holder:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "replication session ended") {
		t.Errorf("the node dialed someone:\n%s", r.stderr)
	}

	// The control plane's store wiped: the bucket forgets every epoch,
	// the node does not.
	if err := os.RemoveAll(filepath.Join(dir, "nats")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	out, done = startBrokerCommand(ctx, t, args...)
	admin = strings.TrimSuffix(strings.TrimPrefix(listeningLine.FindStringSubmatch(out)[2], "http://"), "/metrics")
	poll.True(t, fmt.Sprintf("the restarted node to lead above epoch %d", st.Epoch), leading(st.Epoch))
	cancel()
	if r := <-done; r.err != nil {
		t.Fatalf("restarted broker: %v\n%s", r.err, r.stderr)
	}
}

// framedValue frames a control plane value as the controlplane package doc says:
// version 1, the body's CRC32C, the JSON body.
func framedValue(t *testing.T, body string) []byte {
	t.Helper()
	b := []byte{1, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli)))
	return append(b, body...)
}

// TestOwnDeletesAreNotAnotherNodes: a single broker deleting its topics
// must not log them as deleted by another node. The control plane's watch
// used to deliver the echo of a delete before the delete had returned,
// and the broker dropped its queues a second time and said so.
func TestOwnDeletesAreNotAnotherNodes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := runBrokerCommand(ctx, t, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--admin", "", "--file-size", "8MiB")
	for range 15 {
		createTopic(t, addr, "short-lived", 2)
		mustRun(t, "", "topic", "delete", "--brokers", addr, "--topic", "short-lived")
	}
	cancel()
	r := <-done
	if r.err != nil {
		t.Fatalf("broker: %v\n%s", r.err, r.stderr)
	}
	if n := strings.Count(r.stderr, "topic deleted\""); n != 15 {
		t.Errorf("%d deletes logged, want 15:\n%s", n, r.stderr)
	}
	if strings.Contains(r.stderr, "deleted by another node") {
		t.Errorf("own deletes logged as another node's:\n%s", r.stderr)
	}
}

// TestControlPlaneKeepsTopicConfigsAndLogStarts: a topic's own configs and
// the log start DeleteRecords moved go with it into the control plane, and
// changes made there (haMetadata.UpdateTopic) outlive a restart.
func TestControlPlaneKeepsTopicConfigsAndLogStarts(t *testing.T) {
	dir := t.TempDir()
	b, err := broker.Open(broker.Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: quietLogger()}, testStore())
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, "", "topic", "create", "--brokers", b.Addr(), "--topic", "cfg", "--config", "retention.ms=60000")
	mustRun(t, "r0\nr1\nr2\n", "produce", "--brokers", b.Addr(), "--topic", "cfg")
	trim(t, b.Addr(), 1)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	check := func(addr string, start int64, configs map[string]string) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		rcs, err := adm.DescribeTopicConfigs(context.Background(), "cfg")
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On("cfg", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rc.Configs {
			if want, ok := configs[c.Key]; ok && (c.Value == nil || *c.Value != want || c.Source != kmsg.ConfigSourceDynamicTopicConfig) {
				t.Errorf("%s: %v from %v, want %s set on the topic", c.Key, c.Value, c.Source, want)
			}
		}
		starts, err := adm.ListStartOffsets(context.Background(), "cfg")
		if o, _ := starts.Lookup("cfg", 0); err != nil || o.Offset != start {
			t.Errorf("log start %+v %v, want %d", o, err, start)
		}
	}
	run := func() (string, context.CancelFunc, <-chan cliResult) {
		ctx, cancel := context.WithCancel(context.Background())
		addr, done := runBrokerCommand(ctx, t, "--data-dir", dir, "--listen", "127.0.0.1:0", "--admin", "", "--file-size", "8MiB")
		return addr, cancel, done
	}
	addr, cancel, done := run()
	check(addr, 1, map[string]string{"retention.ms": "60000"})
	mustRun(t, "", "topic", "create", "--brokers", addr, "--topic", "unused") // the store takes writes
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	r, err := kadm.NewClient(cl).AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kmsg.StringPtr("5000")}}, "cfg")
	cl.Close()
	if err != nil || r[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, r)
	}
	trim(t, addr, 2)
	cancel()
	if r := <-done; r.err != nil || !strings.Contains(r.stderr, "topic moved from the metadata file into the control plane") {
		t.Fatalf("broker: %v\n%s", r.err, r.stderr)
	}
	addr, cancel, done = run()
	check(addr, 2, map[string]string{"retention.ms": "60000", "max.message.bytes": "5000"})
	cancel()
	if r := <-done; r.err != nil {
		t.Errorf("second start: %v\n%s", r.err, r.stderr)
	}
}

// trim moves partition 0 of topic cfg's log start to offset.
func trim(t *testing.T, addr string, offset int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "cfg", Partition: 0, At: offset})
	resp, err := kadm.NewClient(cl).DeleteRecords(context.Background(), offs)
	if r, _ := resp.Lookup("cfg", 0); err != nil || r.Err != nil || r.LowWatermark != offset {
		t.Fatalf("delete records to %d: %v %+v", offset, err, r)
	}
}
