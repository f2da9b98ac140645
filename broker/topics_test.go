package broker

import (
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
	b, err := Start(cfg)
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
	b, err := Start(testConfig(t, t.TempDir()))
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
