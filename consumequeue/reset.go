package consumequeue

import "fmt"

// Reset empties the queue and starts it again at next: MinOffset and
// MaxOffset both become next, and the next Append must use next (or, the
// queue being empty, a larger offset). A replication follower whose log
// restarts at its leader's first physical offset resets every queue to
// the leader's next offset there, so a partition whose records the
// leader's retention deleted keeps counting where the leader does.
//
// What remains is one file with no entries whose header's StartOffset is
// next, as DeleteBefore leaves a queue whose every entry is deleted, so
// the start survives a restart once Flush has made the file durable.
// Readers see the queue empty throughout: MinOffset is never below
// MaxOffset while the files change. A small queue is promoted first: the
// journal has no record for "empty, starting at next", and a follower's
// restart is rare enough to pay a file per queue; until Flush confirms the
// promotion a crash brings the queue back as it was, before the reset.
func (q *Queue) Reset(next int64) error {
	q.s.promoter.runMu.Lock()
	defer q.s.promoter.runMu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed.Load() {
		return fmt.Errorf("consumequeue: reset %s/%d: %w", q.id.Topic, q.id.Partition, ErrClosed)
	}
	if next < 0 {
		return fmt.Errorf("consumequeue: reset %s/%d to %d: %w", q.id.Topic, q.id.Partition, next, ErrOutOfRange)
	}
	if q.small.Load() {
		if err := q.promote(); err != nil {
			return err
		}
	}
	// Empty for readers first (MaxOffset <= MinOffset), then the files go.
	q.max.Store(min(q.max.Load(), q.min.Load()))
	old := q.snapshot()
	q.setFiles(nil)
	if err := q.removeFiles(old); err != nil {
		return err
	}
	f, err := q.createFile(next-next%q.epf, next)
	if err != nil {
		return err
	}
	f.markDirty()
	q.setFiles([]*file{f})
	if next >= q.min.Load() {
		q.min.Store(next)
		q.max.Store(next)
	} else {
		q.max.Store(next)
		q.min.Store(next)
	}
	return nil
}
