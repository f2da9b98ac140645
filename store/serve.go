package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/dense"
	"github.com/unilog/unilog/internal/prefetch"
)

// What the broker is served (its Storage interface): appends tagged with
// the topic's live incarnation, reads through that incarnation's consume
// queues, and the primitives its group coordinator, retention and
// replication build on.

// DefaultRetentionAge is how long the commit log keeps a file by default
// (commitlog.DefaultRetentionAge): Kafka's log.retention.ms as the broker
// reports it.
const DefaultRetentionAge = commitlog.DefaultRetentionAge

// TopicID names one incarnation of a topic (commitlog.TopicID).
type TopicID = commitlog.TopicID

// PartitionOffset is one partition's next offset (commitlog.PartitionOffset).
type PartitionOffset = commitlog.PartitionOffset

// EpochStart is one leader epoch and where it starts in the log
// (commitlog.EpochStart).
type EpochStart = commitlog.EpochStart

// Batch is one partition's record batch for Append.
type Batch struct {
	Topic        string
	Partition    int32
	Count        int32 // records in the batch, the offsets it takes
	MaxTimestamp int64
	Records      []byte
	// CRCChecked: the batch's CRC (bytes 17..21 of a Kafka v2 batch) is
	// known to match the bytes it covers, from 21 on (the caller verified
	// or sealed it since the last change), so the commit log derives its
	// record's CRC from it instead of reading the records once more
	// (commitlog.Message.BodyCRC).
	CRCChecked bool
}

// Where a Kafka v2 batch keeps its CRC32C and where what it covers starts.
const (
	batchCRCAt   = 17
	batchCRCFrom = 21
)

// Appended is where Append stored a batch: its base offset, the physical
// end of its record (what WaitDurable and WaitDispatched take), and the
// partition's log start offset for the produce answer.
type Appended struct {
	Base, End, LogStart int64
}

// Stats are the sizes the store reports for the metrics.
type Stats struct {
	LogBytes int64
	LogFiles int // commit-log files, the oldest retention has not yet deleted included
	LagBytes int64
	LagTime  time.Duration
	// WriteFailed: a flush of the log or the queues failed; appends are
	// refused (ErrReadOnly) until a restart.
	WriteFailed bool
	Watchers    int64 // partition registrations of live long polls
	// SmallQueues are the partitions whose consume queues live in the
	// shared journal, SmallQueueBytes the size of their records there
	// (consumequeue.Store.SmallStats).
	SmallQueues     int
	SmallQueueBytes int64
}

// The texts are those clients and logs saw when the broker defined them.
var (
	// ErrOutOfRange reports an offset the store does not (or no longer) hold.
	ErrOutOfRange = errors.New("broker: offset not stored")
	// ErrReadOnly reports an append refused because the disk is full or
	// a flush failed: retriable, nothing was stored.
	ErrReadOnly = errors.New("broker: storage refuses writes")
	// ErrTooLarge reports a record larger than the log accepts.
	ErrTooLarge = errors.New("broker: record too large for the commit log")
	// ErrUnknownTopic reports an append to a topic Options.Live does not know.
	ErrUnknownTopic = errors.New("broker: unknown topic")
	// ErrDiskFull: the disk under the log is full (commitlog.ErrDiskFull).
	ErrDiskFull = commitlog.ErrDiskFull
	// ErrUnsupported is the answer of a storage that cannot serve an
	// operation (the benchmark's Kafka layout: no groups, no replication).
	ErrUnsupported = errors.New("storage: operation not supported")
)

// appendScratch is the commit log's view of one Append call, pooled so
// that a produce request's append allocates nothing per partition.
type appendScratch struct {
	msgs    []commitlog.Message
	pos     []commitlog.Position
	handles []*partition // of msgs' partitions
}

var appendScratchPool = sync.Pool{New: func() any { return new(appendScratch) }}

