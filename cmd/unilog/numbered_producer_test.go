package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/unilog/unilog/internal/poll"
)

// numberedProducer writes records numbered from 0 to one partition until
// stopped, without waiting for each (franz-go's acks=all, idempotent
// defaults), and keeps the offset each acknowledged record got.
type numberedProducer struct {
	cl         *kgo.Client
	stop, done chan struct{}

	mu    sync.Mutex
	acked map[string]int64 // value -> offset
	errs  []error
}

func startNumberedProducer(ctx context.Context, cl *kgo.Client, topic string, partition int32) *numberedProducer {
	p := &numberedProducer{cl: cl, stop: make(chan struct{}), done: make(chan struct{}), acked: map[string]int64{}}
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				cl.Flush(ctx)
				return
			default:
			}
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: partition, Value: fmt.Appendf(nil, "%08d", i)}, func(r *kgo.Record, err error) {
				p.mu.Lock()
				defer p.mu.Unlock()
				if err != nil {
					p.errs = append(p.errs, err)
					return
				}
				p.acked[string(r.Value)] = r.Offset
			})
		}
	}()
	return p
}

// count is how many records were acknowledged so far.
func (p *numberedProducer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// finish stops producing, waits for the records in flight, fails the
// test on any produce error and returns every acknowledged record.
func (p *numberedProducer) finish(t *testing.T) map[string]int64 {
	t.Helper()
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errs) > 0 {
		t.Fatalf("%d produce errors, first %v", len(p.errs), p.errs[0])
	}
	return p.acked
}

// produceAndMove starts a numbered producer on topic/part through seeds,
// tuned to follow a leader change within milliseconds, and once g1 has
// acknowledged 1000 records starts the partition's move to g2 without
// waiting for it. The client closes with the test.
func produceAndMove(ctx context.Context, t *testing.T, seeds []string, natsURL, secret, topic string, part int32) *numberedProducer {
	t.Helper()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(50*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
		kgo.MaxBufferedRecords(200), kgo.ProducerBatchMaxBytes(4<<10), kgo.RecordDeliveryTimeout(90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	producer := startNumberedProducer(ctx, prod, topic, part)
	poll.True(t, "1000 records acknowledged by g1", func() bool { return producer.count() >= 1000 })
	mustRun(t, "", "topic", "move", "--nats", natsURL, "--cluster-secret-file", secret,
		"--topic", topic, "--partition", fmt.Sprint(part), "--to-group", "g2", "--wait=false")
	return producer
}
