package broker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/store"
)

// gatedStorage interposes on the storage's waits. While armed, the next
// WaitDurable or WaitDispatched call reports its end on entered and blocks
// until release is sent a result or its context ends; what it returned then
// goes to exited.
type gatedStorage struct {
	Storage
	mu       sync.Mutex
	durable  bool // gate the next WaitDurable
	dispatch bool // gate the next WaitDispatched
	lastEnd  int64
	entered  chan int64
	release  chan error
	exited   chan error
}

func newGatedStorage() *gatedStorage {
	return &gatedStorage{entered: make(chan int64, 1), release: make(chan error), exited: make(chan error, 1)}
}

func (g *gatedStorage) Append(dst []Appended, batches []StorageBatch) ([]Appended, error) {
	n0 := len(dst)
	dst, err := g.Storage.Append(dst, batches)
	if len(dst) > n0 {
		g.mu.Lock()
		g.lastEnd = dst[len(dst)-1].End
		g.mu.Unlock()
	}
	return dst, err
}

func (g *gatedStorage) arm(durable, dispatch bool) {
	g.mu.Lock()
	g.durable, g.dispatch = durable, dispatch
	g.mu.Unlock()
}

func (g *gatedStorage) gate(ctx context.Context, which *bool, end int64, wait func(context.Context, int64) error) error {
	g.mu.Lock()
	gated := *which
	*which = false
	g.mu.Unlock()
	if !gated {
		return wait(ctx, end)
	}
	g.entered <- end
	var err error
	select {
	case err = <-g.release:
		if err == nil {
			err = wait(ctx, end)
		}
	case <-ctx.Done():
		err = ctx.Err()
	}
	g.exited <- err
	return err
}

func (g *gatedStorage) WaitDurable(ctx context.Context, end int64) error {
	return g.gate(ctx, &g.durable, end, g.Storage.WaitDurable)
}

func (g *gatedStorage) WaitDispatched(ctx context.Context, end int64) error {
	return g.gate(ctx, &g.dispatch, end, g.Storage.WaitDispatched)
}

func startGated(t *testing.T, cfg Config, so store.Options) (*Broker, *gatedStorage) {
	t.Helper()
	g := newGatedStorage()
	b, err := open(cfg, so, func(s Storage) Storage { g.Storage = s; return g })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b, g
}

func produceReq(topic string, partition int32, acks int16, timeout time.Duration, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = acks
	req.TimeoutMillis = int32(timeout / time.Millisecond)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// sendAsync writes req on c and delivers its decoded response (nil if the
// connection closed instead).
func sendAsync(c *rawConn, req kmsg.Request) <-chan kmsg.Response {
	out := make(chan kmsg.Response, 1)
	if err := c.write(c.frame(req)); err != nil {
		out <- nil
		return out
	}
	go func() {
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		if !c.readResponse(resp) {
			out <- nil
			return
		}
		out <- resp
	}()
	return out
}

func within[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s after 30s", what)
		panic("unreachable")
	}
}

func produceCode(resp kmsg.Response) (int16, int64) {
	p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}

// TestRetryWaitsForOriginal: a retried idempotent batch under acks=-1 is
// answered only once the original's bytes are durable, and with the flush's
// error if that failed; the retry is never stored twice.
func TestRetryWaitsForOriginal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flush error
		want  int16
	}{
		{"flush succeeds", nil, 0},
		{"flush fails", errors.New("injected msync failure"), kerr.KafkaStorageError.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			so := testStore()
			so.CommitLog.FlushMode = commitlog.FlushSync
			b, g := startGated(t, cfg, so)
			cl := newClient(t, b.Addr())
			createTopic(t, cl, "retry", 1)
			pid, epoch := initProducerID(t, cl)
			batch := rawBatch(pid, epoch, 0, "once")
			c := dialRaw(t, b.Addr())
			// The original, acks=1: stored, not waited for.
			if code, base := produceCode(within(t, "first answer", sendAsync(c, produceReq("retry", 0, 1, 10*time.Second, batch)))); code != 0 || base != 0 {
				t.Fatalf("original: %v base %d", kerr.ErrorForCode(code), base)
			}
			g.mu.Lock()
			origEnd := g.lastEnd
			g.mu.Unlock()

			g.arm(true, false)
			answer := sendAsync(c, produceReq("retry", 0, -1, 10*time.Second, batch))
			select {
			case end := <-g.entered:
				if end < origEnd {
					t.Fatalf("retry waited for the log through %d, the original ends at %d", end, origEnd)
				}
			case resp := <-answer:
				code, _ := produceCode(resp)
				t.Fatalf("acks=-1 retry answered (%v) without waiting for the original's flush", kerr.ErrorForCode(code))
			case <-time.After(30 * time.Second):
				t.Fatal("retry neither waited nor answered")
			}
			g.release <- tc.flush
			code, base := produceCode(within(t, "retry answer", answer))
			if code != tc.want || (code == 0 && base != 0) {
				t.Fatalf("retry: %v base %d, want %v base 0", kerr.ErrorForCode(code), base, kerr.ErrorForCode(tc.want))
			}
			if p := rawFetch(t, cl, "retry", 0, 0, 0); p.HighWatermark != 1 {
				t.Fatalf("high watermark %d, want the batch stored once", p.HighWatermark)
			}
		})
	}
}

