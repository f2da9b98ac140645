package store

import (
	"fmt"

	"github.com/unilog/unilog/commitlog"
)

// Commit-log records as they are, for callers that build commit-log
// messages themselves and read whole records back (the layout benchmark
// compares the store with the Kafka layout at this level); the broker
// uses Append and the partition reads.

// Prepare creates the consume queues of a topic's partitions 0..n-1 up
// front, so that their first records do not pay for creating them.
func (s *Store) Prepare(topic string, partitions int32) error {
	id, _ := s.liveID(topic)
	for p := range partitions {
		if _, err := s.queues.Queue(s.queueName(topic, id), p); err != nil {
			return fmt.Errorf("store: prepare %s/%d: %w", topic, p, err)
		}
	}
	return nil
}

// AppendMessages appends ms to the commit log as one batch
// (commitlog.Log.AppendBatchTo) and appends their positions to dst.
func (s *Store) AppendMessages(dst []commitlog.Position, ms []commitlog.Message) ([]commitlog.Position, error) {
	return s.log.AppendBatchTo(dst, ms)
}

// HoldFlushes and ReleaseFlushes bracket the appends of one answer under
// --flush sync, so that the log starts one flush for all of them
// (commitlog.Log.HoldFlushes).
func (s *Store) HoldFlushes() { s.log.HoldFlushes() }

// ReleaseFlushes ends HoldFlushes.
func (s *Store) ReleaseFlushes() { s.log.ReleaseFlushes() }

// ReadRecords calls fn with the partition's records from offset on, up to
// about maxBytes, and returns the offset after the last one delivered.
// The record is valid only during the call.
func (s *Store) ReadRecords(topic string, partition int32, offset int64, maxBytes int, fn func(*commitlog.Record) error) (int64, error) {
	q, ok := s.queue(topic, partition)
	if !ok {
		return offset, fmt.Errorf("store: %s/%d: %w", topic, partition, ErrOutOfRange)
	}
	end := q.MaxOffset()
	if offset < q.MinOffset() || offset > end {
		return offset, fmt.Errorf("store: %s/%d offset %d outside [%d, %d]: %w", topic, partition, offset, q.MinOffset(), end, ErrOutOfRange)
	}
	for delivered := 0; offset < end && delivered < maxBytes; {
		e, err := q.Get(offset)
		if err != nil {
			return offset, err
		}
		v, err := s.log.Read(e.PhysOffset)
		if err != nil {
			return offset, err
		}
		rec := v.Record()
		err = fn(rec)
		offset = rec.QueueOffset + int64(max(rec.Count, 1))
		delivered += int(rec.TotalSize)
		v.Release()
		if err != nil {
			return offset, err
		}
	}
	return offset, nil
}

// Flush makes everything appended durable: the commit log, then the
// consume queues indexing it (which are durable at the next checkpoint
// otherwise).
func (s *Store) Flush() error {
	if err := s.log.Flush(); err != nil {
		return fmt.Errorf("store: flush commit log: %w", err)
	}
	if err := s.queues.Flush(); err != nil {
		return fmt.Errorf("store: flush consume queues: %w", err)
	}
	return nil
}
