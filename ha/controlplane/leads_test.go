package controlplane

import (
	"testing"
	"time"

	"github.com/unilog/unilog/internal/clock/clocktest"
	"github.com/unilog/unilog/internal/poll"
)

// TestLeadsTopicAgreesWithPartitionLeader: for every partition of a topic
// spread over two replica groups, an unknown topic, and once the leader
// is cut off from NATS, LeadsTopic names this node where PartitionLeader
// does.
func TestLeadsTopicAgreesWithPartitionLeader(t *testing.T) {
	srv := startServer(t)
	clock := clocktest.New()
	cfg := testNodeConfig(srv.ClientURL(), 1, "g1", "127.0.0.1:9001")
	cfg.Clock, cfg.RetryPeriod, cfg.HeartbeatInterval = clock, 50*time.Millisecond, 50*time.Millisecond
	cfg.LeaseDuration, cfg.RenewDeadline = 0, 0
	a := startTestNodeConfig(t, cfg)
	b := startTestNode(t, srv.ClientURL(), 2, "g2", "127.0.0.1:9002")
	poll.True(t, "both nodes to lead their groups", func() bool {
		return a.Elector().State().Role == RoleLeader && b.Elector().State().Role == RoleLeader
	})
	poll.True(t, "node 1 to see node 2", func() bool { return len(a.Members()) == 2 })
	const partitions = 6
	if err := a.Metadata().CreateTopic(Topic{Name: "t", Partitions: partitions}); err != nil {
		t.Fatal(err)
	}
	agree := func(when string, wantAny bool) {
		t.Helper()
		leads, epoch := a.LeadsTopic("t")
		some := false
		for p := int32(-1); p <= partitions; p++ {
			m, e, ok := a.PartitionLeader("t", p)
			want := ok && m.NodeID == 1
			if got := leads(p); got != want {
				t.Errorf("%s: partition %d: LeadsTopic %v, PartitionLeader names %+v (ok %v)", when, p, got, m, ok)
			}
			if want && e != epoch {
				t.Errorf("%s: partition %d: LeadsTopic's epoch %d, PartitionLeader's %d", when, p, epoch, e)
			}
			some = some || want
		}
		if some != wantAny {
			t.Errorf("%s: node 1 leads some partition: %v, want %v", when, some, wantAny)
		}
	}
	agree("both leading", true)
	if leads, _ := a.LeadsTopic("unknown"); leads(0) {
		t.Error("leads a partition of an unknown topic")
	}

	srv.Shutdown()
	clock.Advance(DefaultRenewDeadline)
	if s := a.Elector().State(); s.Role != RoleFollower {
		t.Fatalf("cut off past the renew deadline: %+v", s)
	}
	agree("cut off", false)
}
