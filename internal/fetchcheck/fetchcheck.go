// Package fetchcheck holds a broker to Kafka's fetch contract while a producer
// writes: a plain loop of kmsg fetch requests, with no client library
// logic between it and the broker (a library resets, retries and drops
// records below its position, which hides a broker's mistakes), asks every
// partition for the offset after the last record it received and checks
// each answer:
//
//   - every record returned lies below the high watermark of the response
//     that returned it (Kafka serves consumers nothing past it, and its
//     high watermark never splits a batch);
//   - offsets are contiguous: the first record kept is the offset asked
//     for, and a batch holds exactly the offsets it claims;
//   - no fetch is refused with OFFSET_OUT_OF_RANGE: the loop only asks for
//     0 or the offset right after one it was served, which is at most the
//     high watermark;
//   - the high watermark never goes back;
//   - in the end every record the producer had acknowledged was fetched.
//
// The producer is idempotent with acks=all, as Kafka clients default to.
// Tests of several packages share it: the broker's with one broker in
// either flush mode and a high watermark moved by hand, cmd/unilog's with
// a replica group.
package fetchcheck

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Config is one run.
type Config struct {
	Seeds []string
	// Leader is the address fetched from, the partitions' leader; Seeds[0]
	// when empty. (A client library sends a fetch to any broker it knows.)
	Leader     string
	Topic      string // exists, with Partitions partitions (Run waits until Leader lists it)
	Partitions int32
	// Produce is how long the producer writes; it stops sooner after
	// Records records.
	Produce time.Duration
	Records int
}

// Result is what a run saw.
type Result struct {
	Produced   int64 // records acknowledged
	Fetched    int64 // records received in order
	Fetches    int
	Violations int
	Samples    []string // the first violations, described
}

// ErrViolated reports a run that saw the broker break the contract.
var ErrViolated = errors.New("fetchcheck: fetch contract violated")

const maxSamples = 10

// Run produces and fetches until the producer has stopped and every record
// it had acknowledged was fetched, or ctx ends. The error wraps
// ErrViolated when the broker broke the contract.
func Run(ctx context.Context, cfg Config) (Result, error) {
	// Few records buffered: many small batches over the whole run, each
	// a chance for a fetch to meet one half stored, rather than a few
	// large ones at the start.
	prod, err := kgo.NewClient(kgo.SeedBrokers(cfg.Seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(1000))
	if err != nil {
		return Result{}, fmt.Errorf("fetchcheck: producer: %w", err)
	}
	defer prod.Close()
	// Fetch v12 is the last naming topics rather than topic ids.
	leader := cfg.Leader
	if leader == "" {
		leader = cfg.Seeds[0]
	}
	fetcher, err := kgo.NewClient(kgo.SeedBrokers(leader), kgo.MaxVersions(kversion.V2_8_0()))
	if err != nil {
		return Result{}, fmt.Errorf("fetchcheck: fetcher: %w", err)
	}
	defer fetcher.Close()

	if err := waitTopic(ctx, fetcher.SeedBrokers()[0], leader, cfg); err != nil {
		return Result{}, err
	}
	p := &producer{end: make([]int64, cfg.Partitions)}
	done := make(chan error, 1)
	go func() { done <- p.run(ctx, prod, cfg) }()

	c := checker{cfg: cfg, next: make([]int64, cfg.Partitions), hw: make([]int64, cfg.Partitions)}
	var produceErr error
	produced := false
	for {
		if !produced {
			select {
			case produceErr = <-done:
				produced = true
			default:
			}
		}
		if produced && (produceErr != nil || c.caughtUp(p.acked())) {
			break
		}
		if err := c.fetch(ctx, fetcher.SeedBrokers()[0]); err != nil {
			return c.res, err
		}
	}
	c.res.Produced = p.total()
	if produceErr != nil {
		return c.res, produceErr
	}
	if c.res.Violations > 0 {
		return c.res, fmt.Errorf("%w: %d times in %d fetches of %d records, first:\n%s",
			ErrViolated, c.res.Violations, c.res.Fetches, c.res.Fetched, strings.Join(c.res.Samples, "\n"))
	}
	return c.res, nil
}

// waitTopic waits until the broker fetched from lists the topic with all its
// partitions. A topic created through another node of a replica group
// reaches the leader through the control plane a moment later, as Kafka's
// brokers learn a topic from the controller after CreateTopics returns;
// until then the leader answers UNKNOWN_TOPIC_OR_PARTITION, which a client
// retries and the contract does not cover.
func waitTopic(ctx context.Context, leader *kgo.Broker, addr string, cfg Config) error {
	req := kmsg.NewPtrMetadataRequest() // AllowAutoTopicCreation false: asking creates nothing
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(cfg.Topic)
	req.Topics = append(req.Topics, rt)
	for {
		kresp, err := leader.Request(ctx, req)
		if err == nil && servesTopic(kresp.(*kmsg.MetadataResponse), cfg) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fetchcheck: %s has not listed topic %s with %d partitions (last error %v): %w",
				addr, cfg.Topic, cfg.Partitions, err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// servesTopic reports whether resp lists cfg's topic with every partition
// and no error.
func servesTopic(resp *kmsg.MetadataResponse, cfg Config) bool {
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != cfg.Topic || t.ErrorCode != 0 {
			continue
		}
		n := int32(0)
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 && p.Partition >= 0 && p.Partition < cfg.Partitions {
				n++
			}
		}
		return n == cfg.Partitions
	}
	return false
}

// producer writes round robin and tracks, per partition, the offset
// after the last acknowledged record.
type producer struct {
	mu  sync.Mutex
	end []int64
	n   atomic.Int64
}

func (p *producer) run(ctx context.Context, cl *kgo.Client, cfg Config) error {
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	stop := time.Now().Add(cfg.Produce)
	value := make([]byte, 100)
	for i := 0; i < cfg.Records && time.Now().Before(stop) && ctx.Err() == nil; i++ {
		wg.Add(1)
		r := &kgo.Record{Topic: cfg.Topic, Partition: int32(i) % cfg.Partitions, Value: value}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				errMu.Lock()
				if first == nil {
					first = fmt.Errorf("fetchcheck: produce to %s/%d: %w", r.Topic, r.Partition, err)
				}
				errMu.Unlock()
				return
			}
			p.mu.Lock()
			p.end[r.Partition] = max(p.end[r.Partition], r.Offset+1)
			p.mu.Unlock()
			p.n.Add(1)
		})
	}
	wg.Wait()
	return first
}

