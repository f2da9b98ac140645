package broker

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTopicLifecycle creates, grows, describes and deletes topics; a
// deleted topic stays deleted across a restart (the recovery scan must not
// re-index its records) and a re-created one starts at offset 0.
func TestTopicLifecycle(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	b, err := Open(cfg, testStore())
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	createTopic(t, cl, "life", 2)
	produceSync(t, cl, "life", 1, "x", "y")

	if _, err := adm.CreatePartitions(ctx, 2, "life"); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, "life")
	if err != nil || len(md.Topics["life"].Partitions) != 4 {
		t.Fatalf("after CreatePartitions: %v %d partitions", err, len(md.Topics["life"].Partitions))
	}
	if r := rawProduce(t, cl, "life", 3, rawBatch(-1, -1, -1, "new partition")); r.ErrorCode != 0 {
		t.Fatalf("produce to the new partition: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	shrink, err := adm.UpdatePartitions(ctx, 1, "life")
	if err != nil || shrink["life"].Err == nil {
		t.Fatalf("shrinking: %v %v", err, shrink["life"].Err)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "life")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := rc.On("life", nil); err != nil || len(c.Configs) == 0 {
		t.Fatalf("describe configs: %v %+v", err, c)
	}

	del, err := adm.DeleteTopics(ctx, "life")
	if err != nil || del["life"].Err != nil {
		t.Fatalf("delete: %v %v", err, del["life"].Err)
	}
	if p := rawFetch(t, cl, "life", 1, 0, 0); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("fetch deleted: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	verifyDir(t, dir)

	b = startBroker(t, cfg)
	cl = newClient(t, b.Addr())
	md, err = kadm.NewClient(cl).Metadata(ctx)
	md.Topics.FilterInternal()
	if err != nil || len(md.Topics) != 0 {
		t.Fatalf("topics after restart: %v %v", err, md.Topics.Names())
	}
	createTopic(t, cl, "life", 2)
	if p := rawFetch(t, cl, "life", 1, 0, 0); p.ErrorCode != 0 || p.HighWatermark != 0 {
		t.Fatalf("re-created topic: %v high watermark %d", kerr.ErrorForCode(p.ErrorCode), p.HighWatermark)
	}
	produceSync(t, cl, "life", 1, "z")
	recs := consumeN(t, b.Addr(), "life", 1)
	if recs[0].Offset != 0 || string(recs[0].Value) != "z" {
		t.Fatalf("re-created topic holds %q at %d", recs[0].Value, recs[0].Offset)
	}
}

// TestAutoCreate creates unknown topics on Metadata and Produce.
func TestAutoCreate(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.AutoCreateTopics = true
	cfg.DefaultPartitions = 3
	b := startBroker(t, cfg)
	cl := newClient(t, b.Addr(), kgo.AllowAutoTopicCreation())
	produceSync(t, cl, "auto", 2, "hello")
	md, err := kadm.NewClient(cl).Metadata(testCtx(t), "auto")
	if err != nil || len(md.Topics["auto"].Partitions) != 3 {
		t.Fatalf("auto-created: %v %+v", err, md.Topics["auto"])
	}
}

// TestAutoCreateBounded: a Metadata request naming 1,000 unknown topics
// creates maxAutoCreatePerRequest of them and answers the rest
// UNKNOWN_TOPIC_OR_PARTITION; a Produce does the same and says why.
func TestAutoCreateBounded(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.AutoCreateTopics = true
	b := startBroker(t, cfg)
	c := dialRaw(t, b.Addr())
	created := func() int { return len(b.meta.Topics()) - 2 } // less __consumer_offsets and __transaction_state

	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	md.AllowAutoTopicCreation = true
	for i := 0; i < 1000; i++ {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(fmt.Sprintf("meta-%d", i))
		md.Topics = append(md.Topics, rt)
	}
	resp, ok := c.roundTrip(md)
	if !ok {
		t.Fatal("Metadata naming 1,000 topics closed the connection")
	}
	codes := map[int16]int{}
	for _, rt := range resp.(*kmsg.MetadataResponse).Topics {
		codes[rt.ErrorCode]++
	}
	if want := (map[int16]int{0: maxAutoCreatePerRequest, kerr.UnknownTopicOrPartition.Code: 1000 - maxAutoCreatePerRequest}); !maps.Equal(codes, want) {
		t.Fatalf("Metadata naming 1,000 unknown topics answered %v (error code: topics), want %v", codes, want)
	}
	if n := created(); n != maxAutoCreatePerRequest {
		t.Fatalf("%d topics created by one Metadata request, want %d", n, maxAutoCreatePerRequest)
	}

	pr := kmsg.NewPtrProduceRequest()
	pr.SetVersion(9)
	pr.Acks = 1
	pr.TimeoutMillis = 10000
	for i := 0; i < maxAutoCreatePerRequest+50; i++ {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = fmt.Sprintf("produce-%d", i)
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = rawBatch(-1, -1, -1, "v")
		rt.Partitions = append(rt.Partitions, rp)
		pr.Topics = append(pr.Topics, rt)
	}
	presp, ok := c.roundTrip(pr)
	if !ok {
		t.Fatal("Produce to 150 unknown topics closed the connection")
	}
	var stored, limited int
	for _, rt := range presp.(*kmsg.ProduceResponse).Topics {
		switch p := rt.Partitions[0]; {
		case p.ErrorCode == 0:
			stored++
		case p.ErrorCode == kerr.UnknownTopicOrPartition.Code && p.ErrorMessage != nil && strings.Contains(*p.ErrorMessage, "at most 100 topics"):
			limited++
		default:
			t.Fatalf("produce to %s: %v %v", rt.Topic, kerr.ErrorForCode(p.ErrorCode), p.ErrorMessage)
		}
	}
	if stored != maxAutoCreatePerRequest || limited != 50 {
		t.Fatalf("Produce to 150 unknown topics: %d stored, %d refused by the bound; want 100 and 50", stored, limited)
	}
	if n := created(); n != 2*maxAutoCreatePerRequest {
		t.Fatalf("%d topics after a Metadata and a Produce, want %d", n, 2*maxAutoCreatePerRequest)
	}
}

// TestPipelining sends several requests before reading: the answers come in
// request order.
func TestPipelining(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "pipe", 1)
	c := dialRaw(t, b.Addr())
	var frames []byte
	for i := 0; i < 10; i++ {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(int16(i % 13))
		frames = append(frames, c.frame(req)...)
	}
	if err := c.write(frames); err != nil {
		t.Fatal(err)
	}
	last := c.corr
	for i := 0; i < 10; i++ {
		c.corr = last - 9 + int32(i)
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(int16(i % 13))
		if !c.readResponse(resp) {
			t.Fatalf("response %d missing", i)
		}
	}
}

// TestCloseEndsLongPoll closes the broker while a fetch waits: the fetch
// is answered and Close completes.
func TestCloseEndsLongPoll(t *testing.T) {
	b, err := Open(testConfig(t, t.TempDir()), testStore())
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "closing", 1)
	c := dialRaw(t, b.Addr())
	if err := c.write(c.frame(fetchReq("closing", 0, time.Minute, 0))); err != nil {
		t.Fatal(err)
	}
	waitParked(t, b, 1)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(11)
	if !c.readResponse(resp) {
		t.Fatal("long poll not answered on Close")
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
		t.Fatalf("long poll answered %v with %d bytes", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
	}
}

// TestStopAcceptingRefusesNewConnections: once a broker stops accepting
// (a leader about to hand its lease over), a dial is refused, which a
// client retries elsewhere, while an open connection is still answered;
// Close then completes without error. Before, a connection dialed in the
// shutdown was accepted and closed unanswered, an EOF on its first read
// that franz-go fails records for.
func TestStopAcceptingRefusesNewConnections(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	open := dialRaw(t, b.Addr())
	// Answered once, so the broker has accepted it: a connection the
	// kernel completed but the broker had not accepted yet goes with the
	// listener.
	if _, ok := open.roundTrip(kmsg.NewPtrApiVersionsRequest()); !ok {
		t.Fatal("a new connection was not answered")
	}
	b.StopAccepting()
	b.StopAccepting() // idempotent, and Close after it too
	if nc, err := net.DialTimeout("tcp", b.Addr(), 5*time.Second); err == nil {
		nc.Close()
		t.Fatal("a broker that stopped accepting took a new connection")
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial after StopAccepting: %v, want connection refused", err)
	}
	if _, ok := open.roundTrip(kmsg.NewPtrApiVersionsRequest()); !ok {
		t.Fatal("an open connection was not answered after StopAccepting")
	}
}

// TestMaxConnections closes connections beyond the limit at once.
func TestMaxConnections(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.MaxConnections = 1
	b := startBroker(t, cfg)
	first := dialRaw(t, b.Addr())
	if _, ok := first.roundTrip(kmsg.NewPtrApiVersionsRequest()); !ok {
		t.Fatal("first connection refused")
	}
	dialRaw(t, b.Addr()).expectClosed()
	if _, ok := first.roundTrip(kmsg.NewPtrApiVersionsRequest()); !ok {
		t.Fatal("first connection harmed")
	}
}
