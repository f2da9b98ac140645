package store

import (
	"context"

	"github.com/unilog/unilog/commitlog"
)

// The commit log as replication sees it (package ha/replication's
// Storage): a leader reads raw bytes out, a follower writes its leader's
// bytes in at the same positions, and the dispatcher indexes them like
// any append.

// ReadRaw appends to dst whole records from phys on, at most max bytes
// (commitlog.Log.ReadRaw).
func (s *Store) ReadRaw(dst []byte, phys int64, max int) ([]byte, int64, error) {
	return s.log.ReadRaw(dst, phys, max)
}

// AppendRaw writes a leader's records at phys (commitlog.Log.AppendRaw).
func (s *Store) AppendRaw(phys int64, data []byte) (int64, error) { return s.log.AppendRaw(phys, data) }

// WriteOffset is the physical end of the log.
func (s *Store) WriteOffset() int64 { return s.log.WriteOffset() }

// MinOffset is the physical offset of the oldest record the log holds.
func (s *Store) MinOffset() int64 { return s.log.MinOffset() }

// FlushedOffset is the physical offset below which the log is durable.
func (s *Store) FlushedOffset() int64 { return s.log.FlushedOffset() }

// Appended returns a channel closed at the next append.
func (s *Store) Appended() <-chan struct{} { return s.log.Appended() }

// WaitDurable blocks until the log is flushed through end.
func (s *Store) WaitDurable(ctx context.Context, end int64) error { return s.log.WaitDurable(ctx, end) }

// FileSize is the size of each commit-log file.
func (s *Store) FileSize() int64 { return s.log.Options().FileSize }

// Epochs opens the log's leader-epoch file (commitlog.OpenEpochs), read
// anew at each call: the replica role changes it through its own handle.
func (s *Store) Epochs() (*commitlog.Epochs, error) { return commitlog.OpenEpochs(s.log.Dir()) }

// AddRetentionFloor keeps every log file ending after floor()
// (commitlog.Log.AddRetentionFloor); remove unregisters it.
func (s *Store) AddRetentionFloor(floor func() int64) (remove func()) {
	return s.log.AddRetentionFloor(floor)
}
