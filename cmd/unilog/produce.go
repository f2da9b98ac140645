package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

// maxProduceLine bounds one input line; records beyond the producer's batch
// limit are rejected by the client anyway, this only stops a missing newline
// in a huge file from eating memory.
const maxProduceLine = 64 << 20

func produceCommand() *cli.Command {
	return &cli.Command{
		Name:  "produce",
		Usage: "send lines from stdin or a file as records, one record per line",
		Description: `Every input line (without its LF or CR LF) becomes one record; empty lines are
empty records.

Keys: --key K gives every record the key K. With --parse-key each line is split at
the first --key-separator (default a tab) into key and value; a line without the
separator is a record without a key.

Partition: --partition N sends everything to partition N. Otherwise a record with
a key goes to murmur2(key) mod partitions, exactly as the Java client and
librdkafka's murmur2 partitioner place it, and records without a key go
round-robin over the partitions (--partitioner sticky fills one partition's batch
before moving on, which gives bigger batches).

Order: with --parse-key, lines read ahead together (up to 256Ki lines or 32 MiB
of a file; what has arrived of a pipe or terminal) go to the client grouped by
partition when every one has a key, so that each partition's records travel in
one batch. Each partition's records keep their input order; records of
different partitions may be sent in another order than the input's.

A summary (records, bytes of keys and values, partitions, errors, elapsed) goes to
stderr. The command fails if any record failed.`,
		ArgsUsage: " ",
		Flags: append(kafkaClientFlags(),
			&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Required: true, Usage: "topic `NAME`"},
			&cli.IntFlag{Name: "partition", Aliases: []string{"p"}, Value: -1, DefaultText: "by key, else round-robin", Usage: "send every record to partition `N`"},
			&cli.StringFlag{Name: "key", Aliases: []string{"k"}, Usage: "key `K` for every record"},
			&cli.BoolFlag{Name: "parse-key", Aliases: []string{"K"}, Usage: "split each line into key, separator, value"},
			&cli.StringFlag{Name: "key-separator", Value: `\t`, DefaultText: "tab", Usage: "separator for --parse-key, shell escapes allowed ('\\t', '\\x00')"},
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Value: "-", Usage: "read lines from `FILE` (- is stdin)"},
			&cli.StringFlag{Name: "acks", Value: "all", Usage: "all (wait for the durable, replicated write), 1 (leader append) or 0 (none)"},
			&cli.StringFlag{Name: "compression", Aliases: []string{"z"}, Value: "none", Usage: "none, gzip, snappy, lz4 or zstd"},
			&cli.StringFlag{Name: "partitioner", Value: "round-robin", Usage: "for records without a key: round-robin or sticky"},
			&cli.GenericFlag{Name: "header", Value: &kvFlag{}, Usage: "header `KEY=VALUE` on every record (repeatable)"},
			// Hidden: for finding where the client's CPU goes (issue 19),
			// which a short-lived command offers no pprof port for.
			&cli.StringFlag{Name: "cpu-profile", Hidden: true, Usage: "write a CPU profile of the whole run to `FILE`"},
		),
		Action: runProduce,
	}
}

// produceOptions is the validated form of the produce flags.
type produceOptions struct {
	topic     string
	partition int32 // -1: chosen by the partitioner
	key       []byte
	parseKey  bool
	separator []byte
	headers   []kgo.RecordHeader
	opts      []kgo.Opt
	// partitions is the topic's partition count as the partitioner last
	// saw it placing a keyed record (produce_group.go).
	partitions *atomic.Int64
}

