package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/unilog/unilog/bench/kafkalayout"
	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/store"
)

// kafkaLayoutStorage serves the Kafka layout (one directory of segments
// per partition) through the broker's Storage interface, so that the same
// protocol front end runs over both layouts. Each produced batch is one
// record in its partition's log, stamped with its base offset, exactly as
// the unified log stores it.
type kafkaLayoutStorage struct {
	log *kafkalayout.Log
	// syncFlush: the layout fsyncs each append (flush.messages=1).
	syncFlush bool
	// written counts the bytes appended: the Kafka layout has no single
	// physical position, and the broker uses this one only to wait for
	// flushes and indexing, which an append here has already done.
	written atomic.Int64

	mu      sync.Mutex
	waiters map[topicPart][]*layoutWaiter // signalled at the partition's next append
}

type topicPart struct {
	topic     string
	partition int32
}

var _ broker.Storage = (*kafkaLayoutStorage)(nil)

func newKafkaLayoutStorage(log *kafkalayout.Log, syncFlush bool) *kafkaLayoutStorage {
	s := &kafkaLayoutStorage{log: log, syncFlush: syncFlush, waiters: map[topicPart][]*layoutWaiter{}}
	// Ends go on from what a reopened layout holds, never back.
	s.written.Store(log.Bytes())
	return s
}

// Append stores the batches one partition after another, as Kafka's
// broker appends a produce request's partitions, each fsynced under sync
// flushing.
func (s *kafkaLayoutStorage) Append(dst []broker.Appended, batches []broker.StorageBatch) ([]broker.Appended, error) {
	var err error
	n0 := len(dst)
	for _, b := range batches {
		m := [1]commitlog.Message{{Topic: b.Topic, Partition: b.Partition, Count: b.Count, Flags: commitlog.FlagStampOffset,
			ProducerTimestamp: b.MaxTimestamp, Body: b.Records}}
		var base int64
		if base, err = s.log.Append(b.Topic, b.Partition, m[:]); err != nil {
			break
		}
		dst = append(dst, broker.Appended{Base: base, End: s.written.Add(int64(commitlog.EncodedSize(&m[0])))})
	}
	s.mu.Lock()
	for _, b := range batches[:len(dst)-n0] {
		k := topicPart{b.Topic, b.Partition}
		for _, w := range s.waiters[k] {
			w.signal()
		}
		delete(s.waiters, k)
	}
	s.mu.Unlock()
	return dst, err
}

// SyncFlush: an acks=-1 produce waits for WaitDurable, which Append
// has already done.
func (s *kafkaLayoutStorage) SyncFlush() bool { return s.syncFlush }

// WaitDurable has nothing to wait for: under sync flushing the layout
// fsyncs the partition inside Append (flush.messages=1).
func (s *kafkaLayoutStorage) WaitDurable(context.Context, int64) error { return nil }

// WaitDispatched has nothing to wait for: the layout indexes as it appends.
func (s *kafkaLayoutStorage) WaitDispatched(context.Context, int64) error { return nil }

func (s *kafkaLayoutStorage) WriteOffset() int64 { return s.written.Load() }

// Bounds is [0, end): the benchmark layout keeps every segment.
func (s *kafkaLayoutStorage) Bounds(topic string, partition int32) (int64, int64) {
	end, err := s.log.EndOffset(topic, partition)
	if err != nil {
		return 0, 0
	}
	return 0, end
}

// layoutPartition is a read handle on one partition of the layout; it
// resolves nothing ahead, the layout looking the partition up per read.
type layoutPartition struct {
	s         *kafkaLayoutStorage
	topic     string
	partition int32
}

func (s *kafkaLayoutStorage) Partition(topic string, partition int32) broker.PartitionReader {
	return layoutPartition{s: s, topic: topic, partition: partition}
}

func (h layoutPartition) Bounds() (int64, int64) { return h.s.Bounds(h.topic, h.partition) }

// RecordEnd: the layout has no physical positions, which only replication
// and leader epochs ask for.
func (h layoutPartition) RecordEnd(int64) (int64, bool) { return 0, false }

func (h layoutPartition) ReadBatch(offset int64, dst []byte) ([]byte, int64, int64, error) {
	s, topic, partition := h.s, h.topic, h.partition
	base, next := int64(-1), offset
	_, err := s.log.Read(topic, partition, offset, 1, func(r *commitlog.Record) error {
		dst = append(dst, r.Body...)
		base, next = r.QueueOffset, r.QueueOffset+int64(max(r.Count, 1))
		return nil
	})
	switch {
	case errors.Is(err, kafkalayout.ErrOutOfRange), errors.Is(err, kafkalayout.ErrNoPartition), err == nil && base < 0:
		return dst, 0, 0, broker.ErrStorageRange
	case err != nil:
		return dst, 0, 0, fmt.Errorf("bench: kafka layout %s/%d offset %d: %w", topic, partition, offset, err)
	}
	return dst, base, next, nil
}

// ViewBatch copies: the layout's reads hand out records only during a
// callback, so there is no mapping to hold.
func (h layoutPartition) ViewBatch(offset int64) (store.BatchView, error) {
	b, base, next, err := h.ReadBatch(offset, nil)
	if err != nil {
		return store.BatchView{}, err
	}
	return store.BatchView{Bytes: b, Base: base, Next: next}, nil
}

