package replication

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/poll"
	"github.com/unilog/unilog/internal/tlsconf"
	"github.com/unilog/unilog/internal/tlsconf/tlstest"
)

const fileSize = 64 << 10

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// node is one replica's storage: a recovered log and its epoch file.
type node struct {
	dir    string
	log    *commitlog.Log
	epochs *commitlog.Epochs
	// key is the replication key it follows with.
	key []byte
}

func newNode(t testing.TB) *node { return newNodeSized(t, fileSize) }

func newNodeSized(t testing.TB, size int64) *node {
	t.Helper()
	dir := t.TempDir()
	l, err := commitlog.Open(commitlog.Options{Dir: dir, FileSize: size, Logger: quiet(), RetentionAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Recover(0, nil); err != nil {
		t.Fatal(err)
	}
	e, err := commitlog.OpenEpochs(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &node{dir: dir, log: l, epochs: e}
}

func (n *node) append(t *testing.T, count, size int, fill byte) {
	t.Helper()
	for i := 0; i < count; i++ {
		m := commitlog.Message{Topic: "t", Partition: int32(i % 7), Body: bytes.Repeat([]byte{fill}, size)}
		if _, err := n.log.Append(&m); err != nil {
			t.Fatal(err)
		}
	}
}

// restart is the follower's Restart hook for a log without consume
// queues: the log's counters take the leader's offsets.
func (n *node) restart(at int64, next []commitlog.PartitionOffset) error {
	if err := n.log.Restart(at); err != nil {
		return err
	}
	for _, p := range next {
		n.log.SetQueueOffset(p.Topic, p.TopicID, p.Partition, p.Next)
	}
	return nil
}

// lead makes n the leader of epoch from its log's end and serves it on a
// loopback port.
func (n *node) lead(t testing.TB, epoch int64, cfg LeaderConfig) (*Leader, string) {
	t.Helper()
	if err := n.epochs.Assign(epoch, n.log.WriteOffset()); err != nil {
		t.Fatal(err)
	}
	cfg.Log, cfg.Epochs, cfg.Epoch, cfg.FileSize, cfg.Logger = n.log, n.epochs, epoch, n.log.Options().FileSize, quiet()
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = 20 * time.Millisecond
	}
	ld := NewLeader(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ld.Serve(ln)
	t.Cleanup(ld.Close)
	return ld, ln.Addr().String()
}

// follow runs n as a follower of addr until the test ends or stop is
// called; the returned channel gets Follow's error.
func (n *node) follow(t testing.TB, addr string, epoch int64, durable bool) (*Follower, func(), <-chan error) {
	t.Helper()
	f := NewFollower(FollowerConfig{
		Node: n.dir, Log: n.log, Epochs: n.epochs, FileSize: n.log.Options().FileSize,
		Truncate: n.log.Truncate, Restart: n.restart, Durable: durable, Key: n.key, Logger: quiet(),
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- f.Follow(ctx, addr, epoch) }()
	t.Cleanup(cancel)
	return f, cancel, errc
}

// identical fails unless the two logs hold the same files, byte for byte.
func identical(t *testing.T, a, b *node) {
	t.Helper()
	if err := a.log.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.log.Flush(); err != nil {
		t.Fatal(err)
	}
	fa, fb := a.log.Files(), b.log.Files()
	if len(fa) != len(fb) {
		t.Fatalf("%d files and %d files", len(fa), len(fb))
	}
	for i := range fa {
		x, _ := os.ReadFile(fa[i].Path)
		y, _ := os.ReadFile(fb[i].Path)
		if fa[i].Name != fb[i].Name || !bytes.Equal(x, y) {
			t.Fatalf("file %s differs from %s", fa[i].Name, fb[i].Name)
		}
	}
	ea, eb := a.epochs.List(), b.epochs.List()
	if len(ea) != len(eb) {
		t.Fatalf("epochs %v and %v", ea, eb)
	}
	for i := range ea {
		if ea[i] != eb[i] {
			t.Fatalf("epochs %v and %v", ea, eb)
		}
	}
}

func TestStreamAndHighWatermark(t *testing.T) {
	leader, follower := newNode(t), newNode(t)
	leader.append(t, 50, 900, 1) // before the epoch: a log that had no leader yet
	ld, addr := leader.lead(t, 1, LeaderConfig{MinInSync: 2})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ld.WaitReplicated(ctx, 1); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("WaitReplicated with no follower: %v", err)
	}
	if err := ld.CheckInSync(); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("CheckInSync with no follower: %v", err)
	}
	f, stop, errc := follower.follow(t, addr, 1, false)
	leader.append(t, 300, 1500, 2) // rolls several files while it streams
	end := leader.log.WriteOffset()
	poll.True(t, "the follower in sync", func() bool { return len(ld.Followers()) == 1 && ld.Followers()[0].InSync })
	if err := ld.CheckInSync(); err != nil {
		t.Fatalf("CheckInSync with the follower in sync: %v", err)
	}
	if err := ld.WaitReplicated(ctx, end); err != nil {
		t.Fatalf("WaitReplicated: %v", err)
	}
	if hw := ld.HighWatermark(); hw < end {
		t.Fatalf("high watermark %d below the replicated end %d", hw, end)
	}
	poll.True(t, "the follower to learn the high watermark", func() bool { return f.HighWatermark() == end })
	identical(t, leader, follower)

	stop()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow after cancel: %v", err)
	}
	poll.True(t, "the follower out of sync", func() bool { return !ld.Followers()[0].InSync })
	leader.append(t, 1, 10, 3)
	if err := ld.WaitReplicated(ctx, leader.log.WriteOffset()); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("WaitReplicated after the follower left: %v", err)
	}
	// The high watermark holds what the follower had: no more.
	if hw := ld.HighWatermark(); hw != leader.log.WriteOffset() {
		t.Fatalf("with nobody in sync the high watermark is the leader's end: %d, want %d", hw, leader.log.WriteOffset())
	}
}

