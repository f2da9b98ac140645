package controlplane

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/unilog/unilog/internal/poll"
)

// openTestMetadata opens the metadata store over its own connection, as
// one node would, placing every partition on group.
func openTestMetadata(t *testing.T, url, group string) *Metadata {
	t.Helper()
	ctx := context.Background()
	b, err := OpenBuckets(ctx, dial(t, url), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	place := func(n int32) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = group
		}
		return out
	}
	m, err := OpenMetadata(ctx, b.Metadata, place, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func nextEvent(t *testing.T, ch <-chan TopicEvent) TopicEvent {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no metadata event within 10s")
		return TopicEvent{}
	}
}

func TestMetadataChangesReachOtherNodes(t *testing.T) {
	srv := startServer(t)
	n1 := openTestMetadata(t, srv.ClientURL(), "g1")
	n2 := openTestMetadata(t, srv.ClientURL(), "g2")
	events := make(chan TopicEvent, 16)
	n2.OnChange(func(ev TopicEvent) { events <- ev })

	// Dots are legal in Kafka names but not as KV key tokens.
	name := "orders..v1."
	if err := n1.CreateTopic(Topic{Name: name, ID: [16]byte{1}, Partitions: 2, CreatedMs: 7}); err != nil {
		t.Fatal(err)
	}
	if got, ok := n1.Topic(name); !ok || got.Partitions != 2 {
		t.Fatalf("creator reads back %+v %v", got, ok)
	}
	ev := nextEvent(t, events)
	if ev.Deleted || !ev.Remote || ev.Topic.Name != name || ev.Topic.Partitions != 2 || ev.Topic.ID != [16]byte{1} || len(ev.Topic.Groups) != 2 || ev.Topic.Groups[1] != "g1" {
		t.Fatalf("other node saw %+v", ev)
	}
	if got, ok := n2.Topic(name); !ok || got.CreatedMs != 7 {
		t.Fatalf("other node reads %+v %v", got, ok)
	}

	if err := n2.CreateTopic(Topic{Name: name, Partitions: 1}); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second create: %v, want ErrTopicExists", err)
	}

	if err := n2.SetPartitions(name, 3); err != nil {
		t.Fatal(err)
	}
	poll.True(t, "the creator to see 3 partitions", func() bool {
		got, _ := n1.Topic(name)
		return got.Partitions == 3
	})
	if got, _ := n1.Topic(name); len(got.Groups) != 3 || got.Groups[0] != "g1" || got.Groups[2] != "g2" {
		t.Fatalf("groups after growing on node 2: %v, want existing kept and the new one placed by node 2", got.Groups)
	}
	nextEvent(t, events)

	// The broker's per-topic configs and log starts ride on the topic.
	if err := n1.UpdateTopic(name, func(t *Topic) error {
		t.Configs = map[string]string{"retention.ms": "60000"}
		t.LogStarts = map[int32]int64{1: 42}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events); ev.Topic.Configs["retention.ms"] != "60000" || ev.Topic.LogStarts[1] != 42 || ev.Topic.Partitions != 3 {
		t.Fatalf("other node saw %+v, want the update", ev.Topic)
	}
	refused := errors.New("refused")
	if err := n2.UpdateTopic(name, func(t *Topic) error { t.Configs = nil; return refused }); !errors.Is(err, refused) {
		t.Fatalf("failing update: %v", err)
	}
	if got, _ := n2.Topic(name); got.Configs["retention.ms"] != "60000" {
		t.Fatalf("a failed update changed the topic: %+v", got)
	}

	if err := n1.DeleteTopic(name); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events); !ev.Deleted || ev.Topic.Name != name {
		t.Fatalf("other node saw %+v, want the deletion", ev)
	}
	if _, ok := n2.Topic(name); ok {
		t.Fatal("deleted topic still listed on the other node")
	}
	if err := n2.DeleteTopic(name); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("second delete: %v, want ErrUnknownTopic", err)
	}
	if err := n2.SetPartitions(name, 4); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("grow deleted: %v, want ErrUnknownTopic", err)
	}
	if err := n1.CreateTopic(Topic{Name: name, Partitions: 1}); err != nil {
		t.Fatalf("re-create after delete: %v", err)
	}
	poll.True(t, "the re-created topic", func() bool { _, ok := n2.Topic(name); return ok })
	if got := n2.Topics(); len(got) != 1 || got[0].Partitions != 1 {
		t.Fatalf("topics %+v", got)
	}
}

