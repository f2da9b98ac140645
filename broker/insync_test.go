package broker

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/ha/replication"
	"github.com/unilog/unilog/internal/poll"
)

// leaderReplication is a real replication.Leader as the broker's
// Replication, its errors given the broker's meaning as cmd/unilog's
// replicator gives them. The Leader reads the broker's log, so it is set
// once the broker started.
type leaderReplication struct {
	ld atomic.Pointer[replication.Leader]
}

func (r *leaderReplication) HighWatermark() int64     { return r.ld.Load().HighWatermark() }
func (r *leaderReplication) Changed() <-chan struct{} { return r.ld.Load().Changed() }
func (r *leaderReplication) CheckInSync() error       { return brokerError(r.ld.Load().CheckInSync()) }

func (r *leaderReplication) WaitReplicated(ctx context.Context, end int64) error {
	return brokerError(r.ld.Load().WaitReplicated(ctx, end))
}

func (r *leaderReplication) Followers() []ReplicaStatus {
	var out []ReplicaStatus
	for _, f := range r.ld.Load().Followers() {
		out = append(out, ReplicaStatus(f))
	}
	return out
}

func brokerError(err error) error {
	switch {
	case errors.Is(err, replication.ErrNotEnoughReplicas):
		return errors.Join(ErrNotEnoughReplicas, err)
	case errors.Is(err, replication.ErrFenced):
		return errors.Join(ErrNotLeader, err)
	}
	return err
}

// replicaPair is a leader broker with sync replication and one follower
// broker replicating it through an ackGate, in one process.
type replicaPair struct {
	t        *testing.T
	leader   *Broker
	ld       *replication.Leader
	follower *Broker
	fl       *replication.Follower
	gate     *ackGate
	stop     func() // ends the follower's session
}

// startReplicaPair starts the pair with topic created and the follower in
// sync; minInSync is the leader's LeaderConfig.MinInSync.
func startReplicaPair(t *testing.T, topic string, minInSync int) *replicaPair {
	leaderDir, followerDir := t.TempDir(), t.TempDir()
	repl := &leaderReplication{}
	cfg := testConfig(t, leaderDir)
	so := testStore()
	so.CommitLog.FileSize = replicaFileSize
	cfg.Replication, cfg.SyncReplication = repl, true
	p := &replicaPair{t: t, leader: startBrokerWith(t, cfg, so)}
	llog := storeOf(p.leader)
	epochs, err := llog.Epochs()
	if err != nil {
		t.Fatal(err)
	}
	if err := epochs.Assign(1, llog.WriteOffset()); err != nil {
		t.Fatal(err)
	}
	p.ld = replication.NewLeader(replication.LeaderConfig{
		Log: llog, Epochs: epochs, Epoch: 1, FileSize: replicaFileSize, Offsets: llog.OffsetsAt,
		MinInSync: minInSync, Heartbeat: 20 * time.Millisecond, Logger: testLogger(t),
	})
	repl.ld.Store(p.ld)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.gate = newAckGate(t, ln.Addr().String())
	// The follower dials the gate, and the leader proves itself for the
	// address its followers dial (replication's handshake): the gate's.
	go p.ld.Serve(dialedAs{ln, p.gate.ln.Addr()})
	t.Cleanup(p.ld.Close)
	createTopic(t, newClient(t, p.leader.Addr()), topic, 1)

	shareMetadata(t, leaderDir, followerDir)
	fcfg := testConfig(t, followerDir)
	p.follower = startBrokerWith(t, fcfg, so)
	p.follower.Demote()
	fepochs, err := storeOf(p.follower).Epochs()
	if err != nil {
		t.Fatal(err)
	}
	p.fl = replication.NewFollower(replication.FollowerConfig{
		Node: "2", Log: storeOf(p.follower), Epochs: fepochs, FileSize: replicaFileSize,
		Truncate: p.follower.TruncateLog, Restart: p.follower.RestartLog, Logger: testLogger(t),
	})
	p.follow()
	return p
}

// follow starts the follower's session and waits until it is in sync.
func (p *replicaPair) follow() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.fl.Follow(ctx, p.gate.addr(), 1)
	}()
	p.stop = func() {
		cancel()
		<-done
	}
	p.t.Cleanup(p.stop)
	poll.True(p.t, "the follower in sync", func() bool { return p.inSync() == 1 })
}

