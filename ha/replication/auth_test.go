package replication

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/unilog/unilog/internal/poll"
)

var (
	clusterKey = []byte("the cluster's replication key")
	otherKey   = []byte("a key of another cluster")
)

// dialHello opens a raw connection to a leader and sends a Hello, as a
// follower's first frame.
func dialHello(t *testing.T, addr string, epoch int64, h hello) (net.Conn, *frameReader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(encodeHello(epoch, h)); err != nil {
		t.Fatal(err)
	}
	return c, &frameReader{r: c, max: MaxChunk + 1<<20}
}

// handshake plays a member follower's side on a raw connection: Hello,
// then the answer to the leader's Auth; it returns once the leader's
// Start frame is read.
func handshake(t *testing.T, addr string, key []byte, epoch int64, h hello) (net.Conn, *frameReader) {
	t.Helper()
	c, fr := dialHello(t, addr, epoch, h)
	f, err := fr.next()
	if err != nil {
		t.Fatal(err)
	}
	ln, proof, err := decodeLeaderAuth(f)
	if err != nil || string(proof) != string(leaderProof(key, h.nonce, ln, addr)) {
		t.Fatalf("leader auth: %v", err)
	}
	if _, err := c.Write(appendFrame(nil, frameAuth, 0, followerProof(key, ln, h.nonce, h.node))); err != nil {
		t.Fatal(err)
	}
	if f, err := fr.next(); err != nil || f.typ != frameStart {
		t.Fatalf("start frame: %+v %v", f, err)
	}
	return c, fr
}

func TestAuthenticatedFollowerReplicates(t *testing.T) {
	leader, follower := newNode(t), newNode(t)
	ld, addr := leader.lead(t, 1, LeaderConfig{Key: clusterKey})
	leader.append(t, 30, 500, 1)
	follower.key = clusterKey
	follower.follow(t, addr, 1, false)
	end := leader.log.WriteOffset()
	poll.True(t, "the follower caught up", func() bool {
		fs := ld.Followers()
		return len(fs) == 1 && fs[0].InSync && fs[0].End == end
	})
	identical(t, leader, follower)
}

// A process without the key gets nothing of the log, and the epoch its
// Hello claims does not fence the leader.
func TestLeaderRefusesFollowerWithoutTheKey(t *testing.T) {
	leader := newNode(t)
	leader.append(t, 30, 500, 1)
	var fenced atomic.Bool
	ld, addr := leader.lead(t, 1, LeaderConfig{Key: clusterKey, OnFenced: func(int64) { fenced.Store(true) }})

	for name, key := range map[string][]byte{"another key": otherKey, "no key": nil} {
		c, fr := dialHello(t, addr, 99, hello{end: 0, lastEpoch: -1, node: "intruder"})
		f, err := fr.next()
		if err != nil {
			t.Fatal(err)
		}
		ln, _, err := decodeLeaderAuth(f)
		if err != nil {
			t.Fatal(err)
		}
		if f.epoch != 0 {
			t.Errorf("%s: the leader's auth frame tells epoch %d before the follower proved itself", name, f.epoch)
		}
		if _, err := c.Write(appendFrame(nil, frameAuth, 0, followerProof(key, ln, nonce{}, "intruder"))); err != nil {
			t.Fatal(err)
		}
		if f, err := fr.next(); err == nil {
			t.Fatalf("%s: the leader sent a frame of type %d", name, f.typ)
		} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
			t.Fatalf("%s: %v, want the connection closed", name, err)
		}
	}
	if fenced.Load() {
		t.Fatal("an unauthenticated Hello fenced the leader")
	}
	if fs := ld.Followers(); len(fs) != 0 {
		t.Fatalf("followers %+v, want none", fs)
	}
	// A member still gets in.
	handshake(t, addr, clusterKey, 1, hello{end: 0, lastEpoch: -1, node: "member"})
}

func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// A follower dialing a process that does not hold the key, or one that
// relays a real leader's answers from another address, writes nothing.
func TestFollowerRefusesLeaderWithoutTheKey(t *testing.T) {
	follower := newNode(t)
	follower.append(t, 10, 500, 7)
	follower.key = clusterKey
	if err := follower.epochs.Assign(1, 0); err != nil {
		t.Fatal(err)
	}
	had := follower.log.WriteOffset()

	fake := newNode(t) // an empty log: following it would cut ours
	_, fakeAddr := fake.lead(t, 5, LeaderConfig{Key: otherKey})
	_, _, errc := follower.follow(t, fakeAddr, 5, false)
	if err := <-errc; !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("following a leader of another key: %v, want ErrUnauthenticated", err)
	}

	real := newNode(t)
	_, realAddr := real.lead(t, 5, LeaderConfig{Key: clusterKey})
	relay := relayTo(t, realAddr)
	_, _, errc = follower.follow(t, relay, 5, false)
	if err := <-errc; !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("following a relay of the real leader: %v, want ErrUnauthenticated", err)
	}
	if end := follower.log.WriteOffset(); end != had {
		t.Fatalf("the follower's log ends at %d, had %d", end, had)
	}
}

// relayTo listens on a port of its own and pipes each connection to addr.
func relayTo(t *testing.T, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return ln.Addr().String()
}