func TestMetadataProducerIDsNeverOverlap(t *testing.T) {
	srv := startServer(t)
	nodes := []*Metadata{openTestMetadata(t, srv.ClientURL(), "g"), openTestMetadata(t, srv.ClientURL(), "g")}
	const perNode, block = 10, 5
	var (
		mu     sync.Mutex
		firsts = map[int64]bool{}
		wg     sync.WaitGroup
	)
	for _, m := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perNode; i++ {
				first, err := m.ReserveProducerIDs(block)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				firsts[first] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i := int64(0); i < int64(len(nodes)*perNode); i++ {
		if !firsts[i*block] {
			t.Fatalf("blocks %v: want every multiple of %d below %d exactly once", firsts, block, len(nodes)*perNode*block)
		}
	}
}

func TestMetadataRejectsMismatchedPlacement(t *testing.T) {
	srv := startServer(t)
	m := openTestMetadata(t, srv.ClientURL(), "g")
	if err := m.CreateTopic(Topic{Name: "t", Partitions: 2, Groups: []string{"g"}}); err == nil {
		t.Fatal("two partitions with one replica group accepted")
	}
	if _, ok := m.Topic("t"); ok {
		t.Fatal("rejected topic stored")
	}
}

// TestMetadataOwnChangesAreLocal: a node's own creates and deletes are
// reported once each, as its own, however the watch's echo of the change
// races the call that made it. A delete the watch delivered first was
// reported as another node's, and the broker logged that another node had
// deleted the topic after each of its own DeleteTopics.
func TestMetadataOwnChangesAreLocal(t *testing.T) {
	srv := startServer(t)
	m := openTestMetadata(t, srv.ClientURL(), "g1")
	var mu sync.Mutex
	var events []TopicEvent
	m.OnChange(func(ev TopicEvent) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	})
	const rounds = 30
	for i := range rounds {
		if err := m.CreateTopic(Topic{Name: "t", ID: [16]byte{byte(i)}, Partitions: 1}); err != nil {
			t.Fatal(err)
		}
		if err := m.DeleteTopic("t"); err != nil {
			t.Fatal(err)
		}
	}
	// The last echo has been applied once a later change's has.
	if err := m.CreateTopic(Topic{Name: "last", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	poll.True(t, "the watch to catch up", func() bool {
		e, err := m.kv.Get(context.Background(), topicKey("last"))
		if err != nil {
			return false
		}
		m.mu.RLock()
		defer m.mu.RUnlock()
		return m.topics["last"].rev >= e.Revision()
	})
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2*rounds+1 {
		t.Errorf("%d events for %d changes", len(events), 2*rounds+1)
	}
	for i, ev := range events {
		if ev.Remote {
			t.Errorf("event %d (%+v) reported as another node's", i, ev)
		}
	}
}

// lostUpdateKV loses its first Update, as a write sent to a stream
// leader that dies before it answers is lost: the caller hears nothing
// until its context ends.
type lostUpdateKV struct {
	jetstream.KeyValue
	lost atomic.Bool
}

func (kv *lostUpdateKV) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	if !kv.lost.Swap(true) {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return kv.KeyValue.Update(ctx, key, value, last)
}

// TestReserveProducerIDsRetriesALostWrite: one lost write costs a try,
// not the whole operation's 10 s; the next try reserves the next range.
func TestReserveProducerIDsRetriesALostWrite(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	b, err := OpenBuckets(ctx, dial(t, srv.ClientURL()), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	kv := &lostUpdateKV{KeyValue: b.Metadata}
	m, err := OpenMetadata(ctx, kv, nil, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if first, err := m.ReserveProducerIDs(10); err != nil || first != 0 {
		t.Fatalf("first reservation: %d, %v", first, err)
	}
	first, err := m.ReserveProducerIDs(10)
	if err != nil || first != 10 {
		t.Fatalf("reservation after a lost write: %d, %v; want 10", first, err)
	}
	if !kv.lost.Load() {
		t.Fatal("no write was lost")
	}
}
