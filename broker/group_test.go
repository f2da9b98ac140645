package broker

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/group"
)

// groupConfig is testConfig with session timeouts short enough that
// evictions happen within a test.
func groupConfig(t testing.TB, dir string) Config {
	cfg := testConfig(t, dir)
	cfg.GroupMinSessionTimeout = 500 * time.Millisecond
	return cfg
}

// member is one franz-go group consumer and the partitions it holds.
type member struct {
	cl *kgo.Client
	mu sync.Mutex
	// owned is the current assignment, from the assign/revoke callbacks.
	owned map[int32]bool
	// got records every consumed record value.
	got []string
}

func (m *member) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []int32
	for p := range m.owned {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

func (m *member) records() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.got...)
}

// joinGroup starts a group consumer of topic that polls until the test
// ends (or stop is called) and records what it is assigned and consumes.
func joinGroup(t testing.TB, addr, grp, topic string, opts ...kgo.Opt) (*member, func()) {
	t.Helper()
	m := &member{owned: make(map[int32]bool)}
	base := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ConsumerGroup(grp),
		kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(2 * time.Second),
		kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.RebalanceTimeout(5 * time.Second),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range a[topic] {
				m.owned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range r[topic] {
				delete(m.owned, p)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range r[topic] {
				delete(m.owned, p)
			}
		}),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			m.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { m.got = append(m.got, string(r.Value)) })
			m.mu.Unlock()
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			cl.Close()
		})
	}
	t.Cleanup(stop)
	return m, stop
}

// eventually polls cond until it holds; the limit only bounds a broken run.
func eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
	}
	t.Fatalf("timed out waiting for %s; last: %s", what, last)
}

// groupStats returns the coordinator's view of one group.
func groupStats(b *Broker, id string) group.Stats {
	for _, s := range b.groups.Load().Groups() {
		if s.Group == id {
			return s
		}
	}
	return group.Stats{Group: id, State: group.Dead}
}

// splitIs reports whether the members hold every partition of the topic
// exactly once, with the given counts (sorted descending).
func splitIs(b *Broker, grp string, partitions int32, members []*member, want []int) (bool, string) {
	seen := make(map[int32]int)
	var counts []int
	var desc []string
	for _, m := range members {
		ps := m.partitions()
		counts = append(counts, len(ps))
		desc = append(desc, fmt.Sprint(ps))
		for _, p := range ps {
			seen[p]++
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(counts)))
	s := groupStats(b, grp)
	state := fmt.Sprintf("%s gen %d members %d: %s", s.State, s.Generation, s.Members, strings.Join(desc, " "))
	if s.State != group.Stable || s.Members != len(members) || fmt.Sprint(counts) != fmt.Sprint(want) {
		return false, state
	}
	for p := int32(0); p < partitions; p++ {
		if seen[p] != 1 {
			return false, state
		}
	}
	return true, state
}

func produceValues(t testing.TB, cl *kgo.Client, topic string, partitions int32, prefix string, n int) []string {
	t.Helper()
	var vals []string
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("%s-%d", prefix, i)
		vals = append(vals, v)
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Value: []byte(v)})
	}
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return vals
}

func TestGroupSplitsPartitions(t *testing.T) {
	b := startBroker(t, groupConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "six", 6)
	createTopic(t, cl, "three", 3)

	var ms []*member
	for i := 0; i < 3; i++ {
		m, _ := joinGroup(t, b.Addr(), "g6", "six")
		ms = append(ms, m)
	}
	eventually(t, "3 members on 6 partitions to split 2/2/2", func() (bool, string) {
		return splitIs(b, "g6", 6, ms, []int{2, 2, 2})
	})

	// More members than partitions: the extras stay idle, as each joins.
	var idle []*member
	for range 4 {
		m, _ := joinGroup(t, b.Addr(), "g3", "three")
		idle = append(idle, m)
	}
	want := []int{1, 1, 1, 0}
	eventually(t, "4 members on 3 partitions, one idle", func() (bool, string) { return splitIs(b, "g3", 3, idle, want) })
	for n := 5; n <= 7; n++ {
		m, _ := joinGroup(t, b.Addr(), "g3", "three")
		idle = append(idle, m)
		want = append(want, 0)
		eventually(t, fmt.Sprintf("%d members on 3 partitions", n), func() (bool, string) { return splitIs(b, "g3", 3, idle, want) })
	}
}
