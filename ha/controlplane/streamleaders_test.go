package controlplane

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/unilog/unilog/internal/poll"
)

// TestGroupLeaderPullsStreamLeaders: the buckets' streams are led from
// s2 when node 1, embedding s1, takes its group's lease; it moves those
// of the members and leases buckets to s1, so the crash of another node's
// server stalls neither.
func TestGroupLeaderPullsStreamLeaders(t *testing.T) {
	servers := startCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc := dialConn(t, ConnConfig{URLs: servers[1].ClientURL()})
	b, err := OpenBuckets(ctx, nc, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	kvs := []jetstream.KeyValue{b.Members, b.Leases}
	leaders := func() []string {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		var out []string
		for _, kv := range kvs {
			st, err := kv.Status(ctx)
			if err != nil {
				return nil
			}
			c := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Cluster
			out = append(out, c.Leader)
		}
		return out
	}
	all := func(name string) bool {
		l := leaders()
		for _, s := range l {
			if s != name {
				return false
			}
		}
		return len(l) == len(kvs)
	}
	// A write first: a leader hands over only to a peer it just heard
	// from, and followers of an idle stream answer nothing.
	poll.True(t, "both streams led from s2", func() bool {
		for _, kv := range kvs {
			if _, err := kv.Put(ctx, "probe.test", []byte("x")); err != nil {
				return false
			}
			if _, err := moveStreamLeader(ctx, nc, kv, "s2"); err != nil && !errors.Is(err, errStreamLeaderMoving) {
				return false
			}
		}
		return all("s2")
	})

	// Node 1 starts first so that it leads; the others follow.
	for i, s := range servers {
		n, err := Start(Config{
			Conn: ConnConfig{URLs: s.ClientURL()}, Replicas: 3,
			NodeID: int32(i + 1), ReplicaGroup: "g", Advertise: fmt.Sprintf("127.0.0.1:%d", 9001+i),
			NATSServer: fmt.Sprintf("s%d", i+1), Logger: quietLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Close)
		if i == 0 {
			poll.True(t, "node 1 to lead", func() bool { return n.Elector().State().Role == RoleLeader })
		}
	}
	poll.True(t, "both streams led from s1, node 1's server", func() bool { return all("s1") })
}
