package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/group"
	"github.com/unilog/unilog/internal/poll"
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

// eventually polls cond until it holds; state says what was seen last.
func eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	poll.Until(t, what, func() error {
		if ok, state := cond(); !ok {
			return fmt.Errorf("last seen: %s", state)
		}
		return nil
	})
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

// killableDialer lets a test cut a client off the network without the
// client knowing: it stands for a consumer process that died without
// leaving its group.
type killableDialer struct {
	mu    sync.Mutex
	conns []net.Conn
	dead  bool
}

func (d *killableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return nil, errors.New("killed")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *killableDialer) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead = true
	for _, c := range d.conns {
		c.Close()
	}
}

func TestGroupEvictsDeadMember(t *testing.T) {
	b := startBroker(t, groupConfig(t, t.TempDir()))
	createTopic(t, newClient(t, b.Addr()), "ev", 4)
	survivor, _ := joinGroup(t, b.Addr(), "gev", "ev")
	var d killableDialer
	victim, _ := joinGroup(t, b.Addr(), "gev", "ev", kgo.Dialer(d.dial))
	eventually(t, "2/2 split", func() (bool, string) { return splitIs(b, "gev", 4, []*member{survivor, victim}, []int{2, 2}) })

	d.kill()
	// No LeaveGroup reaches the broker: only the 2 s session timeout
	// removes the member, and its partitions move to the survivor.
	eventually(t, "the survivor to own all 4 partitions", func() (bool, string) {
		return splitIs(b, "gev", 4, []*member{survivor}, []int{4})
	})
}

func TestGroupStaticMemberRestart(t *testing.T) {
	b := startBroker(t, groupConfig(t, t.TempDir()))
	createTopic(t, newClient(t, b.Addr()), "st", 4)
	// The eager range assignor settles in one rebalance; a cooperative one
	// may still owe a rejoin when the 2/2 split shows, and franz-go then
	// leaves even as a static member.
	eager := kgo.Balancers(kgo.RangeBalancer())
	s1, _ := joinGroup(t, b.Addr(), "gst", "st", kgo.InstanceID("s1"), eager)
	s2, stop2 := joinGroup(t, b.Addr(), "gst", "st", kgo.InstanceID("s2"), kgo.SessionTimeout(10*time.Second), eager)
	eventually(t, "2/2 split", func() (bool, string) { return splitIs(b, "gst", 4, []*member{s1, s2}, []int{2, 2}) })
	before := groupStats(b, "gst")
	held := fmt.Sprint(s2.partitions())

	// A static member closing does not leave; its restart within the
	// session timeout takes its place with no rebalance.
	stop2()
	if s := groupStats(b, "gst"); s.Members != 2 {
		t.Fatalf("after the static member closed: %+v", s)
	}
	s2b, _ := joinGroup(t, b.Addr(), "gst", "st", kgo.InstanceID("s2"), kgo.SessionTimeout(10*time.Second), eager)
	eventually(t, "the restarted member to hold its old partitions", func() (bool, string) {
		return fmt.Sprint(s2b.partitions()) == held, fmt.Sprint(s2b.partitions())
	})
	after := groupStats(b, "gst")
	if after.Generation != before.Generation || after.Rebalances != before.Rebalances || after.State != group.Stable {
		t.Fatalf("static restart rebalanced: before %+v, after %+v", before, after)
	}
	if ps := s1.partitions(); len(ps) != 2 {
		t.Fatalf("s1 holds %v", ps)
	}
}

func TestGroupsConsumeIndependently(t *testing.T) {
	b := startBroker(t, groupConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "both", 3)
	want := produceValues(t, cl, "both", 3, "v", 90)
	sort.Strings(want)
	var groups [][]*member
	for _, g := range []string{"ga", "gb"} {
		m1, _ := joinGroup(t, b.Addr(), g, "both")
		m2, _ := joinGroup(t, b.Addr(), g, "both")
		groups = append(groups, []*member{m1, m2})
	}
	for i, ms := range groups {
		eventually(t, fmt.Sprintf("group %d to consume every record", i), func() (bool, string) {
			var got []string
			for _, m := range ms {
				got = append(got, m.records()...)
			}
			sort.Strings(got)
			return strings.Join(got, ",") == strings.Join(want, ","), fmt.Sprintf("%d of %d", len(got), len(want))
		})
	}
}

// consumeCommitted joins grp with auto-commit off, consumes until it has
// n records, commits exactly those and leaves. It returns the records.
func consumeCommitted(t *testing.T, addr, grp, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.SessionTimeout(2*time.Second), kgo.HeartbeatInterval(100*time.Millisecond))
	ctx := testCtx(t)
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollRecords(ctx, n-len(got))
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", len(got), n)
		}
		got = append(got, fs.Records()...)
	}
	if err := cl.CommitRecords(ctx, got...); err != nil {
		t.Fatalf("commit: %v", err)
	}
	cl.Close()
	return got
}

