package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/internal/logcheck"
	"github.com/unilog/unilog/internal/poll"
)

// pinnedWriter produces one record at a time to one node only: its client
// dials that node whatever address Metadata gives, tries each record once
// and is not idempotent, so an acknowledgement proves that this node
// accepted the record between the call and the answer.
type pinnedWriter struct {
	node   int
	client int
	cl     *kgo.Client

	mu   sync.Mutex
	acks []pinnedAck
	errs []time.Time
}

type pinnedAck struct {
	call, ret time.Time
	offset    int64
}

func newPinnedWriter(t *testing.T, node, client int, addr string) *pinnedWriter {
	t.Helper()
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.Dialer(dial), kgo.DisableIdempotentWrite(),
		kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(2*time.Second), kgo.MetadataMinAge(50*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &pinnedWriter{node: node, client: client, cl: cl}
}

func (w *pinnedWriter) run(ctx context.Context, h *logcheck.History, topic string, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		v := fmt.Sprintf("n%d-%d", w.node, seq)
		op := h.Begin(w.client, logcheck.Input{Kind: logcheck.Append, Key: logKey(topic, 0), Value: v})
		call := time.Now()
		pctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := w.cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Value: []byte(v)}).First()
		cancel()
		ret := time.Now()
		w.mu.Lock()
		if err != nil {
			op.End(logcheck.Output{Unknown: true, End: -1})
			w.errs = append(w.errs, call)
		} else {
			op.End(logcheck.Output{Offset: r.Offset, End: -1})
			w.acks = append(w.acks, pinnedAck{call: call, ret: ret, offset: r.Offset})
		}
		w.mu.Unlock()
	}
}

func (w *pinnedWriter) snapshot() ([]pinnedAck, []time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]pinnedAck(nil), w.acks...), append([]time.Time(nil), w.errs...)
}

// TestLeaderCutOffFromNATSStopsWritesFirst cuts the leader off the
// control plane while its clients and followers still reach it. Its lease
// lapses: it must stop accepting writes (RenewDeadline after its last
// renewal) before a follower can take the lease (LeaseDuration after it
// last saw that renewal; see the controlplane package doc). A writer pinned to each
// node shows it: the old leader's last acknowledgement arrives before the
// new leader's first accepted write was even sent. Nothing the old leader
// acknowledged is lost, and once reconnected it follows.
func TestLeaderCutOffFromNATSStopsWritesFirst(t *testing.T) {
	g := startBrokerGroup(t, 3)
	const topic = "cut-off"
	g.createTopic(topic, 1)
	old, st := g.leader()

	h := logcheck.NewHistory()
	ctx, stopWriters := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	writers := make([]*pinnedWriter, len(g.nodes))
	for i, nd := range g.nodes {
		writers[i] = newPinnedWriter(t, nd.id, 100+i, nd.kafka)
		wg.Go(func() { writers[i].run(ctx, h, topic, 10*time.Millisecond) })
	}
	poll.True(t, "writes accepted by the leader", func() bool {
		acks, _ := writers[old].snapshot()
		return len(acks) >= 20
	})

	cut := time.Now()
	g.nodes[old].proxy.Cut()
	next := g.waitLeader(st.Epoch+1, old)
	poll.True(t, "a write accepted by the new leader", func() bool {
		acks, _ := writers[next].snapshot()
		return len(acks) > 0 && acks[len(acks)-1].call.After(cut)
	})
	// The old leader keeps being asked, and keeps refusing.
	refusedAfter := time.Now()
	poll.True(t, "the old leader to refuse writes", func() bool {
		_, errs := writers[old].snapshot()
		return len(errs) >= 5 && errs[len(errs)-5].After(refusedAfter)
	})
	stopWriters()
	wg.Wait()

	oldAcks, oldErrs := writers[old].snapshot()
	newAcks, _ := writers[next].snapshot()
	lastOld := oldAcks[len(oldAcks)-1]
	var firstNew pinnedAck
	for _, a := range newAcks {
		if a.call.After(cut) {
			firstNew = a
			break
		}
	}
	ms := func(at time.Time) string { return fmt.Sprintf("%+dms", at.Sub(cut).Milliseconds()) }
	t.Logf("cut node %d (leader, epoch %d) off NATS at %s", g.nodes[old].id, st.Epoch, cut.Format(time.RFC3339Nano))
	t.Logf("old leader node %d: last write accepted in [%s, %s] (offset %d); %d writes refused after it",
		g.nodes[old].id, ms(lastOld.call), ms(lastOld.ret), lastOld.offset, len(oldErrs))
	t.Logf("new leader node %d: first write accepted in [%s, %s] (offset %d); gap %dms",
		g.nodes[next].id, ms(firstNew.call), ms(firstNew.ret), firstNew.offset, firstNew.call.Sub(lastOld.ret).Milliseconds())
	if !lastOld.ret.Before(firstNew.call) {
		t.Errorf("the old leader's last accepted write was answered at %s, after the new leader's first accepted write was sent at %s",
			ms(lastOld.ret), ms(firstNew.call))
	}
	for i, w := range writers {
		acks, _ := w.snapshot()
		if i != old && len(acks) > 0 && acks[0].call.Before(cut) {
			t.Errorf("follower node %d accepted a write sent at %s", g.nodes[i].id, ms(acks[0].call))
		}
	}
	if lastOld.offset >= firstNew.offset {
		t.Errorf("old leader acknowledged offset %d, new leader's first is %d", lastOld.offset, firstNew.offset)
	}

	g.nodes[old].proxy.Heal()
	poll.True(t, "the old leader to follow", func() bool {
		s, err := g.status(old)
		return err == nil && s.Role == "follower"
	})
	g.waitInSync(next)
	end := g.waitSameEnd()
	finalRead(t, h, 200, g.seeds(), topic, 1)
	checkHistory(t, h, "cut-off")
	g.compareLogs(end)
}
