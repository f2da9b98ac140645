package main

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
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
