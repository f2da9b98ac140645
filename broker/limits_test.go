package broker

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/unilog/unilog/internal/poll"
)

func TestByteBudgetFIFO(t *testing.T) {
	bb := newByteBudget(10)
	stop := make(chan struct{})
	if !bb.acquire(8, stop) {
		t.Fatal("first acquire failed")
	}
	big, small := make(chan bool), make(chan bool)
	go func() { big <- bb.acquire(10, stop) }()
	poll.True(t, "one waiter", func() bool { return bb.waiting() == 1 })
	go func() { small <- bb.acquire(1, stop) }()
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

	if !bb.acquire(10, stop) {
		t.Fatal("acquire of everything failed")
	}
	stopped := make(chan bool)
	go func() { stopped <- bb.acquire(5, stop) }()
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

// TestInflightBudgetAcrossConnections: a client announcing a request as
// large as the whole budget makes the others wait, without the broker
// allocating more, until its bytes are released.
func TestInflightBudgetAcrossConnections(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.MaxRequestBytes = 1 << 20
	cfg.MaxInflightBytes = 1 << 20
	b := startBroker(t, cfg)

	hog := dialRaw(t, b.Addr())
	if err := hog.write(binary.BigEndian.AppendUint32(nil, 1<<20)); err != nil {
		t.Fatal(err)
	}
	poll.True(t, "the in-flight budget spent", func() bool { return b.inflight.available() == 0 })

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
	if b, err := Start(cfg); err == nil {
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
