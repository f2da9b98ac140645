package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestKafkaClientValidate(t *testing.T) {
	ok := KafkaClient{Brokers: []string{"127.0.0.1:9092"}, Topic: "t", Acks: -1}
	for _, tc := range []struct {
		name string
		edit func(*KafkaClient)
		err  string
	}{
		{"defaults", func(*KafkaClient) {}, ""},
		{"zstd", func(c *KafkaClient) { c.Compression = "zstd" }, ""},
		{"none", func(c *KafkaClient) { c.Compression = "none" }, ""},
		{"unknown codec", func(c *KafkaClient) { c.Compression = "brotli" }, "compression"},
		{"no brokers", func(c *KafkaClient) { c.Brokers = nil }, "no brokers"},
		{"acks", func(c *KafkaClient) { c.Acks = 2 }, "acks"},
		{"transactional", func(c *KafkaClient) { c.Transactional = true }, ""},
		{"transactional acks 1", func(c *KafkaClient) { c.Transactional, c.Acks = true, 1 }, "transactions need acks -1"},
		{"negative commit interval", func(c *KafkaClient) { c.CommitInterval = -time.Second }, "commit interval"},
	} {
		c := ok
		tc.edit(&c)
		err := c.validate()
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}

// TestTransactionalProduce produces through transactional senders that
// commit every millisecond and reads the whole topic back read_committed,
// to the end of the log: every record once, and markers between them.
func TestTransactionalProduce(t *testing.T) {
	srv, err := StartServer(ServerConfig{System: SystemUnilog, Flush: "async", Dir: t.TempDir(), FileSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const parts, records = 3, 600
	tg, err := newKafkaTarget(KafkaClient{Brokers: []string{srv.Addr()}, Topic: benchTopic, Acks: -1, Transactional: true, CommitInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tg.Prepare(ctx, parts); err != nil {
		t.Fatal(err)
	}
	r, err := produce(ctx, tg, Load{Partitions: parts, MessageSize: 64, Records: records, Producers: 2})
	if err != nil || r.Records != records || r.FirstError != "" {
		t.Fatalf("produce: %v: %+v", err, r)
	}

	ends, err := tg.admin.ListEndOffsets(ctx, benchTopic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("end offsets: %v %v", err, ends.Error())
	}
	var offsets int64
	ends.Each(func(o kadm.ListedOffset) { offsets += o.Offset })
	// The producers claim records from one counter, so one of them may
	// send to only some partitions (or none): every partition holds
	// records, so a transaction ended in each.
	if markers := offsets - records; markers < parts {
		t.Errorf("%d offsets for %d records: %d markers, want at least one per partition", offsets, records, markers)
	}
	// A record after the transactions in every partition: read_committed
	// reaches it only past all of them.
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.DefaultProduceTopic(benchTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeTopics(benchTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for p := range int32(parts) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("end")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var got int
	for last := 0; last < parts; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d records and %d of the %d last ones: %v", got, last, parts, err)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "end" {
				last++
			} else {
				got++
			}
		})
	}
	if got != records {
		t.Errorf("read_committed read %d records, produced %d", got, records)
	}
}