func (p *replicaPair) inSync() int {
	n := 0
	for _, f := range p.ld.Followers() {
		if f.InSync {
			n++
		}
	}
	return n
}

// ackGate relays the follower's session to the leader and can hold back
// the follower's acknowledgements, so that an acks=-1 write is still
// waiting when the session is cut.
type ackGate struct {
	ln     net.Listener
	leader string
	held   sync.RWMutex // write-locked while acknowledgements are held
	mu     sync.Mutex
	conns  []net.Conn
	holds  bool
}

func newAckGate(t *testing.T, leader string) *ackGate {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &ackGate{ln: ln, leader: leader}
	t.Cleanup(func() {
		ln.Close()
		g.cut()
	})
	go g.serve()
	return g
}

func (g *ackGate) addr() string { return g.ln.Addr().String() }

// dialedAs is a listener known to its clients by another address.
type dialedAs struct {
	net.Listener
	addr net.Addr
}

func (l dialedAs) Addr() net.Addr { return l.addr }

func (g *ackGate) serve() {
	for {
		fc, err := g.ln.Accept()
		if err != nil {
			return
		}
		lc, err := net.Dial("tcp", g.leader)
		if err != nil {
			fc.Close()
			continue
		}
		g.mu.Lock()
		g.conns = append(g.conns, fc, lc)
		g.mu.Unlock()
		go func() {
			io.Copy(fc, lc)
			fc.Close()
		}()
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := fc.Read(buf)
				if n > 0 {
					g.held.RLock()
					_, werr := lc.Write(buf[:n])
					g.held.RUnlock()
					if werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			lc.Close()
		}()
	}
}

// hold stops relaying acknowledgements until cut closes every relayed
// connection.
func (g *ackGate) hold() {
	g.held.Lock()
	g.mu.Lock()
	g.holds = true
	g.mu.Unlock()
}

func (g *ackGate) cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		c.Close()
	}
	g.conns = nil
	if g.holds {
		g.holds = false
		g.held.Unlock()
	}
}

