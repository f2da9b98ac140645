package store

import (
	"errors"
	"fmt"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/internal/dense"
)

// Partition reads one partition of a topic's live incarnation. The
// incarnation and its consume queue are resolved once, when the handle is
// made (a metadata lookup, a queue-name lookup and the queue store's
// lock), so a fetch that reads many batches of a partition pays for them
// once, not per batch. The handle of a partition that has a queue is
// kept (handles), so taking it again allocates nothing. A handle is meant
// to live as long as one request: one whose topic is deleted meanwhile
// reads as out of range.
type Partition interface {
	// Bounds returns the partition's first and next offset; an unwritten
	// partition is [0, 0).
	Bounds() (min, max int64)
	// ReadBatch appends to dst the stored batch holding offset and returns
	// the batch's first offset and the offset after it; ErrOutOfRange when
	// offset is not (or no longer) stored.
	ReadBatch(offset int64, dst []byte) (out []byte, base, next int64, err error)
	// ViewBatch is ReadBatch without the copy: the stored batch holding
	// offset, in place. The caller releases it.
	ViewBatch(offset int64) (BatchView, error)
	// RecordEnd is the physical end of the record holding offset; false
	// when the partition does not hold it.
	RecordEnd(offset int64) (end int64, ok bool)
}

// partition is the Store's Partition.
type partition struct {
	s         *Store
	q         *consumequeue.Queue // nil: the partition has no queue
	topic     string
	id        TopicID
	partition int32
}

// Partition returns a read handle on a partition of the live incarnation
// of topic.
func (s *Store) Partition(topic string, p int32) Partition { return s.partition(topic, p) }

// PartitionsOf returns read handles on the partitions of the live
// incarnation of topic, with the incarnation and its table of handles
// looked up once: a fetch over 10,000 partitions of a topic looked both
// up for each partition. The handles are those Partition returns; like
// them, the function is meant to live as long as one request.
func (s *Store) PartitionsOf(topic string) func(p int32) Partition {
	th := s.topicHandles(topic)
	return func(p int32) Partition { return th.partition(p) }
}

// PrefetchBoundsOf returns a hint for the partitions of the live
// incarnation of topic: it asks the CPU for the line of a partition's
// bounds without waiting for it, for a reader about to read the bounds of
// many partitions (a fetch over thousands), whose misses then overlap. It
// only looks at kept handles, so a partition never read or written costs
// it a table load, and any partition number is harmless.
func (s *Store) PrefetchBoundsOf(topic string) func(p int32) {
	return s.topicHandles(topic).prefetchBounds
}

func (th topicHandles) prefetchBounds(p int32) {
	if th.hs == nil || p < 0 {
		return
	}
	if h := th.hs.Load(p); h != nil {
		h.prefetchBounds()
	}
}

// prefetchBounds asks the CPU for the line of the partition's bounds, if
// it has a queue.
func (h *partition) prefetchBounds() {
	if h.q != nil {
		h.q.PrefetchBounds()
	}
}

func (s *Store) partition(topic string, p int32) *partition {
	return s.topicHandles(topic).partition(p)
}

// topicHandles is a topic's live incarnation and its handle table, looked
// up once for the handles of its partitions.
type topicHandles struct {
	s     *Store
	topic string
	id    TopicID
	hs    *dense.Shared[partition] // nil: the topic has no live incarnation
}

func (s *Store) topicHandles(topic string) topicHandles {
	th := topicHandles{s: s, topic: topic}
	if id, ok := s.liveID(topic); ok {
		th.id, th.hs = id, s.handleTable(topic, id)
	}
	return th
}

// partition is a handle on partition p: one that reads nothing when the
// topic has no live incarnation.
func (th topicHandles) partition(p int32) *partition {
	if th.hs == nil {
		return &partition{s: th.s, topic: th.topic, partition: p}
	}
	return th.s.handle(th.hs, th.topic, th.id, p)
}

// handle is partition for the live incarnation id of topic, whose handle
// table hs is: a caller with many partitions of one topic looks the table
// up once.
func (s *Store) handle(hs *dense.Shared[partition], topic string, id TopicID, p int32) *partition {
	if h := hs.Load(p); h != nil {
		return h
	}
	h := &partition{s: s, topic: topic, id: id, partition: p}
	h.q, _ = s.queues.Lookup(s.queueName(topic, id), p)
	if h.q == nil {
		return h // no queue yet: the dispatcher may create one
	}
	return hs.LoadOrStore(p, h)
}

