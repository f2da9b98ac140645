package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
	"github.com/unilog/unilog/internal/poll"
)

// acquire reserves n bytes of bb for a caller holding nothing.
func acquire(bb *byteBudget, n int64, stop <-chan struct{}) bool {
	if bb.take(n) {
		return true
	}
	_, ok := bb.wait(n, n, 0, stop)
	return ok
}

func TestByteBudgetFIFO(t *testing.T) {
	bb := newByteBudget(10)
	stop := make(chan struct{})
	if !acquire(bb, 8, stop) {
		t.Fatal("first acquire failed")
	}
	big, small := make(chan bool), make(chan bool)
	go func() { big <- acquire(bb, 10, stop) }()
	poll.True(t, "one waiter", func() bool { return bb.waiting() == 1 })
	go func() { small <- acquire(bb, 1, stop) }()
	poll.True(t, "two waiters", func() bool { return bb.waiting() == 2 })
	// 2 bytes are free, enough for the small one, but it queues behind
	// the big one so the big one is not starved.
	bb.release(8)
	if !<-big {
		t.Fatal("big acquire failed")
	}
	if bb.waiting() != 1 {
		t.Fatalf("small request jumped the queue: %d waiting", bb.waiting())
	}
	bb.release(10)
	if !<-small {
		t.Fatal("small acquire failed")
	}
	bb.release(1)

	if !acquire(bb, 10, stop) {
		t.Fatal("acquire of everything failed")
	}
	stopped := make(chan bool)
	go func() { stopped <- acquire(bb, 5, stop) }()
	poll.True(t, "one waiter", func() bool { return bb.waiting() == 1 })
	close(stop)
	if <-stopped {
		t.Fatal("acquire succeeded after stop")
	}
	bb.release(10)
	if bb.available() != 10 || bb.waiting() != 0 {
		t.Fatalf("after stop: %d available, %d waiting", bb.available(), bb.waiting())
	}
}

// TestByteBudgetCredit: frames part-read that hold the whole budget
// between them and each wait for more would wait forever; the first is
// granted the rest of its frame on credit, the second waits for it to be
// released.
func TestByteBudgetCredit(t *testing.T) {
	bb := newByteBudget(10)
	stop := make(chan struct{})
	defer close(stop)
	if !bb.take(6) || !bb.take(4) {
		t.Fatal("the budget was not free")
	}
	type grant struct {
		n  int64
		ok bool
	}
	first, second := make(chan grant), make(chan grant)
	recv := func(ch chan grant) grant {
		select {
		case g := <-ch:
			return g
		case <-time.After(30 * time.Second):
			t.Fatal("deadlocked: no waiter granted")
			return grant{}
		}
	}
	go func() { n, ok := bb.wait(1, 4, 6, stop); first <- grant{n, ok} }()
	poll.True(t, "one waiter", func() bool { return bb.waiting() == 1 })
	go func() { n, ok := bb.wait(1, 6, 4, stop); second <- grant{n, ok} }()
	if g := recv(first); !g.ok || g.n != 4 {
		t.Fatalf("head of a deadlock granted %+v, want the rest of its frame (4)", g)
	}
	if bb.available() != -4 || bb.waiting() != 1 {
		t.Fatalf("after the credit: %d available, %d waiting; want -4 and the second frame waiting", bb.available(), bb.waiting())
	}
	bb.release(10) // the first frame, handled
	if g := recv(second); !g.ok || g.n != 1 {
		t.Fatalf("second frame granted %+v, want the byte it asked for", g)
	}
	bb.release(5)
	if bb.available() != 10 {
		t.Fatalf("%d available at the end, want 10", bb.available())
	}
}