func (p *producer) acked() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int64(nil), p.end...)
}

func (p *producer) total() int64 { return p.n.Load() }

// checker is the fetch loop's state: per partition the next offset to ask
// for and the highest high watermark seen.
type checker struct {
	cfg  Config
	next []int64
	hw   []int64
	res  Result
}

func (c *checker) caughtUp(acked []int64) bool {
	for i, end := range acked {
		if c.next[i] < end {
			return false
		}
	}
	return true
}

func (c *checker) violation(format string, args ...any) {
	c.res.Violations++
	if len(c.res.Samples) < maxSamples {
		c.res.Samples = append(c.res.Samples, fmt.Sprintf(format, args...))
	}
}

// fetch asks every partition for its next offset once and checks the answer.
func (c *checker) fetch(ctx context.Context, leader *kgo.Broker) error {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 100
	req.MinBytes = 1
	req.MaxBytes = 4 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = c.cfg.Topic
	for i := range c.cfg.Partitions {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = i
		rp.FetchOffset = c.next[i]
		rp.PartitionMaxBytes = 256 << 10
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	kresp, err := leader.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("fetchcheck: fetch: %w", err)
	}
	c.res.Fetches++
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("fetchcheck: fetch: %w", err)
	}
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			c.check(&t.Partitions[i])
		}
	}
	return nil
}

// check takes one partition's answer: it advances next past the records
// received, as a consumer does, and notes what breaks the contract.
func (c *checker) check(p *kmsg.FetchResponseTopicPartition) {
	if p.Partition < 0 || p.Partition >= c.cfg.Partitions {
		c.violation("answer for partition %d, not asked for", p.Partition)
		return
	}
	asked := c.next[p.Partition]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		c.violation("partition %d: fetch at %d (high watermark before %d): %v", p.Partition, asked, c.hw[p.Partition], err)
		return
	}
	if p.HighWatermark < c.hw[p.Partition] {
		c.violation("partition %d: high watermark went back from %d to %d", p.Partition, c.hw[p.Partition], p.HighWatermark)
	}
	c.hw[p.Partition] = max(c.hw[p.Partition], p.HighWatermark)
	next := asked
	for b := p.RecordBatches; len(b) >= 12; {
		size := 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
		if size < 12 {
			c.violation("partition %d: batch at %d claims length %d", p.Partition, next, size-12)
			break
		}
		if size > len(b) {
			break // cut by max bytes: the rest comes next time
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:size]); err != nil {
			c.violation("partition %d: batch at %d: %v", p.Partition, next, err)
			return
		}
		b = b[size:]
		first, last := rb.FirstOffset, rb.FirstOffset+int64(rb.LastOffsetDelta)
		if int64(rb.NumRecords) != last-first+1 {
			c.violation("partition %d: batch %d-%d holds %d records", p.Partition, first, last, rb.NumRecords)
		}
		if last < next {
			continue // before the offset asked for, dropped as a client does
		}
		if first > next {
			c.violation("partition %d: batch at %d after offset %d: a gap", p.Partition, first, next)
		}
		if last >= p.HighWatermark {
			c.violation("partition %d: batch %d-%d returned with high watermark %d (fetch at %d)", p.Partition, first, last, p.HighWatermark, asked)
		}
		c.res.Fetched += last + 1 - max(first, next)
		next = last + 1
	}
	c.next[p.Partition] = next
}