// handleTable returns the kept handles of an incarnation's partitions.
// A table by partition costs a pointer and the handle a partition;
// a sync.Map entry per partition cost 200 bytes more, and retention asks
// for the bounds of every partition.
func (s *Store) handleTable(topic string, id TopicID) *dense.Shared[partition] {
	k := topicIncarnation{topic, id}
	if hs, ok := s.handles.Load(k); ok {
		return hs.(*dense.Shared[partition])
	}
	hs, _ := s.handles.LoadOrStore(k, new(dense.Shared[partition]))
	return hs.(*dense.Shared[partition])
}

// forgetHandles drops the kept handles of an incarnation whose queues are
// deleted.
func (s *Store) forgetHandles(topic string, id TopicID) {
	s.handles.Delete(topicIncarnation{topic, id})
}

// Bounds returns the first and the next offset of a partition of the live
// incarnation of topic; an unwritten partition is [0, 0).
func (s *Store) Bounds(topic string, p int32) (int64, int64) { return s.partition(topic, p).Bounds() }

func (h *partition) Bounds() (int64, int64) {
	if h.q == nil {
		return 0, 0
	}
	return h.q.MinOffset(), h.q.MaxOffset()
}

func (h *partition) RecordEnd(offset int64) (int64, bool) {
	if h.q == nil {
		return 0, false
	}
	e, err := h.q.Get(offset)
	if err != nil {
		return 0, false
	}
	return e.PhysOffset + int64(e.Size), true
}

func (h *partition) ReadBatch(offset int64, dst []byte) ([]byte, int64, int64, error) {
	var v commitlog.View
	if err := h.read(offset, &v); err != nil {
		return dst, 0, 0, err
	}
	defer v.Release()
	out, err := v.AppendBody(dst)
	if err != nil {
		return dst, 0, 0, fmt.Errorf("store: %s/%d offset %d: %w", h.topic, h.partition, offset, err)
	}
	r := v.Record()
	return out, r.QueueOffset, r.QueueOffset + int64(r.Count), nil
}

func (h *partition) ViewBatch(offset int64) (BatchView, error) {
	var v commitlog.View
	if err := h.read(offset, &v); err != nil {
		return BatchView{}, err
	}
	return batchView(&v), nil
}

func batchView(v *commitlog.View) BatchView {
	r := v.Record()
	return BatchView{Bytes: r.Body, Base: r.QueueOffset, Next: r.QueueOffset + int64(r.Count), pin: v.Pin()}
}

// read reads into v the record holding offset, checked to be the
// partition's: a consume queue pointing elsewhere is an error, not
// another partition's records served.
func (h *partition) read(offset int64, v *commitlog.View) error {
	if h.q == nil {
		return ErrOutOfRange
	}
	e, err := h.q.Get(offset)
	if err != nil {
		// A closed queue is one whose incarnation was deleted since the
		// handle was made.
		if errors.Is(err, consumequeue.ErrOutOfRange) || errors.Is(err, consumequeue.ErrClosed) {
			return ErrOutOfRange
		}
		return fmt.Errorf("store: %s/%d offset %d: %w", h.topic, h.partition, offset, err)
	}
	return h.readEntry(offset, e, v)
}

// readEntry reads into v the record that e, the consume queue's entry of
// offset, points at, checked as read says.
func (h *partition) readEntry(offset int64, e consumequeue.Entry, v *commitlog.View) error {
	v.Expect(h.topic)
	if err := h.s.log.ReadInto(e.PhysOffset, v); err != nil {
		if errors.Is(err, commitlog.ErrOutOfRange) {
			return ErrOutOfRange
		}
		return fmt.Errorf("store: %s/%d offset %d: %w", h.topic, h.partition, offset, err)
	}
	r := v.Record()
	if r.Topic != h.topic || r.TopicID != h.id || r.Partition != h.partition || offset < r.QueueOffset || offset >= r.QueueOffset+int64(r.Count) {
		v.Release()
		return fmt.Errorf("store: %s/%d offset %d: consume queue points at %s (id %s)/%d offsets %d+%d", h.topic, h.partition, offset, r.Topic, r.TopicID, r.Partition, r.QueueOffset, r.Count)
	}
	return nil
}