func parseProduceFlags(c *cli.Context) (*produceOptions, error) {
	po := &produceOptions{topic: c.String("topic"), partition: -1, partitions: new(atomic.Int64)}
	if c.IsSet("key") && c.Bool("parse-key") {
		return nil, errors.New("--key and --parse-key exclude each other")
	}
	if c.IsSet("key") {
		po.key = []byte(c.String("key"))
	}
	po.parseKey = c.Bool("parse-key")
	sep, err := parseSeparator(c.String("key-separator"))
	if err != nil {
		return nil, fmt.Errorf("--key-separator: %w", err)
	}
	po.separator = sep
	for _, h := range kvPairs(c, "header") {
		po.headers = append(po.headers, kgo.RecordHeader{Key: h.key, Value: []byte(h.value)})
	}

	acks, idempotent, err := parseAcks(c.String("acks"))
	if err != nil {
		return nil, err
	}
	po.opts = append(po.opts, kgo.RequiredAcks(acks))
	if !idempotent {
		po.opts = append(po.opts, kgo.DisableIdempotentWrite())
	}
	codec, err := parseCompression(c.String("compression"))
	if err != nil {
		return nil, err
	}
	po.opts = append(po.opts, kgo.ProducerBatchCompression(codec))

	if p := c.Int("partition"); c.IsSet("partition") {
		if p < 0 || p > 1<<31-1 {
			return nil, fmt.Errorf("--partition %d: must not be negative", p)
		}
		po.partition = int32(p)
		po.opts = append(po.opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	} else {
		part, err := parsePartitioner(c.String("partitioner"))
		if err != nil {
			return nil, err
		}
		po.opts = append(po.opts, kgo.RecordPartitioner(partitionCounter{Partitioner: part, n: po.partitions}))
	}
	po.opts = append(po.opts, kgo.RecordDeliveryTimeout(c.Duration("timeout")))
	// No linger: franz-go's default 10 ms arms a timer per partition that
	// receives a record, 100,000 of them for keyed records spread over a
	// topic of 100,000 partitions, and cost a fifth of the client's CPU
	// (issue 19). Batches still grow while the one request in flight per
	// broker (idempotent producer) waits for its answer.
	po.opts = append(po.opts, kgo.ProducerLinger(0))
	return po, nil
}

// parseAcks maps --acks to franz-go; the idempotent producer needs acks=all.
func parseAcks(s string) (acks kgo.Acks, idempotent bool, err error) {
	switch s {
	case "all", "-1":
		return kgo.AllISRAcks(), true, nil
	case "1":
		return kgo.LeaderAck(), false, nil
	case "0":
		return kgo.NoAck(), false, nil
	}
	return kgo.Acks{}, false, fmt.Errorf("--acks %q: want all, 1 or 0", s)
}

func parseCompression(s string) (kgo.CompressionCodec, error) {
	switch s {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", s)
}

func parsePartitioner(s string) (kgo.Partitioner, error) {
	switch s {
	case "round-robin":
		return keyOrRoundRobinPartitioner{}, nil
	case "sticky":
		// nil hasher: franz-go's Kafka-compatible murmur2.
		return kgo.StickyKeyPartitioner(nil), nil
	}
	return nil, fmt.Errorf("--partitioner %q: want round-robin or sticky", s)
}

// keyOrRoundRobinPartitioner hashes keyed records exactly like Kafka's
// default partitioner (franz-go's StickyKeyPartitioner with its murmur2
// hasher) and spreads records without a key round-robin, so `unilog produce`
// without keys fills every partition evenly.
type keyOrRoundRobinPartitioner struct{}

func (keyOrRoundRobinPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	return &keyOrRoundRobinTopicPartitioner{
		keyed: kgo.StickyKeyPartitioner(nil).ForTopic(topic),
		plain: kgo.RoundRobinPartitioner().ForTopic(topic),
	}
}

type keyOrRoundRobinTopicPartitioner struct {
	keyed, plain kgo.TopicPartitioner
}

func (p *keyOrRoundRobinTopicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return r.Key != nil
}

func (p *keyOrRoundRobinTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Key != nil {
		return p.keyed.Partition(r, n)
	}
	return p.plain.Partition(r, n)
}

// splitKey applies --parse-key to one line.
func splitKey(line, sep []byte) (key, value []byte) {
	if i := bytes.Index(line, sep); i >= 0 {
		return line[:i], line[i+len(sep):]
	}
	return nil, line
}

// produceStats is updated from franz-go's promise goroutine.
type produceStats struct {
	mu      sync.Mutex
	records int64
	bytes   int64
	failed  int64
	// touched[p] says a record reached partition p, and partitions counts
	// them: a map set per record was 3% of the client's CPU producing
	// into 100,000 partitions.
	touched    []bool
	partitions int
	errCounts  map[string]int64
}

func (s *produceStats) done(r *kgo.Record, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failed++
		s.errCounts[err.Error()]++
		return
	}
	s.records++
	s.bytes += int64(len(r.Key) + len(r.Value))
	if int(r.Partition) >= len(s.touched) {
		s.touched = append(s.touched, make([]bool, int(r.Partition)+1-len(s.touched))...)
	}
	if !s.touched[r.Partition] {
		s.touched[r.Partition] = true
		s.partitions++
	}
}

func runProduce(c *cli.Context) error {
	po, err := parseProduceFlags(c)
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	in, closeIn, err := openProduceInput(c)
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	defer closeIn()
	stopProfile, err := startProfile(c.String("cpu-profile"))
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	defer stopProfile()

	// The client's live heap is the records in flight: collecting four
	// times less often costs little memory, and its collections were a
	// tenth of the client's CPU producing into 100,000 partitions.
	defer startGC()()

	cl, err := newKafkaClient(c, append(po.opts, kgo.DefaultProduceTopic(po.topic))...)
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	defer cl.Close()

	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()

	stats := &produceStats{errCounts: make(map[string]int64)}
	start := time.Now()
	first := true
	record := func(line []byte) *kgo.Record {
		r := &kgo.Record{Value: line, Key: po.key, Headers: po.headers, Partition: po.partition}
		if po.parseKey {
			r.Key, r.Value = splitKey(line, po.separator)
		}
		return r
	}
	readErr := readChunks(ctx, in, maxProduceLine, func(lines [][]byte) {
		if first {
			// Waiting for the first record's answer lets franz-go learn
			// the topic's partitions before it is handed more: records
			// produced while the first Metadata is read each ask for
			// another, and a second Metadata of 100,000 partitions cost
			// the client 0.17 CPU s and the broker its encoding (issue 19).
			// Not ctx: franz-go fails buffered records whose context
			// ends, and records handed over before SIGINT are still
			// delivered.
			first = false
			stats.done(cl.ProduceSync(c.Context, record(lines[0])).First())
			lines = lines[1:]
		}
		var order []int32
		if po.parseKey {
			order = partitionOrder(lines, po.separator, int(po.partitions.Load()))
		}
		for i, line := range lines {
			if ctx.Err() != nil {
				return
			}
			if order != nil {
				line = lines[order[i]]
			}
			cl.Produce(c.Context, record(line), stats.done)
		}
	})
	// A second SIGINT while the flush below waits kills the process. The
	// flush needs no deadline of its own: --timeout is the records'
	// delivery timeout, so each one succeeds or fails within it.
	stop()
	flushErr := cl.Flush(c.Context)
	elapsed := time.Since(start)

	stats.mu.Lock()
	defer stats.mu.Unlock()
	fmt.Fprintf(c.App.ErrWriter, "produced topic=%s records=%d bytes=%d partitions=%d errors=%d elapsed=%s\n",
		po.topic, stats.records, stats.bytes, stats.partitions, stats.failed, elapsed.Round(time.Millisecond))
	writeErrorCounts(c.App.ErrWriter, stats.errCounts)

	if err := readErr; err != nil {
		return fmt.Errorf("produce: read input: %w", err)
	}
	if flushErr != nil {
		return fmt.Errorf("produce: flush: %w", flushErr)
	}
	if stats.failed > 0 {
		return fmt.Errorf("produce: %d of %d records failed", stats.failed, stats.failed+stats.records)
	}
	return nil
}

func openProduceInput(c *cli.Context) (io.Reader, func(), error) {
	name := c.String("file")
	if name == "-" {
		return c.App.Reader, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("open input: %w", err)
	}
	return f, func() { f.Close() }, nil
}

// writeErrorCounts lists each distinct delivery error once, most frequent
// first, so a failing run says why without one line per record.
func writeErrorCounts(w io.Writer, counts map[string]int64) {
	msgs := make([]string, 0, len(counts))
	for m := range counts {
		msgs = append(msgs, m)
	}
	sort.Slice(msgs, func(i, j int) bool {
		if counts[msgs[i]] != counts[msgs[j]] {
			return counts[msgs[i]] > counts[msgs[j]]
		}
		return msgs[i] < msgs[j]
	})
	for _, m := range msgs {
		fmt.Fprintf(w, "  %d records: %s\n", counts[m], strings.TrimSpace(m))
	}
}
