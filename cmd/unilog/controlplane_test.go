package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/broker"
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
	b, err := broker.Start(broker.Config{DataDir: dir, Listen: "127.0.0.1:0", FileSize: testBrokerFileSize, Logger: quietLogger()})
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

// TestControlPlaneKeepsTopicConfigsAndLogStarts: a topic's own configs and
// the log start DeleteRecords moved go with it into the control plane, and
// changes made there (haMetadata.UpdateTopic) outlive a restart.
func TestControlPlaneKeepsTopicConfigsAndLogStarts(t *testing.T) {
	dir := t.TempDir()
	b, err := broker.Start(broker.Config{DataDir: dir, Listen: "127.0.0.1:0", FileSize: testBrokerFileSize, Logger: quietLogger()})
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
