package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/unilog/unilog/internal/testnet"
)

// natsChildEnv makes the test binary run one embedded NATS server
// (name,dir,listen,cluster listen,route,route,...) until it is killed: a
// server that dies with its process, as a broker's does, hands no Raft
// leadership over, where one shut down in-process always does.
const natsChildEnv = "UNILOG_TEST_NATS_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(natsChildEnv); spec != "" {
		os.Exit(runNATSChild(spec))
	}
	os.Exit(m.Run())
}

func runNATSChild(spec string) int {
	f := strings.Split(spec, ",")
	s, err := StartServer(ServerConfig{Name: f[0], Dir: f[1], Listen: f[2], ClusterListen: f[3], Routes: f[4:], Logger: quietLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	s.Shutdown()
	return 0
}

func TestRaftTimersInEffect(t *testing.T) {
	if err := applyRaftTimers(); err != nil {
		t.Fatal(err)
	}
	for _, rt := range embeddedRaftTimers {
		if *rt.v != rt.set {
			t.Errorf("%s = %s, want %s", rt.name, *rt.v, rt.set)
		}
	}
	// nats-server's own draw: proof that the variables set are the ones
	// its Raft reads.
	for range 1000 {
		if d := natsRandElectionTimeout(); d < 500*time.Millisecond || d >= time.Second {
			t.Fatalf("nats-server drew an election timeout of %s, want [500ms, 1s)", d)
		}
	}
}

// TestKilledStreamLeaderIsReplacedSoon kills the process of the server
// leading a bucket's stream and writes through a survivor until a new
// leader takes the write. With nats-server's own timers no follower even
// starts an election until 4 s after the last heartbeat, which came at
// most 1 s before the kill: a write taken within 3 s proves the embedded
// timers (an election 0.5 to 1 s after the last heartbeat) are in effect.
func TestKilledStreamLeaderIsReplacedSoon(t *testing.T) {
	const n = 3
	names, clients, routes := make([]string, n), make([]string, n), make([]string, n)
	clusters := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("c%d", i+1)
		clients[i], clusters[i] = testnet.FreeAddr(t), testnet.FreeAddr(t)
		routes[i] = "nats-route://" + clusters[i]
	}
	procs := map[string]*exec.Cmd{}
	for i := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		spec := append([]string{names[i], t.TempDir(), clients[i], clusters[i]}, routes...)
		cmd.Env = append(os.Environ(), natsChildEnv+"="+strings.Join(spec, ","))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		procs[names[i]] = cmd
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	urls := make([]string, n)
	for i, c := range clients {
		urls[i] = "nats://" + c
	}
	nc := dialRetry(ctx, t, strings.Join(urls, ","))
	b, err := OpenBuckets(ctx, nc, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Leases.Put(ctx, "probe", []byte("1")); err != nil {
		t.Fatal(err)
	}
	st, err := b.Leases.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Cluster.Leader
	victim := procs[leader]
	if victim == nil {
		t.Fatalf("stream leader %q is none of %v", leader, names)
	}
	// A connection to a survivor: one to the victim would first wait out
	// the client's reconnect.
	var survivor string
	for i, name := range names {
		if name != leader {
			survivor = urls[i]
		}
	}
	kv, err := OpenBuckets(ctx, dialRetry(ctx, t, survivor), 3, 0)
	if err != nil {
		t.Fatal(err)
	}

	if err := victim.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	killed := time.Now()
	for {
		tctx, tcancel := context.WithTimeout(ctx, 250*time.Millisecond)
		_, err := kv.Leases.Put(tctx, "probe", []byte("2"))
		tcancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no write taken %s after the stream leader's kill: %v", time.Since(killed), err)
		}
	}
	took := time.Since(killed)
	t.Logf("stream leader %s killed: a write was taken %s later", leader, took)
	if took >= 3*time.Second {
		t.Fatalf("a write was taken %s after the stream leader's kill: the embedded Raft timers are not in effect", took)
	}
	st, err = kv.Leases.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if now := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Cluster.Leader; now == leader || now == "" {
		t.Fatalf("stream leader after the kill: %q", now)
	}
}

// dialRetry connects once some server at urls accepts clients.
func dialRetry(ctx context.Context, t *testing.T, urls string) *nats.Conn {
	t.Helper()
	for {
		nc, err := nats.Connect(urls, nats.MaxReconnects(-1))
		if err == nil {
			t.Cleanup(nc.Close)
			return nc
		}
		if !errors.Is(err, nats.ErrNoServers) || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
