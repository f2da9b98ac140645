package broker

import (
	"context"
	"errors"
	"time"

	"github.com/unilog/unilog/commitlog"
)

// Storage is what the broker needs from the unified log, owned here so the
// protocol layer does not depend on how storage is composed. The dispatcher
// adapter (storage_dispatcher.go) is the production implementation; it is
// exported so that Config.Storage can serve another one (bench serves the
// Kafka layout through it, to compare layouts end to end).
type Storage interface {
	// Append stores each batch as one commit log record spanning its Count
	// offsets, with the base offset stamped into it, in order, and appends
	// one Appended per stored batch to dst. On an error the batches before
	// the one it is about are stored (and in dst) and none after it. A
	// produce request's batches go in one call, so that the log's lock,
	// the dispatcher's wake-up and a sync flush's kick are paid once per
	// request, not once per partition.
	Append(dst []Appended, batches []StorageBatch) ([]Appended, error)
	// WaitDurable blocks until the log is flushed through end.
	WaitDurable(ctx context.Context, end int64) error
	// WaitDispatched blocks until the consume queues index the log through end.
	WaitDispatched(ctx context.Context, end int64) error
	// WriteOffset is the physical end of the log.
	WriteOffset() int64
	// Bounds returns the first and the next offset of a partition; an
	// unwritten partition is [0, 0).
	Bounds(topic string, partition int32) (min, max int64)
	// ReadBatch appends to dst the stored batch holding offset and returns
	// the batch's first offset and the offset after it; ErrStorageRange
	// when offset is not (or no longer) stored.
	ReadBatch(topic string, partition int32, offset int64, dst []byte) (out []byte, base, next int64, err error)
	// OffsetForTime returns the first offset of the first batch whose max
	// timestamp (the producer's CreateTime) is at least ts (unix ms), and
	// that timestamp; ok is false when there is none.
	OffsetForTime(topic string, partition int32, ts int64) (offset, batchTS int64, ok bool)
	// ScanRecords calls fn with every record stored from the record
	// boundary from (or the log's start, if later) to the end, in log order;
	// id is the topic incarnation the record was written for, base and end
	// are the record's first offset and physical end. batch is only valid
	// during the call.
	ScanRecords(from int64, fn func(topic string, id commitlog.TopicID, partition int32, base, end int64, batch []byte)) error
	// NewWaiter starts a long poll; the caller releases it.
	NewWaiter() Waiter
	// DeleteTopic drops the consume queues and offset counters of the
	// topic's incarnations that metadata no longer holds; ctx bounds the
	// wait (dispatcher.Dispatcher.DeleteTopic).
	DeleteTopic(ctx context.Context, topic string) error
	// Stats reports sizes for the metrics.
	Stats() StorageStats
	// Close flushes and closes the storage with a clean checkpoint.
	Close() error
}

// StorageBatch is one partition's record batch for Storage.Append.
type StorageBatch struct {
	Topic        string
	Partition    int32
	Count        int32 // records in the batch, the offsets it takes
	MaxTimestamp int64
	Records      []byte
}

// Appended is where Storage.Append stored a batch: its base offset, the
// physical end of its record (what WaitDurable and WaitDispatched take),
// and the partition's log start offset for the produce answer.
type Appended struct {
	Base, End, LogStart int64
}

// Waiter is one long poll over any number of partitions with a single
// notify channel (dispatcher.Waiter). Registrations last until the partition
// grows or Release, so a fetch that returns leaves nothing behind.
type Waiter interface {
	// Watch signals C once the partition holds an offset beyond offset.
	Watch(topic string, partition int32, offset int64)
	C() <-chan struct{}
	// Release drops every registration and a pending signal.
	Release()
}

// StorageStats are the sizes Storage reports for the metrics.
type StorageStats struct {
	LogBytes int64
	LagBytes int64
	LagTime  time.Duration
	// WriteFailed: a flush of the log or the queues failed; appends are
	// refused (errStorageReadOnly) until a restart.
	WriteFailed bool
	Watchers    int64 // partition registrations of live long polls
}

// ErrStorageRange reports an offset the storage does not hold.
var ErrStorageRange = errors.New("broker: offset not stored")

// errStorageReadOnly reports an append refused because the disk is full
// or a flush failed: retriable, nothing was stored.
var errStorageReadOnly = errors.New("broker: storage refuses writes")

// ErrStorageTooLarge reports a record larger than the log accepts.
var ErrStorageTooLarge = errors.New("broker: record too large for the commit log")
