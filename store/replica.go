package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/dispatcher"
)

// Truncate cuts the commit log and its consume queues back to the record
// boundary to: the hook of a replication follower whose new leader never
// had the tail (see "Replicas" in the package doc).
func (s *Store) Truncate(to int64) error {
	return s.d.Do(context.Background(), "truncate", func() error {
		return s.cut(to, func() error { return s.log.Truncate(to) })
	})
}

// Restart empties the commit log and starts it again at at: the hook of a
// follower whose leader no longer holds where this log ends. Every consume
// queue is reset to its partition's offset in next, the leader's next
// offsets as of at (OffsetsAt), and a queue next does not name to 0, as
// are the log's counters; so a partition none of whose records the leader
// still holds goes on at the leader's offset rather than at 0. The queues
// are reset and durable before the log is touched: a crash in between
// leaves the old log indexed at offsets no record reaches, and the
// follower, still behind its leader, restarts again.
func (s *Store) Restart(at int64, next []commitlog.PartitionOffset) error {
	return s.d.Do(context.Background(), "restart", func() error {
		counters, err := s.restartQueues(next)
		if err != nil {
			return err
		}
		if err := s.cut(0, func() error { return s.log.Restart(at) }); err != nil {
			return err
		}
		for _, p := range counters {
			s.log.SetQueueOffset(p.Topic, p.TopicID, p.Partition, p.Next)
		}
		s.d.ResumeAt(at)
		return nil
	})
}

// restartQueues resets every queue as Restart describes and returns the
// offsets the log's counters must take.
func (s *Store) restartQueues(next []commitlog.PartitionOffset) ([]commitlog.PartitionOffset, error) {
	named := make(map[consumequeue.ID]bool, len(next))
	for _, p := range next {
		named[consumequeue.ID{Topic: dispatcher.QueueName(p.Topic, p.TopicID), Partition: p.Partition}] = true
	}
	all := slices.Clone(next)
	for _, id := range s.queues.Queues() {
		if !named[id] {
			topic, tid := dispatcher.ParseQueueName(id.Topic)
			all = append(all, commitlog.PartitionOffset{Topic: topic, TopicID: tid, Partition: id.Partition})
		}
	}
	for _, p := range all {
		q, err := s.queues.Queue(dispatcher.QueueName(p.Topic, p.TopicID), p.Partition)
		if err != nil {
			return nil, fmt.Errorf("store: restart: %w", err)
		}
		if err := q.Reset(p.Next); err != nil {
			return nil, fmt.Errorf("store: restart: %w", err)
		}
	}
	if err := s.queues.Flush(); err != nil {
		return nil, fmt.Errorf("store: restart: flush consume queues: %w", err)
	}
	return all, nil
}

// OffsetsAt returns, for every consume queue, its partition's next offset
// at the physical position at: the offset of its first entry pointing at
// or past at, or MaxOffset when there is none. A replication leader sends
// them, at its log's MinOffset, to a follower that restarts there. It runs
// beside dispatching: entries appended meanwhile point past at and do not
// change the answer, and entries retention deletes meanwhile make it
// wrong only for an at the log no longer holds, which the follower cannot
// replicate from anyway.
func (s *Store) OffsetsAt(at int64) []commitlog.PartitionOffset {
	var out []commitlog.PartitionOffset
	for _, id := range s.queues.Queues() {
		q, ok := s.queues.Lookup(id.Topic, id.Partition)
		if !ok {
			continue
		}
		lo, hi := q.MinOffset(), q.MaxOffset()
		next := lo + int64(sort.Search(int(hi-lo), func(i int) bool {
			e, err := q.Get(lo + int64(i))
			return err != nil || e.PhysOffset >= at
		}))
		topic, tid := dispatcher.ParseQueueName(id.Topic)
		out = append(out, commitlog.PartitionOffset{Topic: topic, TopicID: tid, Partition: id.Partition, Next: next})
	}
	return out
}

// cut drops the queue entries at or past from, moves the dispatched offset
// and the cursor back, and writes a checkpoint claiming nothing past from
// before cutLog changes the log, so a crash at any step recovers a
// consistent directory. It runs on the dispatching goroutine and holds off
// the checkpointer, whose marks could otherwise claim the cut tail.
func (s *Store) cut(from int64, cutLog func() error) error {
	s.cpRun.Lock()
	defer s.cpRun.Unlock()
	if err := s.queues.TruncateFrom(from); err != nil {
		return fmt.Errorf("store: truncate consume queues from %d: %w", from, err)
	}
	s.d.Rewind(from)
	if err := s.queues.Flush(); err != nil {
		return fmt.Errorf("store: flush consume queues: %w", err)
	}
	cp := Checkpoint{
		CommitLogFlushed: min(s.log.FlushedOffset(), from),
		Dispatched:       min(s.d.Dispatched(), from),
		Time:             time.Now().UTC(),
	}
	if err := writeCheckpoint(s.opts.FS, s.opts.Dir, cp); err != nil {
		return err
	}
	s.cpMu.Lock()
	s.cp = cp
	s.cpMu.Unlock()
	s.cpFrom.Store(cp.Dispatched)
	if err := cutLog(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	s.d.ResumeAt(s.d.Dispatched())
	return nil
}