// TestGroupCommitSurvivesRestart commits, restarts the broker and
// consumes again: the group continues at the commit, with no gap and
// nothing before it re-delivered; a reset to the earliest offsets then
// re-reads everything.
func TestGroupCommitSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := groupConfig(t, dir)
	b, err := Open(cfg, testStore())
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "rs", 1)
	all := produceValues(t, cl, "rs", 1, "r", 100)
	first := consumeCommitted(t, b.Addr(), "grs", "rs", 40)
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	verifyDir(t, dir)

	b = startBroker(t, cfg)
	adm := kadm.NewClient(newClient(t, b.Addr()))
	offs, err := adm.FetchOffsets(testCtx(t), "grs")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("rs", 0); o.At != 40 {
		t.Fatalf("committed offset after restart: %+v", o)
	}
	rest := consumeCommitted(t, b.Addr(), "grs", "rs", 60)
	var got []string
	for _, r := range append(first, rest...) {
		got = append(got, string(r.Value))
	}
	if strings.Join(got, ",") != strings.Join(all, ",") {
		t.Fatalf("consumed across the restart:\n%v\nwant\n%v", got, all)
	}

	// Reset to the earliest offset (the group is empty) and re-read.
	reset := kadm.Offsets{}
	reset.Add(kadm.Offset{Topic: "rs", Partition: 0, At: 0, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(testCtx(t), "grs", reset); err != nil {
		t.Fatal(err)
	}
	m := scrape(t, b)
	for _, want := range []string{`unilog_group_lag_records{group="grs"} 100`, `unilog_group_members{group="grs"} 0`, `unilog_group_generation{group="grs"} 2`, `unilog_group_rebalances_total{group="grs"} 2`} {
		if !strings.Contains(m, want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, m)
		}
	}
	again := consumeCommitted(t, b.Addr(), "grs", "rs", 100)
	if string(again[0].Value) != all[0] || string(again[99].Value) != all[99] {
		t.Fatalf("after reset: first %s last %s", again[0].Value, again[99].Value)
	}
}

// TestGroupRebalanceUnderLoad produces continuously while members join and
// leave; in the end every acknowledged record was consumed by some member
// at least once: rebalances may re-deliver but never skip.
func TestGroupRebalanceUnderLoad(t *testing.T) {
	b := startBroker(t, groupConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "load", 4)

	var (
		mu       sync.Mutex
		produced []string
	)
	stopProducing := make(chan struct{})
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		for i := 0; ; i++ {
			select {
			case <-stopProducing:
				return
			default:
			}
			v := fmt.Sprintf("L-%d", i)
			if err := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "load", Partition: int32(i % 4), Value: []byte(v)}).FirstErr(); err != nil {
				t.Errorf("produce %s: %v", v, err)
				return
			}
			mu.Lock()
			produced = append(produced, v)
			mu.Unlock()
		}
	}()
	producedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(produced)
	}
	var members []*member
	var stops []func()
	add := func() {
		m, stop := joinGroup(t, b.Addr(), "gload", "load")
		members = append(members, m)
		stops = append(stops, stop)
	}
	// Membership changes paced by production: join, join, join, leave,
	// join, leave, leave.
	steps := []func(){add, add, add, func() { stops[0]() }, add, func() { stops[1]() }, func() { stops[3]() }}
	live := []int{1, 2, 3, 2, 3, 2, 1}
	for i, step := range steps {
		step()
		target := producedCount() + 200
		eventually(t, fmt.Sprintf("step %d: group stable with %d members and 200 more records produced", i, live[i]), func() (bool, string) {
			s := groupStats(b, "gload")
			return s.State == group.Stable && s.Members == live[i] && producedCount() >= target, fmt.Sprintf("%+v, %d produced", s, producedCount())
		})
	}
	close(stopProducing)
	<-producerDone

	mu.Lock()
	want := append([]string(nil), produced...)
	mu.Unlock()
	eventually(t, "every produced record consumed", func() (bool, string) {
		seen := make(map[string]bool)
		for _, m := range members {
			for _, v := range m.records() {
				seen[v] = true
			}
		}
		missing := 0
		for _, v := range want {
			if !seen[v] {
				missing++
			}
		}
		return missing == 0, fmt.Sprintf("%d of %d missing", missing, len(want))
	})
	t.Logf("%d records produced during %d membership changes; group at generation %d", len(want), len(steps), groupStats(b, "gload").Generation)
}

// scrape returns the broker's /metrics page.
func scrape(t testing.TB, b *Broker) string {
	t.Helper()
	resp, err := http.Get("http://" + b.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s %v", resp.Status, err)
	}
	return string(body)
}

func rawJoin(memberID string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(3)
	req.Group = "gpark"
	req.MemberID = memberID
	req.ProtocolType = "consumer"
	// Long timeouts: nothing in the test may end by expiry.
	req.SessionTimeoutMillis = 120_000
	req.RebalanceTimeoutMillis = 120_000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	req.Protocols = append(req.Protocols, p)
	return req
}