// TestInflightBudgetAcrossConnections: a client whose request holds the
// whole budget makes the others wait, without the broker allocating more,
// until its bytes are released; what counts is the bytes that arrived.
func TestInflightBudgetAcrossConnections(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.MaxRequestBytes = 1 << 20
	cfg.MaxInflightBytes = 1 << 20
	b := startBroker(t, cfg)

	hog := dialRaw(t, b.Addr())
	// All of a 1 MiB frame but its last byte.
	if err := hog.write(binary.BigEndian.AppendUint32(nil, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := hog.write(make([]byte, 1<<20-1)); err != nil {
		t.Fatal(err)
	}
	poll.True(t, "the in-flight budget spent but a byte", func() bool { return b.inflight.available() == 1 })

	other := dialRaw(t, b.Addr())
	answered := make(chan bool)
	go func() {
		_, ok := other.roundTrip(kmsg.NewPtrApiVersionsRequest())
		answered <- ok
	}()
	poll.True(t, "one connection waiting for budget", func() bool { return b.inflight.waiting() == 1 })
	hog.nc.Close()
	if !<-answered {
		t.Fatal("waiting request not answered once the budget was released")
	}
	poll.True(t, "the whole budget back", func() bool { return b.inflight.available() == cfg.MaxInflightBytes })
}

// TestPartReadFramesDoNotDeadlock: two produce requests whose first
// halves hold the whole budget between them each wait for more; the one
// waiting longest is let finish on credit, then the other, and both are
// stored.
func TestPartReadFramesDoNotDeadlock(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.MaxRequestBytes = 1 << 20
	cfg.MaxInflightBytes = 1 << 20
	b := startBroker(t, cfg)
	createTopic(t, newClient(t, b.Addr()), "halves", 1)

	value := strings.Repeat("v", 900<<10)
	conns := []*rawConn{dialRaw(t, b.Addr()), dialRaw(t, b.Addr())}
	frames := make([][]byte, len(conns))
	for i, c := range conns {
		frames[i] = c.frame(produceReq("halves", 0, 1, 10*time.Second, rawBatch(-1, -1, -1, value)))
		if err := c.write(frames[i][:600<<10]); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			poll.True(t, "the first part reserved", func() bool { return b.inflight.available() == 1<<20-(600<<10-4) }) // less the size prefix
		}
	}
	poll.True(t, "the second request waiting for memory", func() bool { return b.inflight.waiting() == 1 })
	for i, c := range conns {
		if err := c.write(frames[i][600<<10:]); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range conns {
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(9)
		if !c.readResponse(resp) {
			t.Fatalf("request %d: connection closed", i)
		}
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 {
			t.Fatalf("request %d: %v", i, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	poll.True(t, "the whole budget back", func() bool { return b.inflight.available() == cfg.MaxInflightBytes })
}

func TestIdleAndSlowConnectionsClosed(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.IdleTimeout = 100 * time.Millisecond
	cfg.ReadTimeout = 100 * time.Millisecond
	b := startBroker(t, cfg)

	idle := dialRaw(t, b.Addr())
	if _, ok := idle.roundTrip(kmsg.NewPtrApiVersionsRequest()); !ok {
		t.Fatal("ApiVersions refused")
	}
	idle.expectClosed()

	// A request whose body never comes: closed, and its reservation freed.
	slow := dialRaw(t, b.Addr())
	if err := slow.write(binary.BigEndian.AppendUint32(nil, 1000)); err != nil {
		t.Fatal(err)
	}
	slow.expectClosed()
	poll.True(t, "the whole budget back", func() bool { return b.inflight.available() == b.cfg.MaxInflightBytes })
}

func TestMaxInflightBelowRequestSizeRefused(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.MaxRequestBytes = 2 << 20
	cfg.MaxInflightBytes = 1 << 20
	if b, err := Open(cfg, testStore()); err == nil {
		b.Close()
		t.Fatal("Start accepted an in-flight budget smaller than one request")
	}
}

// TestFetchCappedByMaxFetchBytes: a client asking for more than
// MaxFetchBytes gets at most that (and always the first batch whole).
func TestFetchCappedByMaxFetchBytes(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.MaxFetchBytes = 1000
	b := startBroker(t, cfg)
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "capped", 1)
	value := strings.Repeat("v", 600)
	for i := 0; i < 3; i++ {
		if p := rawProduce(t, cl, "capped", 0, rawBatch(-1, -1, -1, value)); p.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(p.ErrorCode))
		}
	}
	got := batches(t, rawFetch(t, cl, "capped", 0, 0, 0).RecordBatches)
	if len(got) != 1 {
		t.Fatalf("fetch under a 1000-byte cap returned %d batches of ~660 bytes, want 1", len(got))
	}
}

// TestMaxConnectionsPerIP: one address holds at most its share of the
// connections; another address is still served, and a slot freed is
// taken again.
func TestMaxConnectionsPerIP(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.MaxConnections = 10
	cfg.MaxConnectionsPerIP = 2
	b := startBroker(t, cfg)
	first, second := dialRaw(t, b.Addr()), dialRaw(t, b.Addr())
	for _, c := range []*rawConn{first, second} {
		if _, ok := c.roundTrip(kmsg.NewPtrApiVersionsRequest()); !ok {
			t.Fatal("connection within the per-address cap refused")
		}
	}
	if _, ok := dialRaw(t, b.Addr()).roundTrip(kmsg.NewPtrApiVersionsRequest()); ok {
		t.Fatal("a third connection from one address served")
	}

	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	nc, err := d.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	other := &rawConn{t: t, nc: nc}
	if _, ok := other.roundTrip(kmsg.NewPtrApiVersionsRequest()); !ok {
		t.Fatal("another address refused while the first held its share")
	}

	first.nc.Close()
	poll.True(t, "a slot freed and taken again", func() bool {
		c := dialRaw(t, b.Addr())
		defer c.nc.Close()
		_, ok := c.roundTrip(kmsg.NewPtrApiVersionsRequest())
		return ok
	})
	if _, ok := second.roundTrip(kmsg.NewPtrApiVersionsRequest()); !ok {
		t.Fatal("connection within the cap harmed")
	}
}

// TestAnnouncedFramesHoldNoMemory: six connections announcing 100 MiB
// requests and sending nothing, more than the default 512 MiB in-flight
// budget, leave other clients served long before the attackers' read
// timeout: on a plaintext listener what they announce reserves nothing,
// on a SASL listener a frame before the login may be at most 512 KB.
func TestAnnouncedFramesHoldNoMemory(t *testing.T) {
	for _, withSASL := range []bool{false, true} {
		t.Run(map[bool]string{false: "plaintext", true: "sasl"}[withSASL], func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			cfg.AutoCreateTopics = true
			cfg.ReadTimeout = time.Minute
			var opts []kgo.Opt
			if withSASL {
				cfg.Security.Credentials = testCredentials(t)
				opts = append(opts, kgo.SASL(scramMech(auth.ScramSHA256, "alice", testPasswords["alice"])))
			}
			b := startBroker(t, cfg)

			// Each announces 100 MiB and sends the first bytes of a
			// request header.
			attackers := make([]*rawConn, 6)
			for i := range attackers {
				attackers[i] = dialRaw(t, b.Addr())
				if err := attackers[i].write(binary.BigEndian.AppendUint32(nil, 100<<20)); err != nil {
					t.Fatal(err)
				}
				attackers[i].write(make([]byte, 8)) // refused at once with SASL
			}
			poll.True(t, "every attacker read", func() bool {
				held := b.cfg.MaxInflightBytes - b.inflight.available()
				return b.inflight.waiting() > 0 || held == 6*8 || withSASL && openConns(b) == 0
			})

			// Bounded well below the attackers' read timeout: on the old
			// code this client waited for that timeout.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cl := newClient(t, b.Addr(), append(opts, kgo.AllowAutoTopicCreation())...)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "served", Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatalf("produce while six connections announced 100 MiB each: %v", err)
			}
			for i, a := range attackers {
				if !withSASL {
					// Still open: the broker waits for the rest of the
					// frame until its read timeout.
					a.nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				}
				var one [1]byte
				_, err := a.nc.Read(one[:])
				if timedOut := errors.Is(err, os.ErrDeadlineExceeded); err == nil || timedOut == withSASL {
					t.Fatalf("attacker %d: read error %v; want the connection closed with SASL, open without", i, err)
				}
			}
		})
	}
}

func openConns(b *Broker) int {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	return len(b.conns)
}
