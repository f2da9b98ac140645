package group

import (
	"context"
	"errors"
)

// Errors a Log wraps so that a commit it could not store is answered as
// Kafka's group coordinator answers it; any other error is the storage's.
var (
	// ErrNotCoordinator: this node no longer leads the log holding the
	// offsets topic (NOT_COORDINATOR: the client finds the coordinator
	// again).
	ErrNotCoordinator = errors.New("group: not the coordinator")
	// ErrNotEnoughReplicas: too few replicas are in sync to make the
	// commit durable as configured (COORDINATOR_NOT_AVAILABLE, which
	// Kafka answers for an under-replicated offsets topic: the client
	// retries).
	ErrNotEnoughReplicas = errors.New("group: not enough in-sync replicas")
)

// Log is where the coordinator keeps committed offsets: the partitions of
// the internal offsets topic in the commit log. The broker implements it
// over its storage and owns the record-batch format the records travel in.
type Log interface {
	// Append stores recs, all or nothing, as one commit-log record in the
	// given partition of the offsets topic. It returns the physical offset
	// where that record ends and the partition's next offset after it.
	// When the record could not be made durable as configured (too few
	// replicas in sync) it stores nothing and fails at once.
	Append(partition int32, recs []Record) (end, next int64, err error)
	// WaitDurable returns once the log is durable through end: on disk
	// and, when the log is replicated, on the replicas the configuration
	// requires.
	WaitDurable(ctx context.Context, end int64) error
	// Replay calls fn, in log order, for every stored record of partition
	// at offsets from `from` on, with the physical end of the commit-log
	// record holding it, and returns the partition's next offset.
	Replay(partition int32, from int64, fn func(r Record, end int64) error) (next int64, err error)
	// Start is the first offset of partition whose record is still stored
	// (retention deletes from the front).
	Start(partition int32) int64
	// OldestFileEnd is the physical offset where the oldest commit-log file
	// ends, the next file retention deletes; 0 while the log has one file.
	OldestFileEnd() int64
}