// TestMinInSyncCountsTheLeader: MinInSync is Kafka's min.insync.replicas,
// the leader one of the replicas it counts.
func TestMinInSyncCountsTheLeader(t *testing.T) {
	for _, tc := range []struct {
		min, followers int
		ok             bool
	}{
		{0, 0, true},
		{1, 0, true},
		{2, 0, false},
		{2, 1, true},
		{3, 1, false},
	} {
		t.Run(fmt.Sprintf("%d of 1+%d", tc.min, tc.followers), func(t *testing.T) {
			leader := newNode(t)
			ld, addr := leader.lead(t, 1, LeaderConfig{MinInSync: tc.min})
			if tc.followers > 0 {
				newNode(t).follow(t, addr, 1, false)
				poll.True(t, "the follower in sync", func() bool { return len(ld.Followers()) == 1 && ld.Followers()[0].InSync })
			}
			if err := ld.CheckInSync(); (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrNotEnoughReplicas) {
				t.Fatalf("CheckInSync: %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestDurableAcks(t *testing.T) {
	leader, follower := newNode(t), newNode(t)
	ld, addr := leader.lead(t, 1, LeaderConfig{MinInSync: 2, Durable: true})
	follower.follow(t, addr, 1, true)
	leader.append(t, 100, 700, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	poll.True(t, "the follower in sync", func() bool { return len(ld.Followers()) == 1 && ld.Followers()[0].InSync })
	end := leader.log.WriteOffset()
	if err := ld.WaitReplicated(ctx, end); err != nil {
		t.Fatal(err)
	}
	if got := follower.log.FlushedOffset(); got < end {
		t.Fatalf("acknowledged as durable at %d, the follower flushed %d", end, got)
	}
}

// A node that led epoch 1 and wrote a tail nobody replicated follows the
// leader of epoch 2: it cuts exactly that tail and then matches.
func TestDivergentTailTruncated(t *testing.T) {
	a, b := newNode(t), newNode(t)
	ldA, addrA := a.lead(t, 1, LeaderConfig{})
	_, stopB, errB := b.follow(t, addrA, 1, false)
	a.append(t, 120, 1000, 1)
	poll.True(t, "b to catch up", func() bool { return b.log.WriteOffset() == a.log.WriteOffset() })
	stopB()
	<-errB
	ldA.Close()
	a.append(t, 80, 1000, 0xEE) // epoch 1's tail that b never got

	_, addrB := b.lead(t, 2, LeaderConfig{})
	b.append(t, 40, 3000, 2)
	_, _, errA := a.follow(t, addrB, 2, false)
	poll.True(t, "a to match b", func() bool { return a.log.WriteOffset() == b.log.WriteOffset() })
	identical(t, a, b)
	select {
	case err := <-errA:
		t.Fatalf("Follow ended: %v", err)
	default:
	}
}

// A follower told of a newer epoch fences an old leader that still serves.
func TestFencing(t *testing.T) {
	old, f := newNode(t), newNode(t)
	var fencedBy atomic.Int64
	ld, addr := old.lead(t, 2, LeaderConfig{OnFenced: func(e int64) { fencedBy.Store(e) }})
	old.append(t, 10, 100, 1)
	_, _, errc := f.follow(t, addr, 3, false)
	if err := <-errc; !errors.Is(err, ErrStaleLeader) && !errors.Is(err, io.EOF) {
		t.Fatalf("following a stale leader: %v", err)
	}
	poll.True(t, "the old leader fenced", func() bool { return fencedBy.Load() == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := ld.WaitReplicated(ctx, 1); !errors.Is(err, ErrFenced) {
		t.Fatalf("WaitReplicated on a fenced leader: %v", err)
	}
	if f.log.WriteOffset() != 0 {
		t.Fatalf("the follower took %d bytes from a stale leader", f.log.WriteOffset())
	}
}

// An empty follower of a leader whose oldest files are gone starts at the
// leader's first offset, with the leader's next offsets there: those of
// the partitions whose records follow, and of one whose records are all
// gone.
func TestFollowerRestartsAtLeaderMin(t *testing.T) {
	leader, follower := newNode(t), newNode(t)
	leader.append(t, 200, 1500, 1)
	gone := commitlog.PartitionOffset{Topic: "gone", TopicID: commitlog.TopicID{7}, Partition: 3, Next: 42}
	var atMin []commitlog.PartitionOffset
	for p := range int32(7) {
		atMin = append(atMin, commitlog.PartitionOffset{Topic: "t", Partition: p, Next: leader.log.NextQueueOffset("t", commitlog.TopicID{}, p)})
	}
	atMin = append(atMin, gone)
	if err := leader.restart(leader.log.WriteOffset()/fileSize*fileSize, atMin); err != nil {
		t.Fatal(err)
	}
	first := leader.log.MinOffset()
	var asked atomic.Int64
	_, addr := leader.lead(t, 1, LeaderConfig{Offsets: func(at int64) []commitlog.PartitionOffset {
		asked.Store(at)
		return atMin
	}})
	leader.append(t, 30, 1500, 2)
	follower.follow(t, addr, 1, false)
	poll.True(t, "the follower to catch up", func() bool { return follower.log.WriteOffset() == leader.log.WriteOffset() })
	if follower.log.MinOffset() != first || asked.Load() != first {
		t.Fatalf("follower starts at %d, leader at %d, offsets asked at %d", follower.log.MinOffset(), first, asked.Load())
	}
	identical(t, leader, follower)
	for _, p := range atMin {
		want := leader.log.NextQueueOffset(p.Topic, p.TopicID, p.Partition)
		if got := follower.log.NextQueueOffset(p.Topic, p.TopicID, p.Partition); got != want {
			t.Fatalf("%s/%d: follower's next offset %d, leader's %d", p.Topic, p.Partition, got, want)
		}
	}
}

func TestFollowerRefusesOtherFileSize(t *testing.T) {
	leader := newNode(t)
	_, addr := leader.lead(t, 1, LeaderConfig{})
	f := NewFollower(FollowerConfig{Node: "x", Log: leader.log, Epochs: leader.epochs, FileSize: 2 * fileSize, Logger: quiet()})
	if err := f.Follow(context.Background(), addr, 1); !errors.Is(err, ErrFileSize) {
		t.Fatalf("Follow with another file size: %v", err)
	}
}

// The stream over mutual TLS: a follower with a certificate of the
// cluster's CA replicates; one without a certificate, or with a name the
// leader does not accept, gets nothing.
func TestMutualTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "cluster")
	leaderCert, leaderKey := ca.Issue("node-1")
	followerCert, followerKey := ca.Issue("node-2")
	strangerCert, strangerKey := ca.Issue("stranger")
	srv, err := tlsconf.Files{Cert: leaderCert, Key: leaderKey, ClientCA: ca.File}.Server()
	if err != nil {
		t.Fatal(err)
	}
	srv.VerifyConnection = tlsconf.RequirePeer("node-2", "node-3")
	leader := newNode(t)
	_, addr := leader.lead(t, 1, LeaderConfig{TLS: srv})
	leader.append(t, 40, 900, 1)

	client := func(cert, key string) *tls.Config {
		c, err := tlsconf.Files{CA: ca.File, Cert: cert, Key: key}.Client(true)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, bad := range []struct {
		name string
		tls  *tls.Config
	}{
		{"no client certificate", client("", "")},
		{"a name the leader does not accept", client(strangerCert, strangerKey)},
	} {
		n := newNode(t)
		f := NewFollower(FollowerConfig{Node: bad.name, Log: n.log, Epochs: n.epochs, FileSize: fileSize,
			Truncate: n.log.Truncate, Restart: n.restart, TLS: bad.tls, Logger: quiet()})
		if err := f.Follow(context.Background(), addr, 1); err == nil || n.log.WriteOffset() != 0 {
			t.Fatalf("%s: Follow %v, replicated %d bytes", bad.name, err, n.log.WriteOffset())
		}
	}

	n := newNode(t)
	f := NewFollower(FollowerConfig{Node: "node-2", Log: n.log, Epochs: n.epochs, FileSize: fileSize,
		Truncate: n.log.Truncate, Restart: n.restart, TLS: client(followerCert, followerKey), Logger: quiet()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.Follow(ctx, addr, 1)
	poll.True(t, "the TLS follower to catch up", func() bool { return n.log.WriteOffset() == leader.log.WriteOffset() })
	identical(t, leader, n)
}
