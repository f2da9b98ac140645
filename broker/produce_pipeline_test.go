package broker

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/poll"
)

// TestProducePipelined: a produce read while the one before it on the
// connection waits (here for replication) is appended at once, not after
// that one's answer, and the answers, with a request of another kind
// behind them, still leave in request order.
func TestProducePipelined(t *testing.T) {
	b, repl, raw := waitingBroker(t, "pipe", 2)
	for p := range int32(2) {
		sendProduce(t, raw, "pipe", p, -1)
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 4
	if err := raw.write(raw.frame(meta)); err != nil {
		t.Fatal(err)
	}

	// The first produce waits for followers that never answer until
	// told; the second must be stored meanwhile.
	waitStored(t, b, "pipe", 1)
	repl.set(1<<62, nil)

	for corr := int32(1); corr <= 2; corr++ {
		if rp := readProduceAnswer(t, raw, corr).Topics[0].Partitions[0]; rp.ErrorCode != 0 || rp.BaseOffset != 0 {
			t.Errorf("produce %d: error %d, base offset %d", corr, rp.ErrorCode, rp.BaseOffset)
		}
	}
	readAnswer(t, raw, 3)
}

// TestProducePipelinedAcksZero: an acks=0 produce arriving while an
// earlier produce waits is stored and leaves that one waiting (it has no
// answer of its own to order), and the next answers still come in order.
func TestProducePipelinedAcksZero(t *testing.T) {
	b, repl, raw := waitingBroker(t, "pipe0", 3)
	// Each is sent once the one before is stored, so that the first
	// waits on its own when the others arrive.
	for p, acks := range []int16{-1, 0, -1} {
		sendProduce(t, raw, "pipe0", int32(p), acks)
		waitStored(t, b, "pipe0", int32(p))
	}
	repl.set(1<<62, nil)

	for _, corr := range []int32{1, 3} {
		if rp := readProduceAnswer(t, raw, corr).Topics[0].Partitions[0]; rp.ErrorCode != 0 {
			t.Errorf("produce %d: error %d", corr, rp.ErrorCode)
		}
	}
}

// sendProduce writes an acks produce of one record to topic/partition on
// raw, version 7, without reading its answer.
// waitingBroker is a broker whose acks=-1 produces wait for followers
// until repl is set, a topic of partitions, and a raw connection to it.
func waitingBroker(t *testing.T, topic string, partitions int32) (*Broker, *fakeReplication, *rawConn) {
	t.Helper()
	repl := newFakeReplication()
	cfg := testConfig(t, t.TempDir())
	cfg.Replication, cfg.SyncReplication = repl, true
	b := startBroker(t, cfg)
	createTopic(t, newClient(t, b.Addr()), topic, partitions)
	return b, repl, dialRaw(t, b.Addr())
}

func sendProduce(t *testing.T, raw *rawConn, topic string, partition int32, acks int16) {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 7, acks, 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, rawBatch(-1, -1, 0, "x")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if err := raw.write(raw.frame(req)); err != nil {
		t.Fatal(err)
	}
}

// waitStored waits until topic/partition holds a record.
func waitStored(t *testing.T, b *Broker, topic string, partition int32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, hi := b.st.Bounds(topic, partition); hi > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing stored in %s/%d while the produce before it waited", topic, partition)
		}
	}
}

// readAnswer reads the next response frame on raw, checks that it answers
// correlation id corr, and returns its body after the correlation id.
func readAnswer(t *testing.T, raw *rawConn, corr int32) []byte {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(raw.nc, size[:]); err != nil {
		t.Fatalf("response %d: %v", corr, err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(raw.nc, body); err != nil {
		t.Fatalf("response %d: %v", corr, err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		t.Fatalf("response with correlation id %d, want %d: out of order", got, corr)
	}
	return body[4:]
}

// readProduceAnswer is readAnswer for a produce of version 7.
func readProduceAnswer(t *testing.T, raw *rawConn, corr int32) *kmsg.ProduceResponse {
	t.Helper()
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 7
	if err := resp.ReadFrom(readAnswer(t, raw, corr)); err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestDeferredProduceAllocs: answering a deferred produce whose wait ran
// on the connection's waiter allocates nothing but the wait's deadline
// context: no goroutine, channel or deferredProduce per produce.
// AllocsPerRun counts the whole process's allocations and truncates their
// mean: over 1,000 cycles the broker's own goroutines add less than one.
func TestDeferredProduceAllocs(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := &conn{b: b, nc: discardConn{}, ctx: context.Background(), pipelined: true}
	defer c.stopWaiter()
	resp := kmsg.NewPtrProduceResponse()
	deadline := time.Now().Add(time.Hour)
	cycle := func() {
		// End 0 is dispatched already: the wait returns at once.
		if !c.deferProduce(resp, -1, 0, deadline) {
			t.Fatal("not deferred")
		}
		c.deferred.waitAsync(c)
		c.finishDeferred()
		if c.writeErr != nil {
			t.Fatal(c.writeErr)
		}
	}
	cycle() // starts the waiter
	ctxAllocs := testing.AllocsPerRun(1000, func() {
		_, cancel := context.WithDeadline(c.ctx, deadline)
		cancel()
	})
	if got := testing.AllocsPerRun(1000, cycle); got > ctxAllocs {
		t.Errorf("a deferred produce allocates %.0f times, its deadline context %.0f", got, ctxAllocs)
	}
}

// discardConn is a connection whose writes succeed and go nowhere (a
// net.Pipe's write deadline would allocate a timer of its own).
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error)      { return len(p), nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }

// TestRequestReadBeforeCloseAnswered: a request the broker has read when
// it begins to close is answered, not dropped with the connection. A
// client's first request on a connection closed unanswered looks to
// franz-go like a missing SASL handshake (ErrFirstReadEOF), which it does
// not retry: a move's source stopping while the producer connected to it
// failed 200 buffered records at once (TestPartitionMoveSourceFailover,
// seen once in CI).
func TestRequestReadBeforeCloseAnswered(t *testing.T) {
	b, repl, raw := waitingBroker(t, "closing", 1)
	full := b.inflight.available()

	// The produce waits for followers, which holds the next request read
	// but not yet handled.
	sendProduce(t, raw, "closing", 0, -1)
	waitStored(t, b, "closing", 0)
	versions := kmsg.NewPtrApiVersionsRequest()
	versions.Version = 3
	if err := raw.write(raw.frame(versions)); err != nil {
		t.Fatal(err)
	}
	poll.True(t, "the ApiVersions request read", func() bool { return b.inflight.available() < full })

	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	poll.True(t, "the broker closing", func() bool {
		select {
		case <-b.closing:
			return true
		default:
			return false
		}
	})
	repl.set(1<<62, nil)
	readProduceAnswer(t, raw, 1)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	if !raw.readResponse(resp) {
		t.Fatal("the ApiVersions request read before the close was not answered")
	}
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions answer: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	raw.expectClosed()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}