// OffsetForTime scans the partition from its start: the layout's time
// index is internal to it, and the benchmark never lists by time.
func (s *kafkaLayoutStorage) OffsetForTime(topic string, partition int32, ts int64) (int64, int64, bool) {
	var found, batchTS int64 = -1, 0
	stop := errors.New("found")
	for off := int64(0); found < 0; {
		next, err := s.log.Read(topic, partition, off, fetchBytes, func(r *commitlog.Record) error {
			if r.ProducerTimestamp >= ts {
				found, batchTS = r.QueueOffset, r.ProducerTimestamp
				return stop
			}
			return nil
		})
		if err != nil && !errors.Is(err, stop) || next == off {
			break
		}
		off = next
	}
	return found, batchTS, found >= 0
}

// layoutWaiter is one long poll over the layout's partitions.
type layoutWaiter struct {
	s    *kafkaLayoutStorage
	ch   chan struct{} // capacity 1
	keys []topicPart
}

func (s *kafkaLayoutStorage) NewWaiter() broker.Waiter {
	return &layoutWaiter{s: s, ch: make(chan struct{}, 1)}
}

func (w *layoutWaiter) Watch(topic string, partition int32, offset int64) {
	k := topicPart{topic, partition}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	// Append moves the end before it takes mu to signal, so a watch that
	// sees the old end here is registered before that signal.
	if end, err := w.s.log.EndOffset(topic, partition); err == nil && end > offset {
		w.signal()
		return
	}
	w.s.waiters[k] = append(w.s.waiters[k], w)
	w.keys = append(w.keys, k)
}

func (w *layoutWaiter) C() <-chan struct{} { return w.ch }

func (w *layoutWaiter) Release() {
	w.s.mu.Lock()
	for _, k := range w.keys {
		list := w.s.waiters[k]
		for i, x := range list {
			if x == w {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(w.s.waiters, k)
		} else {
			w.s.waiters[k] = list
		}
	}
	w.s.mu.Unlock()
	w.keys = w.keys[:0]
	select {
	case <-w.ch:
	default:
	}
}

func (w *layoutWaiter) signal() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// errNoReplay is ScanRecords' answer for a layout opened with partitions:
// the comparison always starts on an empty directory, and its per-partition
// logs have no single order to replay producer state in.
var errNoReplay = errors.New("bench: the kafka layout replays no records; open it empty")

// ScanRecords has nothing to replay on the empty layout a run starts with.
func (s *kafkaLayoutStorage) ScanRecords(int64, func(string, commitlog.TopicID, int32, int64, int64, []byte)) error {
	if s.log.Partitions() > 0 {
		return errNoReplay
	}
	return nil
}

// errNoTopicDelete is DeleteTopic's answer: the benchmark layout cannot
// remove partitions.
var errNoTopicDelete = errors.New("bench: the kafka layout does not delete topics")

func (s *kafkaLayoutStorage) DeleteTopic(context.Context, string) error { return errNoTopicDelete }

// PartitionBytes is unknown (-1): DescribeLogDirs answers so.
func (s *kafkaLayoutStorage) PartitionBytes(string, int32, int64, int64) int64 { return -1 }

// OffsetKeepingBytes keeps everything: the benchmark layout keeps every
// segment.
func (s *kafkaLayoutStorage) OffsetKeepingBytes(_ string, _ int32, from, _, _ int64) int64 {
	return from
}

// OldestFileEnd is 0: no segment is ever deleted, so the group
// coordinator has nothing to copy forward.
func (s *kafkaLayoutStorage) OldestFileEnd() int64 { return 0 }

// FirstHeld is 0: every segment is kept.
func (s *kafkaLayoutStorage) FirstHeld(string, int32) int64 { return 0 }

// AddRetentionFloor has nothing to hold: no segment is deleted.
func (s *kafkaLayoutStorage) AddRetentionFloor(func() int64) func() { return func() {} }

// SetLiveStart has nothing to delete early.
func (s *kafkaLayoutStorage) SetLiveStart(func() int64) {}

// FirstLive keeps everything.
func (s *kafkaLayoutStorage) FirstLive(string, int32, int64) int64 { return math.MinInt64 }

// Truncate, Restart and LeaderEpochs are replication's: the layout has no
// single log to replicate.
func (s *kafkaLayoutStorage) Truncate(int64) error { return store.ErrUnsupported }

func (s *kafkaLayoutStorage) Restart(int64, []store.PartitionOffset) error {
	return store.ErrUnsupported
}

func (s *kafkaLayoutStorage) LeaderEpochs() ([]store.EpochStart, error) {
	return nil, store.ErrUnsupported
}

// NextOffset is the partition's end.
func (s *kafkaLayoutStorage) NextOffset(topic string, partition int32) int64 {
	_, next := s.Bounds(topic, partition)
	return next
}

// AppendAt is a partition move's: the benchmark has one broker, no
// replica groups to move between.
func (s *kafkaLayoutStorage) AppendAt([]broker.Appended, broker.StorageBatch, int64) ([]broker.Appended, error) {
	return nil, store.ErrUnsupported
}

func (s *kafkaLayoutStorage) Stats() broker.StorageStats {
	return broker.StorageStats{LogBytes: s.written.Load()}
}

func (s *kafkaLayoutStorage) Close() error { return s.log.Close() }
