package group

import "context"

// Log is where the coordinator keeps committed offsets: the partitions of
// the internal offsets topic in the commit log. The broker implements it
// over its storage and owns the record-batch format the records travel in.
type Log interface {
	// Append stores recs, all or nothing, as one commit-log record in the
	// given partition of the offsets topic. It returns the physical offset
	// where that record ends and the partition's next offset after it.
	Append(partition int32, recs []Record) (end, next int64, err error)
	// WaitDurable returns once the log is on disk through end.
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
