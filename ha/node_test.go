package ha

import (
	"testing"
	"time"
)

func startTestNode(t *testing.T, url string, id int32, group, advertise string) *Node {
	t.Helper()
	n, err := Start(Config{
		Conn: ConnConfig{URLs: url}, Replicas: 1,
		NodeID: id, ReplicaGroup: group, Advertise: advertise,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond,
		HeartbeatInterval: 100 * time.Millisecond, MemberDeadline: 3 * time.Second,
		Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func TestNodesLeadTheirGroupsAndHandOverOnClose(t *testing.T) {
	srv := startServer(t)
	a := startTestNode(t, srv.ClientURL(), 1, "g1", "127.0.0.1:9001")
	b := startTestNode(t, srv.ClientURL(), 2, "g2", "127.0.0.1:9002")
	a.SetLogEndOffset(func() int64 { return 4096 })

	waitFor(t, "both nodes to lead their groups", func() bool {
		return a.Elector().State().Role == RoleLeader && b.Elector().State().Role == RoleLeader
	})
	waitFor(t, "node 2 to see both members, node 1 as leader", func() bool {
		m := b.Members()
		return len(m) == 2 && m[0].Role == "leader" && m[0].LogEndOffset == 4096
	})

	// Placement spreads partitions over the live replica groups.
	if err := a.Metadata().CreateTopic(Topic{Name: "t", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node 2 to see the topic", func() bool { _, ok := b.Metadata().Topic("t"); return ok })
	for p, want := range []int32{1, 2} {
		m, epoch, ok := b.PartitionLeader("t", int32(p))
		if !ok || m.NodeID != want || epoch != 1 {
			t.Fatalf("partition %d: leader %+v epoch %d ok %v, want node %d at epoch 1", p, m, epoch, ok, want)
		}
	}
	if _, _, ok := b.PartitionLeader("t", 2); ok {
		t.Fatal("leader for a partition that does not exist")
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node 1 to see node 2 leave and release g2", func() bool {
		_, _, ok := a.PartitionLeader("t", 1)
		return !ok && len(a.Members()) == 1
	})
	var g2 GroupLeader
	for _, gl := range a.Leaders() {
		if gl.Group == "g2" {
			g2 = gl
		}
	}
	if g2.NodeID != -1 || g2.Epoch != 1 {
		t.Fatalf("g2 after release: %+v, want no holder and epoch 1 kept", g2)
	}
}