// produceAcksAll sends one acks=-1 produce of value to partition 0 of topic
// and returns its partition's error code; no client retry hides it.
func produceAcksAll(t *testing.T, cl *kgo.Client, topic, value string) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = rawBatch(-1, -1, 0, value)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("produce %q: %v", value, err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// consumeValues reads partition 0 of topic on b from the start to its
// visible end and returns the values.
func consumeValues(t *testing.T, b *Broker, topic string) []string {
	t.Helper()
	ctx := testCtx(t)
	meta, _ := b.meta.Topic(topic)
	_, end, _ := b.visibleBounds(meta, 0)
	cl := newClient(t, b.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for int64(len(got)) < end {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestNotEnoughReplicasStoresNothing: with the only follower gone, an
// acks=-1 produce is answered NOT_ENOUGH_REPLICAS and nothing is written,
// so the record is never delivered, not even once the follower is back
// (Kafka's meaning: a client retrying it makes no duplicate).
func TestNotEnoughReplicasStoresNothing(t *testing.T) {
	p := startReplicaPair(t, "isr", 2)
	cl := newClient(t, p.leader.Addr())
	if code := produceAcksAll(t, cl, "isr", "before"); code != 0 {
		t.Fatalf("acks=-1 with the follower in sync: error %d", code)
	}
	p.stop()
	poll.True(t, "the follower out of sync", func() bool { return p.inSync() == 0 })

	before := p.leader.LogEndOffset()
	if code := produceAcksAll(t, cl, "isr", "refused"); code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=-1 with no follower in sync: error %d, want NOT_ENOUGH_REPLICAS", code)
	}
	if end := p.leader.LogEndOffset(); end != before {
		t.Fatalf("a produce answered NOT_ENOUGH_REPLICAS grew the log from %d to %d", before, end)
	}

	p.follow()
	if code := produceAcksAll(t, cl, "isr", "after"); code != 0 {
		t.Fatalf("acks=-1 with the follower back in sync: error %d", code)
	}
	if got := consumeValues(t, p.leader, "isr"); len(got) != 2 || got[0] != "before" || got[1] != "after" {
		t.Fatalf("consumed %q, want [before after]: the refused record must never be delivered", got)
	}
}

// TestNotEnoughReplicasAfterAppend: an acks=-1 produce already appended
// and waiting for its follower when the in-sync set shrinks below the
// minimum is answered NOT_ENOUGH_REPLICAS_AFTER_APPEND: it is stored, and
// the client must not take it for refused.
func TestNotEnoughReplicasAfterAppend(t *testing.T) {
	p := startReplicaPair(t, "isr", 2)
	cl := newClient(t, p.leader.Addr())
	p.gate.hold()
	before := p.leader.LogEndOffset()
	code := make(chan int16, 1)
	go func() { code <- produceAcksAll(t, cl, "isr", "stored") }()
	poll.True(t, "the record appended", func() bool { return p.leader.LogEndOffset() > before })
	select {
	case c := <-code:
		t.Fatalf("acks=-1 answered (error %d) while its follower's acknowledgement was held", c)
	default:
	}
	p.gate.cut()
	if c := <-code; c != kerr.NotEnoughReplicasAfterAppend.Code {
		t.Fatalf("acks=-1 whose follower left while it waited: error %d, want NOT_ENOUGH_REPLICAS_AFTER_APPEND", c)
	}
}

// commitRaw sends one OffsetCommit of group's offset for partition 0 of
// topic straight to addr (no client retry) and returns its error code.
func commitRaw(t *testing.T, addr, group, topic string, offset int64) int16 {
	t.Helper()
	raw := dialRaw(t, addr)
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset, rp.LeaderEpoch = offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if err := raw.write(raw.frame(req)); err != nil {
		t.Fatal(err)
	}
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	if !raw.readResponse(resp) {
		t.Fatal("OffsetCommit: connection closed")
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestFailedOffsetCommitIsNotVisible: an offset commit the in-sync set
// cannot take is answered COORDINATOR_NOT_AVAILABLE (Kafka's answer for
// an under-replicated offsets topic), before its append with nothing
// stored and after it alike, and OffsetFetch keeps the offset committed
// before; one sent to a follower is NOT_COORDINATOR.
func TestFailedOffsetCommitIsNotVisible(t *testing.T) {
	p := startReplicaPair(t, "isr", 2)
	addr := p.leader.Addr()
	committed := func() int64 {
		_, _, c := listOffsets(t, addr, "isr", "app")
		return c[0]
	}
	if code := commitRaw(t, addr, "app", "isr", 5); code != 0 {
		t.Fatalf("commit with the follower in sync: %v", kerr.ErrorForCode(code))
	}
	p.stop()
	poll.True(t, "the follower out of sync", func() bool { return p.inSync() == 0 })
	before := p.leader.LogEndOffset()
	if code := commitRaw(t, addr, "app", "isr", 9); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("commit with too few replicas in sync: %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(code))
	}
	if end := p.leader.LogEndOffset(); end != before {
		t.Fatalf("a refused commit grew the log from %d to %d", before, end)
	}
	if got := committed(); got != 5 {
		t.Fatalf("OffsetFetch after a refused commit of 9: %d, want 5", got)
	}

	p.follow()
	p.gate.hold()
	before = p.leader.LogEndOffset()
	code := make(chan int16, 1)
	go func() { code <- commitRaw(t, addr, "app", "isr", 11) }()
	poll.True(t, "the commit appended", func() bool { return p.leader.LogEndOffset() > before })
	if got := committed(); got != 5 {
		t.Fatalf("OffsetFetch while a commit of 11 waits for its follower: %d, want 5", got)
	}
	p.gate.cut()
	if c := <-code; c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("commit whose follower left while it waited: %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(c))
	}
	if got := committed(); got != 5 {
		t.Fatalf("OffsetFetch after a commit of 11 failed: %d, want 5", got)
	}

	if c := commitRaw(t, p.follower.Addr(), "app", "isr", 12); c != kerr.NotCoordinator.Code {
		t.Fatalf("commit sent to a follower: %v, want NOT_COORDINATOR", kerr.ErrorForCode(c))
	}
}
