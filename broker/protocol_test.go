package broker

import (
	"encoding/binary"
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/store"
)

// rawFetch fetches one partition from offset with kmsg through a kgo
// client, waiting at most maxWait for data.
func rawFetch(t testing.TB, cl *kgo.Client, topic string, partition int32, offset int64, maxWait time.Duration) *kmsg.FetchResponseTopicPartition {
	t.Helper()
	resp, err := fetchReq(topic, offset, maxWait, partition).RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response shape: %+v", resp)
	}
	return &resp.Topics[0].Partitions[0]
}

// fetchReq asks for partitions of topic from offset, waiting up to maxWait
// for a byte; version 11 for raw connections (a client picks its own).
func fetchReq(topic string, offset int64, maxWait time.Duration, partitions ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(maxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p
		rp.FetchOffset = offset
		rp.PartitionMaxBytes = 10 << 20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// batches splits fetched record bytes into batches.
func batches(t testing.TB, b []byte) []kmsg.RecordBatch {
	t.Helper()
	var out []kmsg.RecordBatch
	for len(b) > 0 {
		if len(b) < 12 {
			t.Fatalf("%d trailing bytes", len(b))
		}
		n := 12 + int(binary.BigEndian.Uint32(b[8:]))
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:n]); err != nil {
			t.Fatalf("batch: %v", err)
		}
		out = append(out, rb)
		b = b[n:]
	}
	return out
}

func fetchBatchAttributes(t testing.TB, addr, topic string, partition int32) []int16 {
	t.Helper()
	cl := newClient(t, addr)
	var attrs []int16
	for _, rb := range batches(t, rawFetch(t, cl, topic, partition, 0, 0).RecordBatches) {
		attrs = append(attrs, rb.Attributes)
	}
	return attrs
}

func rawProduce(t testing.TB, cl *kgo.Client, topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	resp, err := produceReq(topic, partition, -1, 10*time.Second, batch).RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return resp.Topics[0].Partitions[0]
}

// startIdempotent starts a broker the test closes itself, with topic idem
// of one partition and a producer id for it.
func startIdempotent(t testing.TB, cfg Config, so store.Options) (*Broker, *kgo.Client, int64, int16) {
	t.Helper()
	b, err := Open(cfg, so)
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "idem", 1)
	pid, epoch := initProducerID(t, cl)
	return b, cl, pid, epoch
}

