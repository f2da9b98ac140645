package broker

import (
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/store"
)

// watchCountingStorage counts the partition registrations of long polls.
type watchCountingStorage struct {
	Storage
	watches atomic.Int64
}

func (s *watchCountingStorage) NewWaiter() Waiter {
	return countingWaiter{Waiter: s.Storage.NewWaiter(), n: &s.watches}
}

type countingWaiter struct {
	Waiter
	n *atomic.Int64
}

func (w countingWaiter) Watch(topic string, partition int32, offset int64) {
	w.n.Add(1)
	w.Waiter.Watch(topic, partition, offset)
}

// TestFetchWatchesOnlyWhenWaiting: a fetch that has records to answer
// registers no long-poll watch; one that waits watches every partition it
// read. A read-back over 10,000 partitions used to register and release
// all of them in every fetch (9% of its broker CPU).
func TestFetchWatchesOnlyWhenWaiting(t *testing.T) {
	cs := &watchCountingStorage{}
	b, err := open(testConfig(t, t.TempDir()), testStore(), func(s Storage) Storage { cs.Storage = s; return cs })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	const parts = 8
	cl := newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "w", parts)
	for p := range int32(parts) {
		if err := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "w", Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	fetch := func(offset int64) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(11)
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 300, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "w"
		for p := range int32(parts) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offset, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	records := func(resp *kmsg.FetchResponse) int {
		n := 0
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("partition %d: error %d", rp.Partition, rp.ErrorCode)
				}
				if len(rp.RecordBatches) > 0 {
					n++
				}
			}
		}
		return n
	}
	if n := records(fetch(0)); n != parts {
		t.Fatalf("fetch from 0: records from %d partitions, want %d", n, parts)
	}
	if n := cs.watches.Load(); n != 0 {
		t.Fatalf("a fetch answered at once watched %d partitions, want 0", n)
	}
	if n := records(fetch(1)); n != 0 {
		t.Fatalf("fetch at the end: records from %d partitions, want 0", n)
	}
	if n := cs.watches.Load(); n != parts {
		t.Fatalf("a waiting fetch watched %d partitions, want %d", n, parts)
	}
	if w := cs.Storage.(*store.Store).Stats().Watchers; w != 0 {
		t.Fatalf("%d watches left after the fetches", w)
	}
}
