package broker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/store"
)

// dispatcherStorage is the storage of a data directory opened with
// package dispatcher: appends go to the commit log tagged with the topic's
// live incarnation, reads through that incarnation's consume queues.
type dispatcherStorage struct {
	d    *store.Store
	log  *commitlog.Log
	live func(topic string) (commitlog.TopicID, bool)
}

// openDispatcherStorage opens the data directory; live names the TopicID
// the records of each existing topic carry; floor is a second retention
// floor (the group coordinator's).
func openDispatcherStorage(cfg Config, live func(topic string) (commitlog.TopicID, bool), floor func() int64) (*dispatcherStorage, error) {
	d, err := store.Open(store.Options{
		Dir: cfg.DataDir,
		CommitLog: commitlog.Options{
			FileSize:        cfg.FileSize,
			FlushMode:       cfg.Flush,
			RecoverTruncate: cfg.RecoverTruncate,
			Logger:          cfg.Logger,
		},
		ConsumeQueue:       consumequeue.Options{Logger: cfg.Logger, MaxMapped: cfg.MaxMappedQueues},
		CheckpointInterval: cfg.CheckpointInterval,
		CheckpointBytes:    cfg.CheckpointBytes,
		Live:               live,
		RetentionFloor:     floor,
		Logger:             cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: open storage: %w", err)
	}
	return &dispatcherStorage{d: d, log: d.Log(), live: live}, nil
}

// OpenStorage opens the unified log of cfg.DataDir as a Storage on its
// own, without a broker: a topic is live (under its name, with the zero
// topic id) while live says so, every topic when live is nil, and
// retention has no floor but the dispatched offset. (Start instead ties
// each topic to its incarnation in the metadata and adds the group
// coordinator's floor.) The conformance suite, package storagetest, runs
// over it.
func OpenStorage(cfg Config, live func(topic string) bool) (Storage, error) {
	return openDispatcherStorage(cfg, func(topic string) (commitlog.TopicID, bool) {
		return commitlog.TopicID{}, live == nil || live(topic)
	}, nil)
}

// appendScratch is the commit log's view of one Append call, pooled so
// that a produce request's append allocates nothing per partition.
type appendScratch struct {
	msgs []commitlog.Message
	pos  []commitlog.Position
}

var appendScratchPool = sync.Pool{New: func() any { return new(appendScratch) }}

func (s *dispatcherStorage) Append(dst []Appended, batches []StorageBatch) ([]Appended, error) {
	sc := appendScratchPool.Get().(*appendScratch)
	defer func() {
		clear(sc.msgs) // drop the request's bytes
		sc.msgs, sc.pos = sc.msgs[:0], sc.pos[:0]
		appendScratchPool.Put(sc)
	}()
	// A request's batches come topic by topic: look each topic up once.
	var (
		topic   string
		id      commitlog.TopicID
		unknown error
	)
	for i := range batches {
		b := &batches[i]
		if i == 0 || b.Topic != topic {
			var ok bool
			if id, ok = s.live(b.Topic); !ok {
				unknown = fmt.Errorf("broker: append to %s: %w", b.Topic, ErrUnknownTopic)
				break
			}
			topic = b.Topic
		}
		sc.msgs = append(sc.msgs, commitlog.Message{
			Topic:             b.Topic,
			TopicID:           id,
			Partition:         b.Partition,
			Count:             b.Count,
			Flags:             commitlog.FlagStampOffset,
			ProducerTimestamp: b.MaxTimestamp,
			Body:              b.Records,
		})
	}
	var err error
	sc.pos, err = s.log.AppendBatchTo(sc.pos, sc.msgs)
	if err != nil && len(sc.msgs) > 1 {
		// The log's batch is all or nothing: store the batches before the
		// one at fault one by one, so that it fails alone.
		sc.pos = sc.pos[:0]
		for i := range sc.msgs {
			if sc.pos, err = s.log.AppendBatchTo(sc.pos, sc.msgs[i:i+1]); err != nil {
				break
			}
		}
	}
	var name string
	for i, p := range sc.pos {
		m := &sc.msgs[i]
		if i == 0 || m.Topic != sc.msgs[i-1].Topic {
			name = store.QueueName(m.Topic, m.TopicID)
		}
		a := Appended{Base: p.QueueOffset, End: p.End()}
		// Not queued yet (the dispatcher runs behind): [0, 0), as Bounds.
		if q, ok := s.d.Queues().Lookup(name, m.Partition); ok {
			a.LogStart = q.MinOffset()
		}
		dst = append(dst, a)
	}
	switch {
	case err == nil:
		return dst, unknown
	case errors.Is(err, commitlog.ErrTooLarge):
		return dst, fmt.Errorf("%w: %w", ErrStorageTooLarge, err)
	case errors.Is(err, commitlog.ErrFlushFailed) || errors.Is(err, commitlog.ErrDiskFull):
		return dst, fmt.Errorf("%w: %w", errStorageReadOnly, err)
	default:
		return dst, err
	}
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

// firstEndingAfter is the first offset in [lo, stored) whose record ends
// beyond the physical offset phys, or stored if none does. Entries are in
// log order, so those past phys are a suffix; an entry that cannot be read
// counts as past it, which makes the answer earlier, never later.
func (s *dispatcherStorage) firstEndingAfter(topic string, partition int32, lo, stored, phys int64) int64 {
	n := sort.Search(int(stored-lo), func(i int) bool {
		end, ok := s.RecordEnd(topic, partition, lo+int64(i))
		return !ok || end > phys
	})
	return lo + int64(n)
}

// PartitionBytes is the size in the commit log (record headers included) of
// the partition's records holding offsets [from, to): each record counted
// once, however many offsets its batch spans. It reads one consume-queue
// entry per offset and nothing of the log, for DescribeLogDirs.
func (s *dispatcherStorage) PartitionBytes(topic string, partition int32, from, to int64) int64 {
	q, ok := s.d.Queue(topic, partition)
	if !ok {
		return 0
	}
	var n int64
	last := int64(-1)
	for off := from; off < to; off++ {
		e, err := q.Get(off)
		if err != nil || e.PhysOffset == last {
			continue
		}
		n += int64(e.Size)
		last = e.PhysOffset
	}
	return n
}

func (s *dispatcherStorage) OffsetKeepingBytes(topic string, partition int32, from, to, limit int64) int64 {
	q, ok := s.d.Queue(topic, partition)
	if !ok {
		return from
	}
	var n int64
	last := int64(-1)
	keep := to
	for off := to - 1; off >= from; off-- {
		e, err := q.Get(off)
		if err != nil {
			break
		}
		if e.PhysOffset != last {
			if n+int64(e.Size) > limit {
				break
			}
			n += int64(e.Size)
			last = e.PhysOffset
		}
		keep = off
	}
	return keep
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
	if off >= q.MaxOffset() {
		return 0, 0, false
	}
	// The first entry whose running maximum reaches ts is the batch that
	// raised it, so its Timestamp is that batch's own (store time in a
	// version 1 file). An entry that cannot be read is still the answer
	// (OffsetForTime took it for late enough): "none" would let retention
	// move a log start past every record.
	e, err := q.Get(off)
	if err != nil {
		return off, -1, true
	}
	return off, e.Timestamp, true
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
