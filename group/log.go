package group

import "context"

// Log is where the coordinator keeps committed offsets: the partitions of
// the internal offsets topic in the commit log. The broker implements it
// over its storage and owns the record-batch format the records travel in.
type Log interface {
	// Append stores recs, all or nothing, as one commit-log record in the
	// given partition of the offsets topic and returns the physical offset
	// where that record ends.
	Append(partition int32, recs []Record) (end int64, err error)
	// WaitDurable returns once the log is on disk through end.
	WaitDurable(ctx context.Context, end int64) error
	// Replay calls fn, in log order, for every stored record of partition
	// with the physical end of the commit-log record holding it.
	Replay(partition int32, fn func(r Record, end int64) error) error
	// OldestFileEnd is the physical offset where the oldest commit-log file
	// ends, the next file retention deletes; 0 while the log has one file.
	OldestFileEnd() int64
}