func initProducerID(t testing.TB, cl *kgo.Client) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("InitProducerID: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// TestIdempotentRetry sends the same idempotent batch twice: it is stored
// once and the retry is answered with the original offset, also after a
// restart (the sequence state is rebuilt from the stored batches). A gap
// in the sequence is refused.
func TestIdempotentRetry(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	b, cl, pid, epoch := startIdempotent(t, cfg, testStore())

	first := rawBatch(pid, epoch, 0, "a", "b")
	if r := rawProduce(t, cl, "idem", 0, first); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("first: %v base %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
	}
	second := rawBatch(pid, epoch, 2, "c")
	if r := rawProduce(t, cl, "idem", 0, second); r.ErrorCode != 0 || r.BaseOffset != 2 {
		t.Fatalf("second: %v base %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
	}
	if r := rawProduce(t, cl, "idem", 0, first); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("retry of first: %v base %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
	}
	if r := rawProduce(t, cl, "idem", 0, rawBatch(pid, epoch, 7, "gap")); r.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence gap: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if p := rawFetch(t, cl, "idem", 0, 0, 0); p.HighWatermark != 3 {
		t.Fatalf("high watermark %d after duplicates, want 3", p.HighWatermark)
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = startBroker(t, cfg)
	cl = newClient(t, b.Addr())
	if r := rawProduce(t, cl, "idem", 0, second); r.ErrorCode != 0 || r.BaseOffset != 2 {
		t.Fatalf("retry of second after restart: %v base %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
	}
	if r := rawProduce(t, cl, "idem", 0, rawBatch(pid, epoch, 3, "d")); r.ErrorCode != 0 || r.BaseOffset != 3 {
		t.Fatalf("next after restart: %v base %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
	}
	if pid2, _ := initProducerID(t, cl); pid2 == pid {
		t.Fatalf("producer id %d handed out twice", pid)
	}
	var values []string
	for _, r := range consumeN(t, b.Addr(), "idem", 4) {
		values = append(values, string(r.Value))
	}
	if got := fmtTrim(values); got != "a b c d" {
		t.Fatalf("stored %q", got)
	}
}

func fmtTrim(v []string) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s
}

// TestLongPollWakeup parks a fetch at the end of a partition with a long
// max wait; a produce must wake it with the new record. The produce is sent
// only once the fetch is registered, so the answer comes from the wake-up,
// not from a first read that already found the record.
func TestLongPollWakeup(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "poll", 2)
	produceSync(t, cl, "poll", 1, "old")

	got := make(chan *kmsg.FetchResponseTopicPartition, 1)
	go func() { got <- rawFetch(t, cl, "poll", 1, 1, 30*time.Second) }()
	waitParked(t, b, 1)
	produceSync(t, cl, "poll", 1, "new")
	p := <-got
	if p.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(p.ErrorCode))
	}
	bs := batches(t, p.RecordBatches)
	if len(bs) != 1 || bs[0].FirstOffset != 1 || p.HighWatermark != 2 {
		t.Fatalf("woken fetch returned %d batches, high watermark %d", len(bs), p.HighWatermark)
	}
}

// TestFetchLimits returns at least one whole batch even when it exceeds the
// partition limit, and honours the limit after it.
func TestFetchLimits(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "limits", 1)
	big := make([]byte, 4000)
	for i := 0; i < 3; i++ {
		if r := rawProduce(t, cl, "limits", 0, rawBatch(-1, -1, -1, string(big))); r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxBytes = 100
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "limits"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = 1
	rp.PartitionMaxBytes = 100
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	bs := batches(t, resp.Topics[0].Partitions[0].RecordBatches)
	if len(bs) != 1 || bs[0].FirstOffset != 1 {
		t.Fatalf("got %d batches", len(bs))
	}
	for _, off := range []int64{4, -1} {
		if p := rawFetch(t, cl, "limits", 0, off, 0); p.ErrorCode != kerr.OffsetOutOfRange.Code {
			t.Fatalf("offset %d: %v", off, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	if p := rawFetch(t, cl, "limits", 0, 3, 0); p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 3 {
		t.Fatalf("fetch at the end: %v, %d bytes", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
	}
}

// TestBadInput feeds the broker garbage, broken batches and requests for
// things that do not exist. Each is answered with Kafka's error or a closed
// connection; afterwards a healthy client works and the data verifies.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.MaxMessageBytes = 2048
	cfg.MaxRequestBytes = 1 << 20
	b, err := Open(cfg, testStore())
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic("good"))
	createTopic(t, cl, "good", 2)
	produceSync(t, cl, "good", 0, "before")

	rng := rand.New(rand.NewSource(1))
	t.Run("random frames", func(t *testing.T) {
		for i := 0; i < 50; i++ {
			c := dialRaw(t, b.Addr())
			frame := make([]byte, 4+rng.Intn(200))
			rng.Read(frame)
			binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
			if err := c.write(frame); err != nil {
				continue
			}
			// Some random bytes are a valid request; garbage must close.
			c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			var one [1]byte
			c.nc.Read(one[:])
		}
	})
	t.Run("truncated frame", func(t *testing.T) {
		c := dialRaw(t, b.Addr())
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(9)
		f := c.frame(req)
		c.write(f[:len(f)-1])
		c.nc.(interface{ CloseWrite() error }).CloseWrite()
		c.expectClosed()
	})
	t.Run("frame size lies", func(t *testing.T) {
		c := dialRaw(t, b.Addr())
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(9)
		f := c.frame(req)
		binary.BigEndian.PutUint32(f, uint32(len(f)-4-3))
		c.write(f)
		c.expectClosed()
	})
	t.Run("oversized frame", func(t *testing.T) {
		c := dialRaw(t, b.Addr())
		c.write([]byte{0x7f, 0, 0, 0})
		c.expectClosed()
	})
	t.Run("unknown api key", func(t *testing.T) {
		c := dialRaw(t, b.Addr())
		c.write([]byte{0, 0, 0, 10, 0x7f, 0x7f, 0, 0, 0, 0, 0, 1, 0xff, 0xff})
		c.expectClosed()
	})
	t.Run("wrong crc", func(t *testing.T) {
		batch := rawBatch(-1, -1, -1, "x")
		batch[len(batch)-1] ^= 0xff
		if r := rawProduce(t, cl, "good", 0, batch); r.ErrorCode != kerr.CorruptMessage.Code {
			t.Fatalf("got %v", kerr.ErrorForCode(r.ErrorCode))
		}
	})
	t.Run("batch length lies", func(t *testing.T) {
		batch := rawBatch(-1, -1, -1, "x")
		binary.BigEndian.PutUint32(batch[8:], uint32(len(batch)))
		if r := rawProduce(t, cl, "good", 0, batch); r.ErrorCode != kerr.CorruptMessage.Code {
			t.Fatalf("got %v", kerr.ErrorForCode(r.ErrorCode))
		}
	})
	t.Run("oversized batch", func(t *testing.T) {
		if r := rawProduce(t, cl, "good", 0, rawBatch(-1, -1, -1, string(make([]byte, 4096)))); r.ErrorCode != kerr.MessageTooLarge.Code {
			t.Fatalf("got %v", kerr.ErrorForCode(r.ErrorCode))
		}
	})
	t.Run("unknown topic and partition", func(t *testing.T) {
		for _, tp := range []struct {
			topic string
			p     int32
		}{{"nope", 0}, {"good", 2}, {"good", -1}} {
			if r := rawProduce(t, cl, tp.topic, tp.p, rawBatch(-1, -1, -1, "x")); r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("produce %s/%d: %v", tp.topic, tp.p, kerr.ErrorForCode(r.ErrorCode))
			}
			if p := rawFetch(t, cl, tp.topic, tp.p, 0, 0); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("fetch %s/%d: %v", tp.topic, tp.p, kerr.ErrorForCode(p.ErrorCode))
			}
		}
		req := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("nope")
		req.Topics = append(req.Topics, mt)
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("metadata: %v %+v", err, resp)
		}
	})
	t.Run("unsupported versions", func(t *testing.T) {
		c := dialRaw(t, b.Addr())
		av := kmsg.NewPtrApiVersionsRequest()
		av.SetVersion(4)
		f := c.frame(av)
		binary.BigEndian.PutUint16(f[6:], 99)
		c.write(f)
		resp := kmsg.NewPtrApiVersionsResponse()
		if !c.readResponse(resp) {
			t.Fatal("ApiVersions v99: connection closed")
		}
		if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != len(apis) {
			t.Fatalf("ApiVersions v99: %v with %d keys", kerr.ErrorForCode(resp.ErrorCode), len(resp.ApiKeys))
		}
		acls := kmsg.NewPtrDescribeACLsRequest()
		r, ok := c.roundTrip(acls)
		if !ok || r.(*kmsg.DescribeACLsResponse).ErrorCode != kerr.UnsupportedVersion.Code {
			t.Fatalf("DescribeACLs: answered %v", ok)
		}
		// FindCoordinator v6 (share groups) is past the table; v4+ carries
		// the error per coordinator key.
		fc6 := kmsg.NewPtrFindCoordinatorRequest()
		fc6.SetVersion(6)
		fc6.CoordinatorKeys = []string{"g1", "g2"}
		r, ok = c.roundTrip(fc6)
		if !ok || len(r.(*kmsg.FindCoordinatorResponse).Coordinators) != 2 || r.(*kmsg.FindCoordinatorResponse).Coordinators[1].ErrorCode != kerr.UnsupportedVersion.Code {
			t.Fatalf("FindCoordinator v6: answered %v", ok)
		}
		// Fetch v3 predates record batches and its response has no
		// error code to carry UNSUPPORTED_VERSION: Kafka closes.
		fv3 := kmsg.NewPtrFetchRequest()
		fv3.SetVersion(3)
		if _, ok := c.roundTrip(fv3); ok {
			t.Fatal("Fetch v3 answered")
		}
	})
	t.Run("invalid topic names", func(t *testing.T) {
		req := kmsg.NewPtrCreateTopicsRequest()
		for _, name := range []string{"", ".", "..", "a/b", string(make([]byte, 250))} {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic = name
			rt.NumPartitions = 1
			rt.ReplicationFactor = 1
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range resp.Topics {
			if rt.ErrorCode != kerr.InvalidTopicException.Code {
				t.Fatalf("topic %q: %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
			}
		}
	})

	produceSync(t, cl, "good", 1, "after")
	recs := consumeN(t, b.Addr(), "good", 2)
	if string(recs[0].Value)+string(recs[1].Value) != "beforeafter" && string(recs[1].Value)+string(recs[0].Value) != "beforeafter" {
		t.Fatalf("healthy client read %q %q", recs[0].Value, recs[1].Value)
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	verifyDir(t, dir)
}
