package broker

// The fetch loop holds a broker to Kafka's fetch contract while a producer
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

import (
	"context"
	"encoding/binary"
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

// fetchLoopConfig is one run of runFetchLoop.
type fetchLoopConfig struct {
	Seeds      []string
	Topic      string // exists, with Partitions partitions
	Partitions int32
	// Produce is how long the producer writes; it stops sooner after
	// Records records.
	Produce time.Duration
	Records int
}

// fetchLoopResult is what a run saw.
type fetchLoopResult struct {
	Produced   int64 // records acknowledged
	Fetched    int64 // records received in order
	Fetches    int
	Violations int
	Samples    []string // the first violations, described
}

const maxViolationSamples = 10

// runFetchLoop produces and fetches until the producer has stopped and
// every record it had acknowledged was fetched, or ctx ends; it fails when
// the broker broke the contract.
func runFetchLoop(ctx context.Context, cfg fetchLoopConfig) (fetchLoopResult, error) {
	prod, err := kgo.NewClient(kgo.SeedBrokers(cfg.Seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return fetchLoopResult{}, fmt.Errorf("fetch loop: producer: %w", err)
	}
	defer prod.Close()
	// Fetch v12 is the last naming topics rather than topic ids.
	fetcher, err := kgo.NewClient(kgo.SeedBrokers(cfg.Seeds...), kgo.MaxVersions(kversion.V2_8_0()))
	if err != nil {
		return fetchLoopResult{}, fmt.Errorf("fetch loop: fetcher: %w", err)
	}
	defer fetcher.Close()

	p := &loopProducer{end: make([]int64, cfg.Partitions)}
	done := make(chan error, 1)
	go func() { done <- p.run(ctx, prod, cfg) }()

	c := loopChecker{cfg: cfg, next: make([]int64, cfg.Partitions), hw: make([]int64, cfg.Partitions)}
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
		if err := c.fetch(ctx, fetcher); err != nil {
			return c.res, err
		}
	}
	c.res.Produced = p.total()
	if produceErr != nil {
		return c.res, produceErr
	}
	if c.res.Violations > 0 {
		return c.res, fmt.Errorf("fetch contract violated %d times in %d fetches of %d records, first:\n%s",
			c.res.Violations, c.res.Fetches, c.res.Fetched, strings.Join(c.res.Samples, "\n"))
	}
	return c.res, nil
}

// loopProducer writes round robin and tracks, per partition, the offset
// after the last acknowledged record.
type loopProducer struct {
	mu  sync.Mutex
	end []int64
	n   atomic.Int64
}

func (p *loopProducer) run(ctx context.Context, cl *kgo.Client, cfg fetchLoopConfig) error {
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
					first = fmt.Errorf("fetch loop: produce to %s/%d: %w", r.Topic, r.Partition, err)
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

func (p *loopProducer) acked() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int64(nil), p.end...)
}

func (p *loopProducer) total() int64 { return p.n.Load() }

// loopChecker is the fetch loop's state: per partition the next offset to ask
// for and the highest high watermark seen.
type loopChecker struct {
	cfg  fetchLoopConfig
	next []int64
	hw   []int64
	res  fetchLoopResult
}

func (c *loopChecker) caughtUp(acked []int64) bool {
	for i, end := range acked {
		if c.next[i] < end {
			return false
		}
	}
	return true
}

func (c *loopChecker) violation(format string, args ...any) {
	c.res.Violations++
	if len(c.res.Samples) < maxViolationSamples {
		c.res.Samples = append(c.res.Samples, fmt.Sprintf(format, args...))
	}
}

// fetch asks every partition for its next offset once and checks the answer.
func (c *loopChecker) fetch(ctx context.Context, cl *kgo.Client) error {
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
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("fetch loop: fetch: %w", err)
	}
	c.res.Fetches++
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("fetch loop: fetch: %w", err)
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
func (c *loopChecker) check(p *kmsg.FetchResponseTopicPartition) {
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
