package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/unilog/unilog/bench/kafkalayout"
	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/commitlog"
)

// kafkaLayoutStorage serves the Kafka layout (one directory of segments
// per partition) through the broker's Storage interface, so that the same
// protocol front end runs over both layouts. Each produced batch is one
// record in its partition's log, stamped with its base offset, exactly as
// the unified log stores it.
type kafkaLayoutStorage struct {
	log *kafkalayout.Log
	// written counts the bytes appended: the Kafka layout has no single
	// physical position, and the broker uses this one only to wait for
	// flushes and indexing, which an append here has already done.
	written atomic.Int64

	mu      sync.Mutex
	waiters map[topicPart]chan struct{} // closed at the partition's next append
}

type topicPart struct {
	topic     string
	partition int32
}

var _ broker.Storage = (*kafkaLayoutStorage)(nil)

func newKafkaLayoutStorage(log *kafkalayout.Log) *kafkaLayoutStorage {
	return &kafkaLayoutStorage{log: log, waiters: map[topicPart]chan struct{}{}}
}

func (s *kafkaLayoutStorage) Append(topic string, partition int32, count int32, maxTimestamp int64, batch []byte) (int64, int64, error) {
	m := commitlog.Message{Topic: topic, Partition: partition, Count: count, Flags: commitlog.FlagStampOffset,
		ProducerTimestamp: maxTimestamp, Body: batch}
	base, err := s.log.Append(topic, partition, []commitlog.Message{m})
	if err != nil {
		return 0, 0, err
	}
	end := s.written.Add(int64(commitlog.EncodedSize(&m)))
	k := topicPart{topic, partition}
	s.mu.Lock()
	if ch, ok := s.waiters[k]; ok {
		close(ch)
		delete(s.waiters, k)
	}
	s.mu.Unlock()
	return base, end, nil
}

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

func (s *kafkaLayoutStorage) ReadBatch(topic string, partition int32, offset int64, dst []byte) ([]byte, int64, int64, error) {
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

// OffsetForTime scans the partition from its start: the layout's time
// index is internal to it, and the benchmark never lists by time.
func (s *kafkaLayoutStorage) OffsetForTime(topic string, partition int32, ts int64) (int64, int64, bool) {
	var found, storeTS int64 = -1, 0
	stop := errors.New("found")
	for off := int64(0); found < 0; {
		next, err := s.log.Read(topic, partition, off, fetchBytes, func(r *commitlog.Record) error {
			if r.StoreTimestamp >= ts {
				found, storeTS = r.QueueOffset, r.StoreTimestamp
				return stop
			}
			return nil
		})
		if err != nil && !errors.Is(err, stop) || next == off {
			break
		}
		off = next
	}
	return found, storeTS, found >= 0
}

func (s *kafkaLayoutStorage) Watch(topic string, partition int32, offset int64) <-chan struct{} {
	k := topicPart{topic, partition}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Append counts the end before it takes mu to wake waiters, so a
	// watch that sees the old end here gets a channel that append closes.
	if end, err := s.log.EndOffset(topic, partition); err == nil && end > offset {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	ch, ok := s.waiters[k]
	if !ok {
		ch = make(chan struct{})
		s.waiters[k] = ch
	}
	return ch
}

// errNoTopicDelete is DeleteTopic's answer: the benchmark layout cannot
// remove partitions.
var errNoTopicDelete = errors.New("bench: the kafka layout does not delete topics")

func (s *kafkaLayoutStorage) DeleteTopic(string) error { return errNoTopicDelete }

func (s *kafkaLayoutStorage) Stats() broker.StorageStats {
	return broker.StorageStats{LogBytes: s.written.Load()}
}

func (s *kafkaLayoutStorage) Close() error { return s.log.Close() }