// TestGroupParkedJoinEndsWithConnection: a JoinGroup parked for a
// rebalance (here one that cannot finish: the first member never rejoins)
// is dropped when its connection closes, and a parked join does not hold up
// the broker's Close.
func TestGroupParkedJoinEndsWithConnection(t *testing.T) {
	b, err := Open(groupConfig(t, t.TempDir()), testStore())
	if err != nil {
		t.Fatal(err)
	}
	first := dialRaw(t, b.Addr())
	resp, ok := first.roundTrip(rawJoin(""))
	if jr, _ := resp.(*kmsg.JoinGroupResponse); !ok || jr.ErrorCode != 0 || jr.Generation != 1 {
		t.Fatalf("first join: %+v", resp)
	}
	parked := dialRaw(t, b.Addr())
	if err := parked.write(parked.frame(rawJoin(""))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second member to wait in the rebalance", func() (bool, string) {
		s := groupStats(b, "gpark")
		return s.State == group.PreparingRebalance && s.Members == 2, fmt.Sprintf("%+v", s)
	})
	parked.nc.Close()
	eventually(t, "the closed connection's member to be dropped", func() (bool, string) {
		s := groupStats(b, "gpark")
		return s.Members == 1, fmt.Sprintf("%+v", s)
	})

	// Park another and close the broker under it: the join is answered
	// and Close returns without waiting for the rebalance timeout.
	again := dialRaw(t, b.Addr())
	if err := again.write(again.frame(rawJoin(""))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the third join to park", func() (bool, string) {
		s := groupStats(b, "gpark")
		return s.Members == 2, fmt.Sprintf("%+v", s)
	})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	jr := kmsg.NewPtrJoinGroupResponse()
	jr.SetVersion(3)
	if again.readResponse(jr) && jr.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("join parked at Close answered %v", kerr.ErrorForCode(jr.ErrorCode))
	}
}

// TestInternalTopicReserved: names starting with "__" are the broker's;
// the offsets topic is listed among all topics marked internal, as Kafka
// lists it (a regex consumer tells it from user topics by the flag), and
// cannot be produced to, deleted or grown.
func TestInternalTopicReserved(t *testing.T) {
	b := startBroker(t, groupConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)

	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "__mine"); !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("create __mine: %v", err)
	}
	createTopic(t, cl, "user", 1)
	all, err := adm.ListTopicsWithInternal(ctx)
	if err != nil || !all.Has(offsetsTopic) || !all[offsetsTopic].IsInternal || all["user"].IsInternal {
		t.Fatalf("Metadata for all topics: %s is %+v, user %+v, want only the first listed as internal: %v", offsetsTopic, all[offsetsTopic], all["user"], err)
	}
	if user, err := adm.ListTopics(ctx); err != nil || len(user) != 1 || !user.Has("user") {
		t.Fatalf("topics but the internal ones: %v %v", user.Names(), err)
	}
	named, err := adm.ListTopicsWithInternal(ctx, offsetsTopic)
	if err != nil || !named.Has(offsetsTopic) || !named[offsetsTopic].IsInternal || len(named[offsetsTopic].Partitions) != group.DefaultPartitions {
		t.Fatalf("Metadata for %s by name: %+v %v", offsetsTopic, named[offsetsTopic], err)
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: offsetsTopic, Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("produce to %s: %v", offsetsTopic, err)
	}
	if del, err := adm.DeleteTopic(ctx, offsetsTopic); !errors.Is(err, kerr.InvalidTopicException) && !errors.Is(del.Err, kerr.InvalidTopicException) {
		t.Fatalf("delete %s: %v %v", offsetsTopic, err, del.Err)
	}
	if grow, err := adm.CreatePartitions(ctx, 4, offsetsTopic); err != nil || !errors.Is(grow[offsetsTopic].Err, kerr.InvalidTopicException) {
		t.Fatalf("grow %s: %v %+v", offsetsTopic, err, grow)
	}
	if after, err := adm.ListTopicsWithInternal(ctx, offsetsTopic); err != nil || len(after[offsetsTopic].Partitions) != group.DefaultPartitions {
		t.Fatalf("%s after the refusals: %+v %v", offsetsTopic, after[offsetsTopic], err)
	}

	// A regex consumer matching every name consumes the user topic only.
	produceSync(t, cl, "user", 0, "v")
	rc := newClient(t, b.Addr(), kgo.ConsumeRegex(), kgo.ConsumeTopics(".*"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < 1; {
		fs := rc.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("regex consumer: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Topic != "user" {
				t.Fatalf("regex consumer read %s/%d@%d", r.Topic, r.Partition, r.Offset)
			}
			got++
		})
	}
	if topics := rc.GetConsumeTopics(); !slices.Equal(topics, []string{"user"}) {
		t.Fatalf("regex consumer consumes %v, want [user]", topics)
	}
}
