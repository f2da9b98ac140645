package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGracefulStopHandsLeaseOver stops the leader of a replica group with
// SIGTERM right after acks=1 produces under async replication, where its
// followers may not yet hold its last records. The leader hands its lease
// over (a controlled shutdown): it stops taking writes, waits for an
// in-sync follower to reach its log end, and resigns. That follower leads
// the next epoch with every byte the old leader stored and every
// acknowledged record. The lease is longer than the test waits, so only a
// hand-over, not a lapse, can make the new leader.
func TestGracefulStopHandsLeaseOver(t *testing.T) {
	g := startBrokerGroup(t, 3, "--replication", "async", "--min-insync", "1", "--lease-duration", "5m")
	const topic = "handover"
	g.createTopic(topic, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.seeds()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const n = 2000
	var records []*kgo.Record
	for i := range n {
		records = append(records, kgo.StringRecord(fmt.Sprintf("r%05d", i)))
	}
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	old, st := g.leader()
	if old < 0 {
		t.Fatal("no leader")
	}
	oldEnd := st.LogEndOffset
	g.stop(old)

	next := g.waitLeader(st.Epoch+1, old)
	nst, err := g.status(next)
	if err != nil {
		t.Fatal(err)
	}
	if nst.Epoch != st.Epoch+1 || nst.LogEndOffset < oldEnd {
		t.Fatalf("node %d leads epoch %d with its log ending at %d; want epoch %d and the old leader's end %d",
			g.nodes[next].id, nst.Epoch, nst.LogEndOffset, st.Epoch+1, oldEnd)
	}
	if log, _ := os.ReadFile(g.logPath(g.nodes[old])); !strings.Contains(string(log), "handing the lease over") {
		t.Fatalf("the old leader did not hand its lease over:\n%s", g.tail(g.nodes[old], 30))
	}

	// The new leader takes writes, and holds every record acknowledged.
	if err := cl.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatalf("produce to the new leader: %v", err)
	}
	values := consumeRange(t, ctx, g.seeds(), topic, 0, n+1)
	for i, v := range values[:n] {
		if want := fmt.Sprintf("r%05d", i); v != want {
			t.Fatalf("offset %d: %q, want %q", i, v, want)
		}
	}
	if values[n] != "after" {
		t.Fatalf("offset %d: %q, want the record produced after the hand-over", n, values[n])
	}
	t.Logf("node %d handed epoch %d over to node %d at log end %d", g.nodes[old].id, st.Epoch, g.nodes[next].id, oldEnd)
}
