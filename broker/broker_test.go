package broker

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/commitlog"
)

// TestProduceConsumeManyPartitions produces keyed records with headers to
// many partitions and reads every one back, in order per partition.
func TestProduceConsumeManyPartitions(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, testConfig(t, dir))
	const topic, partitions, n = "many", 24, 2400
	cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic(topic))
	createTopic(t, cl, topic, partitions)

	ctx := testCtx(t)
	for i := 0; i < n; i++ {
		r := &kgo.Record{
			Partition: int32(i % partitions),
			Key:       []byte(fmt.Sprintf("k%d", i)),
			Value:     []byte(fmt.Sprintf("v%d", i)),
			Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprintf("%d", i))}, {Key: "empty"}},
		}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	next := make(map[int32]int64)
	for _, r := range consumeN(t, b.Addr(), topic, n) {
		var i int
		fmt.Sscanf(string(r.Value), "v%d", &i)
		if r.Partition != int32(i%partitions) || string(r.Key) != fmt.Sprintf("k%d", i) {
			t.Fatalf("record %q in partition %d with key %q", r.Value, r.Partition, r.Key)
		}
		if len(r.Headers) != 2 || r.Headers[0].Key != "h" || string(r.Headers[0].Value) != fmt.Sprint(i) || r.Headers[1].Key != "empty" {
			t.Fatalf("record %q headers %+v", r.Value, r.Headers)
		}
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition]++
	}
	for p := int32(0); p < partitions; p++ {
		if next[p] != n/partitions {
			t.Fatalf("partition %d has %d records, want %d", p, next[p], n/partitions)
		}
	}
}

// TestAcks produces with acks 0, 1 and -1 (the last against a sync-flushing
// broker) and reads everything back.
func TestAcks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		acks  kgo.Acks
		flush commitlog.FlushMode
	}{
		{"acks0", kgo.NoAck(), commitlog.FlushAsync},
		{"acks1", kgo.LeaderAck(), commitlog.FlushAsync},
		{"acksAll", kgo.AllISRAcks(), commitlog.FlushSync},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			so := testStore()
			so.CommitLog.FlushMode = tc.flush
			b := startBrokerWith(t, cfg, so)
			opts := []kgo.Opt{kgo.DefaultProduceTopic("acks"), kgo.RequiredAcks(tc.acks)}
			if tc.acks != kgo.AllISRAcks() {
				opts = append(opts, kgo.DisableIdempotentWrite())
			}
			cl := newClient(t, b.Addr(), opts...)
			createTopic(t, cl, "acks", 3)
			ctx := testCtx(t)
			const n = 300
			for i := 0; i < n; i++ {
				cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce: %v", err)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			seen := make(map[string]bool)
			for _, r := range consumeN(t, b.Addr(), "acks", n) {
				seen[string(r.Value)] = true
			}
			if len(seen) != n {
				t.Fatalf("%d distinct records, want %d", len(seen), n)
			}
		})
	}
}

// TestCompressedBatches stores batches of every codec as sent and serves
// them back: the client decompresses them, and a raw fetch shows the codec
// bits of the stored batch untouched.
func TestCompressedBatches(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	for i, codec := range []struct {
		name  string
		codec kgo.CompressionCodec
		attr  int16
	}{
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	} {
		t.Run(codec.name, func(t *testing.T) {
			topic := "compressed-" + codec.name
			cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec.codec), kgo.ProducerLinger(50*time.Millisecond))
			createTopic(t, cl, topic, 1)
			ctx := testCtx(t)
			const n = 200
			value := bytes.Repeat([]byte{byte('a' + i)}, 300)
			for j := 0; j < n; j++ {
				cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce: %v", err)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			for _, r := range consumeN(t, b.Addr(), topic, n) {
				if !bytes.Equal(r.Value, value) {
					t.Fatalf("offset %d value differs", r.Offset)
				}
			}
			attrs := fetchBatchAttributes(t, b.Addr(), topic, 0)
			if len(attrs) == 0 {
				t.Fatal("no stored batches")
			}
			for _, a := range attrs {
				if a&attrCompressionMask != codec.attr {
					t.Fatalf("stored batch attributes %#x, want codec %d", a, codec.attr)
				}
			}
		})
	}
}

// TestOffsetsByTimestamp lists offsets earliest, latest and by time.
func TestOffsetsByTimestamp(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic("ts"))
	createTopic(t, cl, "ts", 1)
	ctx := testCtx(t)
	produceSync(t, cl, "ts", 0, "a", "b", "c")
	// Store timestamps have millisecond resolution: mid is later than the
	// first group's, and the second group's are at least mid.
	mid := nextMillisecond(t)
	produceSync(t, cl, "ts", 0, "d", "e")

	adm := kadm.NewClient(cl)
	check := func(name string, l kadm.ListedOffsets, err error, want int64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o, ok := l.Lookup("ts", 0)
		if !ok || o.Err != nil || o.Offset != want {
			t.Fatalf("%s: %+v, want offset %d", name, o, want)
		}
	}
	l, err := adm.ListStartOffsets(ctx, "ts")
	check("earliest", l, err, 0)
	l, err = adm.ListEndOffsets(ctx, "ts")
	check("latest", l, err, 5)
	l, err = adm.ListOffsetsAfterMilli(ctx, mid, "ts")
	check("after mid", l, err, 3)
	if o, _ := l.Lookup("ts", 0); o.Timestamp < mid {
		t.Fatalf("timestamp %d of offset 3 is before %d", o.Timestamp, mid)
	}
	l, err = adm.ListOffsetsAfterMilli(ctx, time.Now().Add(time.Hour).UnixMilli(), "ts")
	if err != nil {
		t.Fatal(err)
	}
	// Nothing at or after a future time: Kafka answers -1, which kadm
	// reports as the end offset.
	if o, _ := l.Lookup("ts", 0); o.Err != nil || (o.Offset != -1 && o.Offset != 5) {
		t.Fatalf("future time: %+v", o)
	}
}

