package controlplane

import (
	"testing"
	"time"

	"github.com/unilog/unilog/internal/clock/clocktest"
	"github.com/unilog/unilog/internal/poll"
)

func startTestNode(t *testing.T, url string, id int32, group, advertise string) *Node {
	t.Helper()
	return startTestNodeConfig(t, testNodeConfig(url, id, group, advertise))
}

func testNodeConfig(url string, id int32, group, advertise string) Config {
	return Config{
		Conn: ConnConfig{URLs: url}, Replicas: 1,
		NodeID: id, ReplicaGroup: group, Advertise: advertise,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond,
		HeartbeatInterval: 100 * time.Millisecond, MemberDeadline: 3 * time.Second,
		Logger: quietLogger(),
	}
}

func startTestNodeConfig(t *testing.T, cfg Config) *Node {
	t.Helper()
	n, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

func TestNodesLeadTheirGroupsAndHandOverOnClose(t *testing.T) {
	srv := startServer(t)
	a := startTestNode(t, srv.ClientURL(), 1, "g1", "127.0.0.1:9001")
	b := startTestNode(t, srv.ClientURL(), 2, "g2", "127.0.0.1:9002")
	a.SetLogEndOffset(func() int64 { return 4096 })

	poll.True(t, "both nodes to lead their groups", func() bool {
		return a.Elector().State().Role == RoleLeader && b.Elector().State().Role == RoleLeader
	})
	poll.True(t, "node 2 to see both members, node 1 as leader", func() bool {
		m := b.Members()
		return len(m) == 2 && m[0].Role == "leader" && m[0].LogEndOffset == 4096
	})

	// Placement spreads partitions over the live replica groups.
	if err := a.Metadata().CreateTopic(Topic{Name: "t", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	poll.True(t, "node 2 to see the topic", func() bool { _, ok := b.Metadata().Topic("t"); return ok })
	for p, want := range []int32{1, 2} {
		m, epoch, ok := b.PartitionLeader("t", int32(p))
		if !ok || m.NodeID != want || epoch != 1 {
			t.Fatalf("partition %d: leader %+v epoch %d ok %v, want node %d at epoch 1", p, m, epoch, ok, want)
		}
	}
	if _, _, ok := b.PartitionLeader("t", 2); ok {
		t.Fatal("leader for a partition that does not exist")
	}

	b.Close()
	// The member record and the lease are two keys, watched apart: node 2
	// may be gone from the members before its release of g2 arrives.
	var g2 GroupLeader
	poll.True(t, "node 1 to see node 2 leave and release g2", func() bool {
		for _, gl := range a.Leaders() {
			if gl.Group == "g2" {
				g2 = gl
			}
		}
		_, _, ok := a.PartitionLeader("t", 1)
		return !ok && len(a.Members()) == 1 && g2.NodeID == -1
	})
	if g2.Epoch != 1 {
		t.Fatalf("g2 after release: %+v, want no holder and epoch 1 kept", g2)
	}
}

// TestNodeCutOffFromNATSStopsLeading: the leader's NATS goes away while
// its clients could still reach it; once the renew deadline passes it no
// longer names itself leader of its partitions, which is what refuses
// writes in the broker.
func TestNodeCutOffFromNATSStopsLeading(t *testing.T) {
	srv := startServer(t)
	clock := clocktest.New()
	n, err := Start(Config{
		Conn: ConnConfig{URLs: srv.ClientURL()}, Replicas: 1,
		NodeID: 1, ReplicaGroup: "g1", Advertise: "127.0.0.1:9001",
		RetryPeriod: 50 * time.Millisecond, HeartbeatInterval: 50 * time.Millisecond,
		Clock: clock, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	poll.True(t, "the node to lead", func() bool { return n.Elector().State().Role == RoleLeader })
	if err := n.Metadata().CreateTopic(Topic{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if m, epoch, ok := n.PartitionLeader("t", 0); !ok || m.NodeID != 1 || epoch != 1 {
		t.Fatalf("leading: %+v %d %v", m, epoch, ok)
	}

	srv.Shutdown()
	clock.Advance(DefaultRenewDeadline)
	if s := n.Elector().State(); s.Role != RoleFollower {
		t.Fatalf("cut off past the renew deadline: %+v", s)
	}
	if m, _, ok := n.PartitionLeader("t", 0); ok {
		t.Fatalf("cut off, still names %+v leader", m)
	}
}

// TestPartitionLeaderOfOwnGroupOutrunsAStalledWatch: a follower whose
// leases watch went quiet (its consumer on a NATS server that died) still
// names the leader its elector read, not the deposed one.
func TestPartitionLeaderOfOwnGroupOutrunsAStalledWatch(t *testing.T) {
	srv := startServer(t)
	a := startTestNode(t, srv.ClientURL(), 1, "g", "127.0.0.1:9001")
	poll.True(t, "node 1 to lead", func() bool { return a.Elector().State().Role == RoleLeader })
	b := startTestNode(t, srv.ClientURL(), 2, "g", "127.0.0.1:9002")
	// Node 3 never contends: it must name another node.
	cfg := testNodeConfig(srv.ClientURL(), 3, "g", "127.0.0.1:9003")
	cfg.Eligible = func() bool { return false }
	c := startTestNodeConfig(t, cfg)
	if err := a.Metadata().CreateTopic(Topic{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	poll.True(t, "node 3 to see node 1 lead the topic", func() bool {
		m, _, ok := c.PartitionLeader("t", 0)
		return ok && m.NodeID == 1
	})

	c.leaders.Stop()
	a.Close()
	poll.True(t, "node 2 to lead", func() bool { return b.Elector().State().Role == RoleLeader })
	poll.True(t, "node 3 to name node 2 at epoch 2 with its watch stopped at epoch 1", func() bool {
		m, epoch, ok := c.PartitionLeader("t", 0)
		return ok && m.NodeID == 2 && epoch == 2
	})
}
