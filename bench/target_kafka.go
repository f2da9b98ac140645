package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaClient is how the Kafka-protocol load talks to a broker: franz-go,
// with a producer's usual knobs.
type KafkaClient struct {
	Brokers    []string
	Topic      string
	Acks       int           // 0, 1 or -1 (all)
	Linger     time.Duration // producer linger
	BatchBytes int           // producer batch.max.bytes; 0: franz-go's default
	// MaxInFlight bounds the unacknowledged records of one producer
	// (franz-go's MaxBufferedRecords), the bound JetStream's senders get
	// too, so that no system wins by holding more in flight; 0:
	// DefaultMaxInFlight.
	MaxInFlight int
	// Compression is the producer's batch codec: "" or none, gzip,
	// snappy, lz4, zstd (the broker decompresses to validate each batch).
	Compression string
	// Transactional gives every producer its own transactional id and
	// puts its records in transactions committed every CommitInterval
	// (0: DefaultCommitInterval), see txnSender; the read-back is then
	// read_committed. It needs Acks -1.
	Transactional  bool
	CommitInterval time.Duration
}

// codecs are the batch compressions a KafkaClient may produce with.
var codecs = map[string]kgo.CompressionCodec{
	"": kgo.NoCompression(), "none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

// DefaultMaxInFlight is what JetStream's senders always had: with
// franz-go's own default of 50,000 per producer, four senders make
// nats-server refuse publishes (429 too many requests).
const DefaultMaxInFlight = 4096

func (c KafkaClient) validate() error {
	switch {
	case len(c.Brokers) == 0:
		return errors.New("bench: no brokers")
	case c.Topic == "":
		return errors.New("bench: no topic")
	case c.Acks != 0 && c.Acks != 1 && c.Acks != -1:
		return fmt.Errorf("bench: acks %d: want 0, 1 or -1", c.Acks)
	case c.Linger < 0 || c.BatchBytes < 0 || c.MaxInFlight < 0 || c.CommitInterval < 0:
		return errors.New("bench: negative linger, batch bytes, records in flight or commit interval")
	case c.Transactional && c.Acks != -1:
		return fmt.Errorf("bench: transactions need acks -1, not %d", c.Acks)
	}
	if _, ok := codecs[c.Compression]; !ok {
		return fmt.Errorf("bench: compression %q: want none, gzip, snappy, lz4 or zstd", c.Compression)
	}
	return nil
}

type kafkaTarget struct {
	cfg   KafkaClient
	admin *kadm.Client
	txns  atomic.Int64 // transactional ids given to senders
	hooks *requestHooks
}

func newKafkaTarget(cfg KafkaClient) (*kafkaTarget, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		return nil, fmt.Errorf("bench: kafka client: %w", err)
	}
	return &kafkaTarget{cfg: cfg, admin: kadm.NewClient(cl), hooks: newRequestHooks()}, nil
}

func (k *kafkaTarget) Prepare(ctx context.Context, partitions int) error {
	_, err := k.admin.CreateTopic(ctx, int32(partitions), 1, nil, k.cfg.Topic)
	if err == nil {
		return nil
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("bench: create topic %s: %w", k.cfg.Topic, err)
	}
	td, err := k.admin.ListTopics(ctx, k.cfg.Topic)
	if err != nil {
		return fmt.Errorf("bench: describe topic %s: %w", k.cfg.Topic, err)
	}
	if n := len(td[k.cfg.Topic].Partitions); n != partitions {
		return fmt.Errorf("bench: topic %s exists with %d partitions, not %d", k.cfg.Topic, n, partitions)
	}
	return nil
}

func (k *kafkaTarget) NewSender() (sender, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(k.cfg.Brokers...),
		kgo.DefaultProduceTopic(k.cfg.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(k.cfg.Linger),
		kgo.ProducerBatchCompression(codecs[k.cfg.Compression]),
		kgo.MaxBufferedRecords(cmp.Or(k.cfg.MaxInFlight, DefaultMaxInFlight)),
		kgo.WithHooks(k.hooks),
	}
	switch k.cfg.Acks {
	case -1:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case 1:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case 0:
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	}
	if k.cfg.BatchBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(k.cfg.BatchBytes)))
	}
	if k.cfg.Transactional {
		id := fmt.Sprintf("bench-%d-%d", os.Getpid(), k.txns.Add(1))
		opts = append(opts, kgo.TransactionalID(id))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("bench: kafka producer: %w", err)
	}
	if k.cfg.Transactional {
		return &txnSender{cl: cl, interval: cmp.Or(k.cfg.CommitInterval, DefaultCommitInterval)}, nil
	}
	return kafkaSender{cl}, nil
}

type kafkaSender struct{ cl *kgo.Client }

func (s kafkaSender) Send(ctx context.Context, partition int32, value []byte, rec acker) error {
	k := &kafkaRecord{Context: ctx, ack: rec}
	k.rec = kgo.Record{Partition: partition, Value: value, Context: k}
	s.cl.Produce(ctx, &k.rec, kafkaPromise)
	return ctx.Err()
}

func (s kafkaSender) Flush(ctx context.Context) error { return s.cl.Flush(ctx) }
func (s kafkaSender) Close()                          { s.cl.Close() }

func (k *kafkaTarget) NewReceiver(ctx context.Context, partitions int) (receiver, int64, error) {
	starts, err := k.admin.ListStartOffsets(ctx, k.cfg.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, 0, fmt.Errorf("bench: start offsets of %s: %w", k.cfg.Topic, err)
	}
	ends, err := k.admin.ListEndOffsets(ctx, k.cfg.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, 0, fmt.Errorf("bench: end offsets of %s: %w", k.cfg.Topic, err)
	}
	from := map[int32]kgo.Offset{}
	var stored int64
	starts.Each(func(o kadm.ListedOffset) {
		from[o.Partition] = kgo.NewOffset().At(o.Offset)
		if e, ok := ends.Lookup(k.cfg.Topic, o.Partition); ok {
			stored += e.Offset - o.Offset
		}
	})
	if partitions > 0 && len(from) != partitions {
		return nil, 0, fmt.Errorf("bench: topic %s has %d partitions, not %d", k.cfg.Topic, len(from), partitions)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(k.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{k.cfg.Topic: from}),
		kgo.FetchMaxBytes(64 << 20),
	}
	if k.cfg.Transactional {
		// stored then counts the markers too: the caller counts records.
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, 0, fmt.Errorf("bench: kafka consumer: %w", err)
	}
	return kafkaReceiver{cl}, stored, nil
}

type kafkaReceiver struct{ cl *kgo.Client }

func (r kafkaReceiver) Poll(ctx context.Context, fn func([]byte)) error {
	fs := r.cl.PollFetches(ctx)
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, fe := range fs.Errors() {
		return fmt.Errorf("bench: fetch %s-%d: %w", fe.Topic, fe.Partition, fe.Err)
	}
	fs.EachRecord(func(r *kgo.Record) { fn(r.Value) })
	return nil
}

func (r kafkaReceiver) Close() { r.cl.Close() }

func (k *kafkaTarget) Close() { k.admin.Close() }
