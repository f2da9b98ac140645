package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/dispatcher"
)

// dispatcherStorage is the storage of a data directory opened with
// package dispatcher: appends go to the commit log tagged with the topic's
// live incarnation, reads through that incarnation's consume queues.
type dispatcherStorage struct {
	d    *dispatcher.Dispatcher
	log  *commitlog.Log
	live func(topic string) (commitlog.TopicID, bool)
}

// openDispatcherStorage opens the data directory; live names the TopicID
// the records of each existing topic carry; floor is a second retention
// floor (the group coordinator's).
func openDispatcherStorage(cfg Config, live func(topic string) (commitlog.TopicID, bool), floor func() int64) (*dispatcherStorage, error) {
	d, err := dispatcher.Open(dispatcher.Options{
		Dir: cfg.DataDir,
		CommitLog: commitlog.Options{
			FileSize:        cfg.FileSize,
			FlushMode:       cfg.Flush,
			RecoverTruncate: cfg.RecoverTruncate,
			Logger:          cfg.Logger,
		},
		ConsumeQueue:       consumequeue.Options{Logger: cfg.Logger, MaxMapped: cfg.MaxMappedQueues},
		CheckpointInterval: cfg.CheckpointInterval,
		Live:               live,
		RetentionFloor:     floor,
		Logger:             cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: open storage: %w", err)
	}
	return &dispatcherStorage{d: d, log: d.Log(), live: live}, nil
}

func (s *dispatcherStorage) Append(topic string, partition int32, count int32, maxTimestamp int64, batch []byte) (int64, int64, error) {
	id, ok := s.live(topic)
	if !ok {
		return 0, 0, fmt.Errorf("broker: append to %s: %w", topic, ErrUnknownTopic)
	}
	pos, err := s.log.Append(&commitlog.Message{
		Topic:             topic,
		TopicID:           id,
		Partition:         partition,
		Count:             count,
		Flags:             commitlog.FlagStampOffset,
		ProducerTimestamp: maxTimestamp,
		Body:              batch,
	})
	if err != nil {
		if errors.Is(err, commitlog.ErrTooLarge) {
			return 0, 0, fmt.Errorf("%w: %w", ErrStorageTooLarge, err)
		}
		if errors.Is(err, commitlog.ErrFlushFailed) || errors.Is(err, commitlog.ErrDiskFull) {
			return 0, 0, fmt.Errorf("%w: %w", errStorageReadOnly, err)
		}
		return 0, 0, err
	}
	return pos.QueueOffset, pos.End(), nil
}

func (s *dispatcherStorage) WaitDurable(ctx context.Context, end int64) error {
	return s.log.WaitDurable(ctx, end)
}

func (s *dispatcherStorage) WaitDispatched(ctx context.Context, end int64) error {
	return s.d.WaitDispatched(ctx, end)
}

func (s *dispatcherStorage) WriteOffset() int64 { return s.log.WriteOffset() }

func (s *dispatcherStorage) Bounds(topic string, partition int32) (int64, int64) {
	q, ok := s.d.Queue(topic, partition)
	if !ok {
		return 0, 0
	}
	return q.MinOffset(), q.MaxOffset()
}

func (s *dispatcherStorage) RecordEnd(topic string, partition int32, offset int64) (int64, bool) {
	q, ok := s.d.Queue(topic, partition)
	if !ok {
		return 0, false
	}
	e, err := q.Get(offset)
	if err != nil {
		return 0, false
	}
	return e.PhysOffset + int64(e.Size), true
}

func (s *dispatcherStorage) ReadBatch(topic string, partition int32, offset int64, dst []byte) ([]byte, int64, int64, error) {
	q, ok := s.d.Queue(topic, partition)
	if !ok {
		return dst, 0, 0, ErrStorageRange
	}
	e, err := q.Get(offset)
	if err != nil {
		if errors.Is(err, consumequeue.ErrOutOfRange) {
			return dst, 0, 0, ErrStorageRange
		}
		return dst, 0, 0, fmt.Errorf("broker: %s/%d offset %d: %w", topic, partition, offset, err)
	}
	v, err := s.log.Read(e.PhysOffset)
	if err != nil {
		if errors.Is(err, commitlog.ErrOutOfRange) {
			return dst, 0, 0, ErrStorageRange
		}
		return dst, 0, 0, fmt.Errorf("broker: %s/%d offset %d: %w", topic, partition, offset, err)
	}
	defer v.Release()
	r := v.Record()
	if id, _ := s.live(topic); r.Topic != topic || r.TopicID != id || r.Partition != partition || offset < r.QueueOffset || offset >= r.QueueOffset+int64(r.Count) {
		return dst, 0, 0, fmt.Errorf("broker: %s/%d offset %d: consume queue points at %s (id %s)/%d offsets %d+%d", topic, partition, offset, r.Topic, r.TopicID, r.Partition, r.QueueOffset, r.Count)
	}
	out, err := v.AppendBody(dst)
	if err != nil {
		return dst, 0, 0, fmt.Errorf("broker: %s/%d offset %d: %w", topic, partition, offset, err)
	}
	return out, r.QueueOffset, r.QueueOffset + int64(r.Count), nil
}

func (s *dispatcherStorage) OffsetForTime(topic string, partition int32, ts int64) (int64, int64, bool) {
	q, ok := s.d.Queue(topic, partition)
	if !ok {
		return 0, 0, false
	}
	off := q.OffsetForTime(ts)
	e, err := q.Get(off)
	if err != nil {
		return 0, 0, false
	}
	return off, e.StoreTimestamp, true
}

func (s *dispatcherStorage) ScanRecords(from int64, fn func(topic string, id commitlog.TopicID, partition int32, base, end int64, batch []byte)) error {
	c := s.log.Cursor(max(from, s.log.MinOffset()))
	defer c.Close()
	for {
		r, err := c.Next()
		if err != nil {
			return err
		}
		if r == nil {
			return nil
		}
		fn(r.Topic, r.TopicID, r.Partition, r.QueueOffset, r.End(), r.Body)
	}
}

func (s *dispatcherStorage) NewWaiter() Waiter { return s.d.NewWaiter() }

func (s *dispatcherStorage) DeleteTopic(ctx context.Context, topic string) error {
	return s.d.DeleteTopic(ctx, topic)
}

func (s *dispatcherStorage) Stats() StorageStats {
	lag := s.d.Lag()
	return StorageStats{
		LogBytes: s.log.WriteOffset() - s.log.MinOffset(),
		LagBytes: lag.Bytes,
		LagTime:  lag.Time,

		WriteFailed: s.log.Stats().FlushFailed || s.d.Queues().FlushFailed(),
		Watchers:    s.d.Watchers(),
	}
}

func (s *dispatcherStorage) Close() error { return s.d.Close() }
