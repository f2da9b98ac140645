package broker

import (
	"context"

	"github.com/unilog/unilog/store"
)

// Storage is what the broker needs from the unified log, owned here so the
// protocol layer does not depend on how storage is composed. *store.Store
// is the production implementation; the benchmark serves the Kafka layout
// through it too, to compare layouts end to end, and answers
// store.ErrUnsupported for what that layout cannot do (groups' files,
// replication).
type Storage interface {
	// Append stores each batch as one commit log record spanning its Count
	// offsets, with the base offset stamped into it, in order, and appends
	// one Appended per stored batch to dst. On an error the batches before
	// the one it is about are stored (and in dst) and none after it. A
	// produce request's batches go in one call, so that the log's lock,
	// the dispatcher's wake-up and a sync flush's kick are paid once per
	// request, not once per partition.
	Append(dst []Appended, batches []StorageBatch) ([]Appended, error)
	// SyncFlush reports whether the log is flushed as records are
	// appended: an acks=-1 produce then waits for WaitDurable.
	SyncFlush() bool
	// WaitDurable blocks until the log is flushed through end.
	WaitDurable(ctx context.Context, end int64) error
	// WaitDispatched blocks until the consume queues index the log through end.
	WaitDispatched(ctx context.Context, end int64) error
	// WriteOffset is the physical end of the log.
	WriteOffset() int64
	// Bounds returns the first and the next offset of a partition; an
	// unwritten partition is [0, 0).
	Bounds(topic string, partition int32) (min, max int64)
	// Partition is a read handle on a partition, resolved once: a fetch
	// takes one per partition and reads every batch through it.
	Partition(topic string, partition int32) PartitionReader
	// OffsetForTime returns the first offset of the first batch whose max
	// timestamp (the producer's CreateTime) is at least ts (unix ms), and
	// that timestamp; ok is false when there is none.
	OffsetForTime(topic string, partition int32, ts int64) (offset, batchTS int64, ok bool)
	// PartitionBytes is the size of the partition's records holding
	// offsets [from, to), each record counted once (DescribeLogDirs); -1
	// when the storage cannot tell.
	PartitionBytes(topic string, partition int32, from, to int64) int64
	// OffsetKeepingBytes is the first offset in [from, to) from which the
	// partition's records take at most limit bytes, at a record boundary
	// (retention.bytes).
	OffsetKeepingBytes(topic string, partition int32, from, to, limit int64) int64
	// ScanRecords calls fn with every record stored from the record
	// boundary from (or the log's start, if later) to the end, in log order;
	// id is the topic incarnation the record was written for, base and end
	// are the record's first offset and physical end. batch is only valid
	// during the call.
	ScanRecords(from int64, fn func(topic string, id store.TopicID, partition int32, base, end int64, batch []byte)) error
	// NewWaiter starts a long poll; the caller releases it.
	NewWaiter() Waiter
	// DeleteTopic drops the consume queues and offset counters of the
	// topic's incarnations that metadata no longer holds; ctx bounds the
	// wait (store.Store.DeleteTopic).
	DeleteTopic(ctx context.Context, topic string) error

	// The group coordinator's offsets log (group_log.go).

	// OldestFileEnd is where the log's oldest file ends, 0 while it has
	// one file: commits before it are copied forward before retention
	// deletes the file.
	OldestFileEnd() int64
	// FirstHeld is the partition's first offset whose record the log
	// still holds.
	FirstHeld(topic string, partition int32) int64

	// Retention (retention.go).

	// AddRetentionFloor keeps every log file ending after floor().
	AddRetentionFloor(floor func() int64) (remove func())
	// SetLiveStart lets retention delete at once the files wholly before
	// liveStart(), which hold only records nobody reads again.
	SetLiveStart(liveStart func() int64)
	// FirstLive is the physical offset of the record holding offset of a
	// partition: math.MaxInt64 when it holds nothing from there on,
	// math.MinInt64 when what it holds cannot be read.
	FirstLive(topic string, partition int32, offset int64) int64

	// Replication: a follower's changes to its log (producer_replica.go)
	// and the leader epochs OffsetForLeaderEpoch answers from.

	// Truncate cuts the log and its queues back to the record boundary to.
	Truncate(to int64) error
	// Restart empties the log and starts it again at at, each partition
	// at its offset in next.
	Restart(at int64, next []store.PartitionOffset) error
	// LeaderEpochs lists the epochs of the log, oldest first.
	LeaderEpochs() ([]store.EpochStart, error)

	// Partition moves (move_copy.go): the target copies a partition in at
	// the offsets the source gave it.

	// NextOffset is the offset the partition's next append takes.
	NextOffset(topic string, partition int32) int64
	// AppendAt stores one batch at base. A partition holding no record
	// here may start at any base; otherwise base must be its next offset
	// (ErrStorageOffset).
	AppendAt(dst []Appended, batch StorageBatch, base int64) ([]Appended, error)

	// Stats reports sizes for the metrics.
	Stats() StorageStats
	// Close flushes and closes the storage with a clean checkpoint.
	Close() error
}

var _ Storage = (*store.Store)(nil)

// StorageBatch is one partition's record batch for Storage.Append.
type StorageBatch = store.Batch

// Appended is where Storage.Append stored a batch: its base offset, the
// physical end of its record (what WaitDurable and WaitDispatched take),
// and the partition's log start offset for the produce answer.
type Appended = store.Appended

// Waiter is one long poll over any number of partitions with a single
// notify channel (store.Waiter). Registrations last until the partition
// grows or Release, so a fetch that returns leaves nothing behind.
type Waiter = store.Waiter

// topicReader is a Storage that resolves a topic once for the read
// handles of many of its partitions (*store.Store: PartitionsOf).
type topicReader interface {
	PartitionsOf(topic string) func(partition int32) PartitionReader
}

var _ topicReader = (*store.Store)(nil)

// partitionsOf returns read handles on topic's partitions: resolved once
// where st can, else one Partition call each.
func partitionsOf(st Storage, topic string) func(partition int32) PartitionReader {
	if tr, ok := st.(topicReader); ok {
		return tr.PartitionsOf(topic)
	}
	return func(p int32) PartitionReader { return st.Partition(topic, p) }
}

// boundsAheadOf returns st's hint that the bounds of a partition of topic
// are about to be read (store.Store.PrefetchBoundsOf), or one that does
// nothing for a storage without it.
func boundsAheadOf(st Storage, topic string) func(partition int32) {
	if bp, ok := st.(interface {
		PrefetchBoundsOf(topic string) func(int32)
	}); ok {
		return bp.PrefetchBoundsOf(topic)
	}
	return func(int32) {}
}

// PartitionReader reads one partition: its bounds, its batches
// (ErrStorageRange when an offset is not stored) and where its records end
// in the log (false when not stored, or the storage has no physical
// positions). See store.Partition.
type PartitionReader = store.Partition

// StorageStats are the sizes Storage reports for the metrics.
type StorageStats = store.Stats

var (
	// ErrStorageRange reports an offset the storage does not hold.
	ErrStorageRange = store.ErrOutOfRange
	// errStorageReadOnly reports an append refused because the disk is
	// full or a flush failed: retriable, nothing was stored.
	errStorageReadOnly = store.ErrReadOnly
	// ErrStorageTooLarge reports a record larger than the log accepts.
	ErrStorageTooLarge = store.ErrTooLarge
)