// TestStalledWaitFreezesNothing: a produce whose wait stalls (here the
// dispatcher never catches up) must not hold the topic lock, so a
// CreateTopics, which takes it exclusively, and the produces queued behind
// it still go through; the stalled wait ends with its connection.
func TestStalledWaitFreezesNothing(t *testing.T) {
	b, g := startGated(t, testConfig(t, t.TempDir()), testStore())
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "busy", 1)
	pid, epoch := initProducerID(t, cl)

	g.arm(false, true)
	stalled := dialRaw(t, b.Addr())
	sendAsync(stalled, produceReq("busy", 0, 1, time.Hour, rawBatch(pid, epoch, 0, "stalls")))
	within(t, "stalled wait", g.entered)

	admin := dialRaw(t, b.Addr())
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(4)
	create.TimeoutMillis = 10_000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic = "other"
	ct.NumPartitions = 1
	ct.ReplicationFactor = 1
	create.Topics = append(create.Topics, ct)
	created := sendAsync(admin, create)
	plain := sendAsync(dialRaw(t, b.Addr()), produceReq("busy", 0, 1, 10*time.Second, rawBatch(-1, -1, -1, "plain")))

	if resp := within(t, "CreateTopics answer behind a stalled produce", created); resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %v", kerr.ErrorForCode(resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode))
	}
	if code, _ := produceCode(within(t, "produce answer behind a stalled produce", plain)); code != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(code))
	}
	select {
	case err := <-g.exited:
		t.Fatalf("the stalled wait ended (%v) before its connection did", err)
	default:
	}
	stalled.nc.Close()
	if err := within(t, "stalled wait to end with its connection", g.exited); !errors.Is(err, context.Canceled) {
		t.Fatalf("stalled wait ended with %v, want context.Canceled", err)
	}
}

// TestStalledWaitTimesOut: a wait that cannot complete is answered with
// REQUEST_TIMED_OUT after the request's own timeout.
func TestStalledWaitTimesOut(t *testing.T) {
	b, g := startGated(t, testConfig(t, t.TempDir()), testStore())
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "slow", 1)
	g.arm(false, true)
	answer := sendAsync(dialRaw(t, b.Addr()), produceReq("slow", 0, 1, 50*time.Millisecond, rawBatch(-1, -1, -1, "x")))
	within(t, "stalled wait", g.entered)
	if code, _ := produceCode(within(t, "timed-out answer", answer)); code != kerr.RequestTimedOut.Code {
		t.Fatalf("stalled produce answered %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
	}
	if err := <-g.exited; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled wait ended with %v", err)
	}
}

// TestProduceRequestBatches covers the request-wide append: every
// partition's batch is answered as if sent alone when the log refuses one
// of them, and a partition named twice in a request (no client does it,
// the protocol allows it) has its batches checked and stored in order.
func TestProduceRequestBatches(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	so := testStore()
	so.CommitLog.FileSize = 64 << 10 // the log's largest record is 32 KiB, below max.message.bytes
	b := startBrokerWith(t, cfg, so)
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "many", 3)
	pid, epoch := initProducerID(t, cl)
	big := string(make([]byte, 40<<10))

	type part struct {
		partition int32
		batch     []byte
		code      int16
		base      int64
	}
	for _, tc := range []struct {
		name  string
		parts []part
	}{
		{"one batch too large for the log", []part{
			{0, rawBatch(-1, -1, -1, "a"), 0, 0},
			{1, rawBatch(-1, -1, -1, big), kerr.MessageTooLarge.Code, -1},
			{2, rawBatch(-1, -1, -1, "c"), 0, 0},
		}},
		{"a partition twice", []part{
			{1, rawBatch(pid, epoch, 0, "x", "y"), 0, 0},
			{2, rawBatch(-1, -1, -1, "d"), 0, 1},
			{1, rawBatch(pid, epoch, 2, "z"), 0, 2},
			{1, rawBatch(pid, epoch, 2, "z"), 0, 2}, // a retry: the same offsets
			{1, rawBatch(pid, epoch, 7, "gap"), kerr.OutOfOrderSequenceNumber.Code, -1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := produceReq("many", 0, -1, 10*time.Second, nil)
			rt := &req.Topics[0]
			rt.Partitions = rt.Partitions[:0]
			for _, p := range tc.parts {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition, rp.Records = p.partition, p.batch
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp, err := req.RequestWith(testCtx(t), cl)
			if err != nil {
				t.Fatal(err)
			}
			for i, got := range resp.Topics[0].Partitions {
				want := tc.parts[i]
				if got.Partition != want.partition || got.ErrorCode != want.code || got.BaseOffset != want.base {
					t.Errorf("batch %d: partition %d %v base %d, want partition %d %v base %d", i,
						got.Partition, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset, want.partition, kerr.ErrorForCode(want.code), want.base)
				}
			}
		})
	}
	for p, want := range []int64{1, 3, 2} {
		if _, end := b.st.Bounds("many", int32(p)); end != want {
			t.Errorf("partition %d holds offsets [0, %d), want [0, %d)", p, end, want)
		}
	}
}
