package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/fetchcheck"
)

// TestFetchNeverPastHighWatermark runs the plain fetch loop of package
// fetchcheck over 8 partitions under an idempotent acks=all
// producer: no record at or past the response's high watermark, no gap, no
// OFFSET_OUT_OF_RANGE for an offset just served or at the high watermark.
// The consume queue used to publish a batch's offsets one by one, so a
// fetch could take a high watermark inside a batch, serve the whole batch
// past it, and be refused the offset after it while the rest of the batch
// was being indexed. With replication the high watermark is the
// replicated one, moved here as a follower's acknowledgements would move
// it.
func TestFetchNeverPastHighWatermark(t *testing.T) {
	for _, tc := range []struct {
		name       string
		flush      commitlog.FlushMode
		replicated bool
	}{
		{"async", commitlog.FlushAsync, false},
		{"sync", commitlog.FlushSync, false},
		{"replicated", commitlog.FlushAsync, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			so := testStore()
			so.CommitLog.FlushMode = tc.flush
			var repl *fakeReplication
			if tc.replicated {
				repl = newFakeReplication()
				cfg.Replication = repl
				cfg.SyncReplication = true
			}
			b := startBrokerWith(t, cfg, so)
			createTopic(t, newClient(t, b.Addr()), "hwm", 8)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if repl != nil {
				go follow(ctx, b, repl)
			}
			res, err := fetchcheck.Run(ctx, fetchcheck.Config{
				Seeds: []string{b.Addr()}, Topic: "hwm", Partitions: 8,
				Produce: 8 * time.Second, Records: 400_000,
			})
			t.Logf("%d records produced, %d fetched in %d fetches", res.Produced, res.Fetched, res.Fetches)
			if err != nil {
				t.Fatal(err)
			}
			if res.Fetched != res.Produced {
				t.Fatalf("fetched %d records, %d produced", res.Fetched, res.Produced)
			}
		})
	}
}

// follow moves the high watermark up to the log's end as a follower that
// keeps up would, each move a little behind the appends.
func follow(ctx context.Context, b *Broker, repl *fakeReplication) {
	for ctx.Err() == nil {
		if end := b.LogEndOffset(); end > repl.HighWatermark() {
			repl.set(end, nil)
		}
		time.Sleep(time.Millisecond)
	}
}

// indexingStorage reports a partition's end inside its last batch, as a
// consume queue did while it indexed a batch's offsets one by one; while
// end is 0, the end as stored. end is atomic because the race detector
// sees no order in a vectored socket write (writev) and the read of the
// response after it.
type indexingStorage struct {
	Storage
	end atomic.Int64
}

func (s *indexingStorage) Partition(topic string, partition int32) PartitionReader {
	h := s.Storage.Partition(topic, partition)
	if end := s.end.Load(); end != 0 {
		return indexingPartition{h, end}
	}
	return h
}

// indexingPartition is an indexingStorage's read handle.
type indexingPartition struct {
	PartitionReader
	end int64
}

func (h indexingPartition) Bounds() (int64, int64) {
	lo, _ := h.PartitionReader.Bounds()
	return lo, h.end
}

// TestFetchAroundHighWatermark fetches a partition holding batches 0-2 and
// 3-4 at each offset that matters, as Kafka answers: an offset inside a
// batch gets the whole batch, the high watermark itself an empty answer,
// only an offset past it OFFSET_OUT_OF_RANGE; and a batch not wholly below
// the high watermark is not served at all.
func TestFetchAroundHighWatermark(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	createTopic(t, newClient(t, b.Addr()), "b", 1)
	rc := dialRaw(t, b.Addr())
	for _, batch := range [][]byte{rawBatch(-1, -1, -1, "a", "b", "c"), rawBatch(-1, -1, -1, "d", "e")} {
		r, ok := rc.roundTrip(produceReq("b", 0, -1, 10*time.Second, batch))
		if code, _ := produceCode(r); !ok || code != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(code))
		}
	}
	indexing := &indexingStorage{Storage: b.st}
	b.st = indexing
	for _, tc := range []struct {
		name    string
		end     int64 // the partition's end as storage reports it; 0 for as stored
		offset  int64
		hw      int64
		batches string // first-last of each batch served
		err     *kerr.Error
	}{
		{name: "start", offset: 0, hw: 5, batches: "0-2 3-4"},
		{name: "inside the first batch", offset: 1, hw: 5, batches: "0-2 3-4"},
		{name: "inside the last batch", offset: 4, hw: 5, batches: "3-4"},
		{name: "at the high watermark", offset: 5, hw: 5},
		{name: "past the high watermark", offset: 6, hw: 5, err: kerr.OffsetOutOfRange},
		{name: "end inside the last batch", end: 4, offset: 0, hw: 4, batches: "0-2"},
		{name: "at an end inside the last batch", end: 4, offset: 3, hw: 4},
		{name: "at the end inside the last batch", end: 4, offset: 4, hw: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			indexing.end.Store(tc.end)
			r, ok := rc.roundTrip(fetchReq("b", tc.offset, 0, 0))
			if !ok {
				t.Fatal("connection closed")
			}
			p := r.(*kmsg.FetchResponse).Topics[0].Partitions[0]
			var want int16
			if tc.err != nil {
				want = tc.err.Code
			}
			if p.ErrorCode != want {
				t.Fatalf("error %v, want %v", kerr.ErrorForCode(p.ErrorCode), tc.err)
			}
			if tc.err != nil {
				return
			}
			var got string
			for _, rb := range batches(t, p.RecordBatches) {
				if got != "" {
					got += " "
				}
				got += fmt.Sprintf("%d-%d", rb.FirstOffset, rb.FirstOffset+int64(rb.LastOffsetDelta))
			}
			if p.HighWatermark != tc.hw || got != tc.batches {
				t.Fatalf("high watermark %d, batches %q; want %d, %q", p.HighWatermark, got, tc.hw, tc.batches)
			}
		})
	}
}
