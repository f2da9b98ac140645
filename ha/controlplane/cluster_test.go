package controlplane

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/unilog/unilog/internal/testnet"
)

// startCluster routes n embedded servers together, each given the same
// route list and secret, as the nodes of a cluster are.
func startCluster(t *testing.T, n int, secret *Secret) []*Server {
	t.Helper()
	addrs := make([]string, n)
	routes := make([]string, n)
	for i := range addrs {
		addrs[i] = testnet.FreeAddr(t)
		routes[i] = "nats-route://" + addrs[i]
	}
	var servers []*Server
	for i := 0; i < n; i++ {
		s, err := StartServer(ServerConfig{
			Name: fmt.Sprintf("s%d", i+1), Dir: t.TempDir(), Listen: "127.0.0.1:0",
			ClusterListen: addrs[i], Routes: routes, Secret: secret, Logger: quietLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Shutdown)
		servers = append(servers, s)
	}
	return servers
}

func TestRoutedClusterReplicatesBuckets(t *testing.T) {
	// With a secret, as a broker runs them: the routes authenticate.
	secret := NewSecret([]byte("0123456789abcdef0123456789abcdef"))
	servers := startCluster(t, 3, secret)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	var buckets []Buckets
	for _, s := range servers {
		b, err := OpenBuckets(ctx, dialConn(t, ConnConfig{URLs: s.ClientURL(), Secret: secret}), 3, 0)
		if err != nil {
			t.Fatal(err)
		}
		buckets = append(buckets, b)
	}
	st, err := buckets[0].Metadata.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info := st.(*jetstream.KeyValueBucketStatus).StreamInfo()
	if r := info.Config.Replicas; r != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("metadata bucket: %d replicas configured, cluster %+v: want 3 placed", r, info.Cluster)
	}

	val, _ := encodeValue(producerIDsValue{Next: 7})
	if _, err := buckets[0].Metadata.Put(ctx, "probe", val); err != nil {
		t.Fatal(err)
	}
	for i, b := range buckets {
		e, err := b.Metadata.Get(ctx, "probe")
		if err != nil {
			t.Fatalf("server %d: %v", i+1, err)
		}
		var v producerIDsValue
		if err := decodeValue(e.Value(), &v); err != nil || v.Next != 7 {
			t.Fatalf("server %d reads %+v, %v", i+1, v, err)
		}
	}

	// With one server down the other two still hold a quorum. A follower
	// of the bucket's stream goes, so no re-election (seconds) is timed.
	down := -1
	for i := range servers {
		if name := fmt.Sprintf("s%d", i+1); name != info.Cluster.Leader {
			down = i
		}
	}
	servers[down].Shutdown()
	up := (down + 1) % len(servers)
	val, _ = encodeValue(producerIDsValue{Next: 8})
	if _, err := buckets[up].Metadata.Put(ctx, "probe", val); err != nil {
		t.Fatalf("write with server s%d down: %v", down+1, err)
	}
	e, err := buckets[(up+1)%len(servers)].Metadata.Get(ctx, "probe")
	if err != nil {
		t.Fatal(err)
	}
	var v producerIDsValue
	if err := decodeValue(e.Value(), &v); err != nil || v.Next != 8 {
		t.Fatalf("after one server stopped: %+v, %v", v, err)
	}
}

func TestStartServerReportsABusyPortAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = StartServer(ServerConfig{Name: "busy", Dir: t.TempDir(), Listen: ln.Addr().String(), Logger: quietLogger(), ReadyTimeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("%v, want the listen error", err)
	}
}