// Append stores each batch as one commit-log record spanning its Count
// offsets, tagged with its topic's live incarnation and with the base
// offset stamped into it, and appends one Appended per stored batch to
// dst. On an error the batches before the one it is about are stored (and
// in dst) and none after it.
func (s *Store) Append(dst []Appended, batches []Batch) ([]Appended, error) {
	sc := appendScratchPool.Get().(*appendScratch)
	defer func() {
		clear(sc.msgs) // drop the request's bytes
		clear(sc.handles)
		sc.msgs, sc.pos, sc.handles = sc.msgs[:0], sc.pos[:0], sc.handles[:0]
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
			if id, ok = s.liveID(b.Topic); !ok {
				unknown = fmt.Errorf("store: append to %s: %w", b.Topic, ErrUnknownTopic)
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
		if b.CRCChecked && len(b.Records) >= batchCRCFrom {
			m := &sc.msgs[len(sc.msgs)-1]
			m.BodyCRCFrom, m.BodyCRC = batchCRCFrom, binary.BigEndian.Uint32(b.Records[batchCRCAt:])
		}
	}
	sc.handles = s.prefetchHandles(sc.handles, sc.msgs)
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
	for i, p := range sc.pos {
		a := Appended{Base: p.QueueOffset, End: p.End()}
		// Not queued yet (the dispatcher runs behind): [0, 0), as Bounds.
		if h := sc.handles[i]; h.q != nil {
			a.LogStart = h.q.MinOffset()
		}
		dst = append(dst, a)
	}
	switch {
	case err == nil:
		return dst, unknown
	case errors.Is(err, commitlog.ErrTooLarge):
		return dst, fmt.Errorf("%w: %w", ErrTooLarge, err)
	case errors.Is(err, commitlog.ErrFlushFailed) || errors.Is(err, commitlog.ErrDiskFull):
		return dst, fmt.Errorf("%w: %w", ErrReadOnly, err)
	default:
		return dst, err
	}
}

// prefetchHandles appends to dst the handle of each message's partition,
// and asks the CPU for the handles' lines and then their queues' bounds,
// which Append reads after
// the log's append for each batch's log start. The handles are kept in a
// table per topic indexed by partition (the queue store's map by name and
// partition missed the cache for every batch of a request to 10,000
// partitions, 9% of the broker's samples); a handle and its queue are
// still two misses a partition there, which read one after the other
// after the append were 4.7% of the broker's samples (perf: the loads of
// h.q and of its bounds in Store.Append). Asked for here, they overlap
// each other and the append.
func (s *Store) prefetchHandles(dst []*partition, msgs []commitlog.Message) []*partition {
	var hs *dense.Shared[partition]
	for i := range msgs {
		m := &msgs[i]
		if i == 0 || m.Topic != msgs[i-1].Topic {
			hs = s.handleTable(m.Topic, m.TopicID)
		}
		h := s.handle(hs, m.Topic, m.TopicID, m.Partition)
		prefetch.Read(uintptr(unsafe.Pointer(h)))
		dst = append(dst, h)
	}
	for _, h := range dst[len(dst)-len(msgs):] {
		h.prefetchBounds()
	}
	return dst
}

// PartitionBytes is the size in the commit log (record headers included) of
// the partition's records holding offsets [from, to): each record counted
// once, however many offsets its batch spans. It reads one consume-queue
// entry per offset and nothing of the log, for DescribeLogDirs.
func (s *Store) PartitionBytes(topic string, partition int32, from, to int64) int64 {
	q, ok := s.queue(topic, partition)
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

// OffsetKeepingBytes is the first offset in [from, to) from which the
// partition's records take at most limit bytes, at a record boundary.
func (s *Store) OffsetKeepingBytes(topic string, partition int32, from, to, limit int64) int64 {
	q, ok := s.queue(topic, partition)
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

// OffsetForTime returns the first offset of the first batch whose max
// timestamp is at least ts (unix ms), and that timestamp.
func (s *Store) OffsetForTime(topic string, partition int32, ts int64) (int64, int64, bool) {
	q, ok := s.queue(topic, partition)
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

// ScanRecords calls fn with every record stored from the record boundary
// from (or the log's start, if later) to the end, in log order.
func (s *Store) ScanRecords(from int64, fn func(topic string, id commitlog.TopicID, partition int32, base, end int64, batch []byte)) error {
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

// Stats reports sizes for the metrics.
func (s *Store) Stats() Stats {
	lag := s.Lag()
	small, smallBytes := s.queues.SmallStats()
	return Stats{
		LogBytes: s.log.WriteOffset() - s.log.MinOffset(),
		LogFiles: len(s.log.Files()),
		LagBytes: lag.Bytes,
		LagTime:  lag.Time,

		WriteFailed: s.log.Stats().FlushFailed || s.queues.FlushFailed(),
		Watchers:    s.Watchers(),

		SmallQueues:     small,
		SmallQueueBytes: smallBytes,
	}
}

// SyncFlush reports whether the log is flushed as soon as records are
// appended (commitlog.FlushSync): an acknowledgement that waits for
// WaitDurable then means on disk.
func (s *Store) SyncFlush() bool { return s.log.Options().FlushMode == commitlog.FlushSync }

// OldestFileEnd is the physical offset where the log's oldest file ends,
// 0 while the log has a single file: what the group coordinator copies
// live commits out of before retention deletes it.
func (s *Store) OldestFileEnd() int64 {
	files := s.log.Files()
	if len(files) < 2 {
		return 0
	}
	return files[1].Base
}

// FirstHeld is the first offset of the partition whose record the log
// still holds: a consume-queue file is dropped only once all of it is
// before the log's start, so its first entries may point at deleted
// records.
func (s *Store) FirstHeld(topic string, partition int32) int64 {
	q, ok := s.queue(topic, partition)
	if !ok {
		return 0
	}
	off := q.MinOffset()
	for ; off < q.MaxOffset(); off++ {
		if e, err := q.Get(off); err != nil || e.PhysOffset >= s.log.MinOffset() {
			break
		}
	}
	return off
}

// FirstLive is the physical offset of the record holding offset of a
// partition, for the broker's live start (SetLiveStart): math.MaxInt64
// when the partition holds nothing from offset on, math.MinInt64 when
// what it holds cannot be read (a partition written to whose queue or
// entry is unreadable), which keeps everything.
func (s *Store) FirstLive(topic string, partition int32, offset int64) int64 {
	q, ok := s.queue(topic, partition)
	if !ok {
		if id, _ := s.liveID(topic); s.log.NextQueueOffset(topic, id, partition) > 0 {
			return math.MinInt64 // written, but its queue is unreadable
		}
		return math.MaxInt64 // never written
	}
	if offset >= q.MaxOffset() {
		return math.MaxInt64
	}
	e, err := q.Get(offset)
	if err != nil {
		return math.MinInt64
	}
	return e.PhysOffset
}

// SetLiveStart gives retention the physical offset of the oldest record
// still served (commitlog.Log.SetLiveStart): files wholly before it are
// deleted at the next check however young or small the log is.
func (s *Store) SetLiveStart(liveStart func() int64) { s.log.SetLiveStart(liveStart) }

// LeaderEpochs lists the epochs of the log's leader-epoch file, oldest
// first; none when it has none.
func (s *Store) LeaderEpochs() ([]EpochStart, error) {
	e, err := s.Epochs()
	if err != nil {
		return nil, err
	}
	return e.List(), nil
}