// produceSync produces values to one partition, one batch each, and waits.
func produceSync(t testing.TB, cl *kgo.Client, topic string, partition int32, values ...string) {
	t.Helper()
	for _, v := range values {
		r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)}
		if err := cl.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
			t.Fatalf("produce %q: %v", v, err)
		}
	}
}

// TestRestartKeepsRecords closes and reopens the broker on its data
// directory: every record and offset is still there and producing goes on
// at the next offsets.
func TestRestartKeepsRecords(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	b, err := Open(cfg, testStore())
	if err != nil {
		t.Fatal(err)
	}
	const topic, partitions, n = "restart", 8, 800
	cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	createTopic(t, cl, topic, partitions)
	ctx := testCtx(t)
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint(i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	before := consumeN(t, b.Addr(), topic, n)
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	verifyDir(t, dir)

	b = startBroker(t, cfg)
	after := consumeN(t, b.Addr(), topic, n)
	key := func(r *kgo.Record) string { return fmt.Sprintf("%d/%d=%s", r.Partition, r.Offset, r.Value) }
	want := make(map[string]bool)
	for _, r := range before {
		want[key(r)] = true
	}
	for _, r := range after {
		if !want[key(r)] {
			t.Fatalf("after restart %s was not there before", key(r))
		}
	}
	cl = newClient(t, b.Addr())
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != n {
		t.Fatalf("end offsets sum to %d, want %d", total, n)
	}
	produceSync(t, cl, topic, 0, "more")
	e, _ := ends.Lookup(topic, 0)
	l, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if e2, _ := l.Lookup(topic, 0); e2.Offset != e.Offset+1 {
		t.Fatalf("end offset after one more record %d, want %d", e2.Offset, e.Offset+1)
	}
}

// TestAdminHTTP serves metrics and health.
func TestAdminHTTP(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic("m"))
	createTopic(t, cl, "m", 1)
	produceSync(t, cl, "m", 0, "x")
	get := func(path string) string {
		resp, err := http.Get("http://" + b.AdminAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", path, resp.Status)
		}
		return string(body)
	}
	if got := get("/healthz"); got != "ok\n" {
		t.Fatalf("/healthz: %q", got)
	}
	m := get("/metrics")
	if !regexp.MustCompile(`(?m)^unilog_connections [1-9]`).MatchString(m) {
		t.Fatalf("/metrics shows no open connection")
	}
	for _, want := range []string{
		`unilog_requests_total{api="Produce"}`,
		`unilog_request_duration_seconds_bucket{api="Produce"`,
		"unilog_produced_records_total 1",
		"unilog_commitlog_bytes",
		"unilog_dispatcher_lag_bytes",
		"unilog_dispatcher_lag_seconds",
		"unilog_log_write_failed 0",
		"unilog_fetch_watchers 0",
		"unilog_network_received_bytes_total",
	} {
		if !strings.Contains(m, want) {
			t.Fatalf("/metrics lacks %q", want)
		}
	}
}

// TestOffsetsByRecordTimestamp: a lookup by time compares the records' own
// timestamps (CreateTime, the batch's max timestamp), not the time the
// broker stored them: a record created an hour ago is not at or after
// "30 minutes ago" (the lookup used to answer its offset), and a batch
// whose timestamp goes back does not hide a later one that reaches the time.
func TestOffsetsByRecordTimestamp(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "created", 1)
	now := time.Now()
	for i, age := range []time.Duration{60 * time.Minute, 10 * time.Minute, 40 * time.Minute} {
		r := &kgo.Record{Topic: "created", Value: []byte{byte(i)}, Timestamp: now.Add(-age)}
		if err := cl.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		age    time.Duration
		offset int64
		ts     time.Duration // age of the timestamp answered
	}{
		{90 * time.Minute, 0, 60 * time.Minute},
		{60 * time.Minute, 0, 60 * time.Minute},
		{50 * time.Minute, 1, 10 * time.Minute},
		{30 * time.Minute, 1, 10 * time.Minute},
		{5 * time.Minute, -1, 0},
	} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "created"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = now.Add(-tc.age).UnixMilli()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		wantTS := int64(-1)
		if tc.offset >= 0 {
			wantTS = now.Add(-tc.ts).UnixMilli()
		}
		if p.ErrorCode != 0 || p.Offset != tc.offset || p.Timestamp != wantTS {
			t.Errorf("at %v ago: offset %d timestamp %d (%v), want %d at %d", tc.age, p.Offset, p.Timestamp, kerr.ErrorForCode(p.ErrorCode), tc.offset, wantTS)
		}
	}
}
