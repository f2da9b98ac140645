package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/dispatcher"
)

// loaded is what recovery starts from: the checkpoint, if one was read.
type loaded struct {
	cp         Checkpoint
	haveCP     bool
	unreadable bool          // a checkpoint was there and could not be read
	took       time.Duration // opening both stores
}

// load opens both stores; see "Recovery" in the package doc.
func (s *Store) load() (l loaded, err error) {
	began := time.Now()
	l.cp, err = ReadCheckpoint(filepath.Join(s.opts.Dir, checkpointName))
	l.haveCP = err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// The log is the authority and the queues can be rebuilt from it, so
		// a damaged checkpoint costs a full scan, not the data directory.
		s.logger.WithError(err).Warn("checkpoint unreadable; recovering from the start of the commit log")
		l.unreadable = true
	}
	logOpts := s.opts.CommitLog
	if l.haveCP {
		logOpts.Flushed = l.cp.CommitLogFlushed
	}
	if s.log, err = commitlog.Open(logOpts); err != nil {
		return l, fmt.Errorf("store: %w", err)
	}
	if s.queues, err = consumequeue.Open(s.opts.ConsumeQueue); err != nil {
		return l, fmt.Errorf("store: %w", err)
	}
	l.took = time.Since(began)
	return l, nil
}

// recoverQueues brings the consume queues of the loaded stores in line with the
// commit log; see "Recovery" in the package doc.
func (s *Store) recoverQueues(crashed bool, l loaded) (end int64, err error) {
	began := time.Now()
	cp, haveCP := l.cp, l.haveCP
	crashed = crashed || l.unreadable
	s.d = dispatcher.New(dispatcher.Options{
		Log: s.log, Queues: s.queues, Live: s.opts.Live, Notify: s.watches,
		AfterPass: s.kickCheckpoint, Logger: s.opts.Logger,
	})
	// Before Recover starts retention: until the dispatcher starts the
	// floor is 0 and nothing can be deleted, and every pass after it
	// reaches the queues through the hook.
	s.log.AddRetentionFloor(s.d.Dispatched)
	s.log.OnRetention(s.d.OnRetention)
	if extra := s.opts.RetentionFloor; extra != nil {
		s.log.AddRetentionFloor(extra)
	}

	// Queues of incarnations deleted since they were written: a crash
	// between the metadata change and the queue removal leaves them.
	if err := s.deleteIncarnations(func(topic string, id commitlog.TopicID) bool { return !s.isLive(topic, id) }); err != nil {
		return 0, err
	}
	minOff := s.log.MinOffset()
	rebuild := s.queues.Empty() && len(s.log.Files()) > 0
	start := minOff
	// A repair (RecoverTruncate) reads the whole log, not only what the
	// checkpoint left undispatched: damage below the checkpoint (a record
	// an older build stored claiming more offsets than it holds, indexed
	// before a clean stop) is found and cut too. Indexing is idempotent.
	if haveCP && !rebuild && !s.opts.CommitLog.RecoverTruncate {
		start = max(cp.Dispatched, minOff)
	}
	if crashed && !rebuild {
		if err := s.queues.TruncateFrom(start); err != nil {
			return 0, fmt.Errorf("store: truncate consume queues from %d: %w", start, err)
		}
	}
	var records int64
	end, err = s.log.Recover(start, func(r *commitlog.Record) error {
		records++
		return s.d.Index(r)
	})
	if err != nil {
		return 0, fmt.Errorf("store: recover commit log from %d: %w", start, err)
	}
	if haveCP && end < cp.Dispatched {
		// Only with RecoverTruncate: the log was cut before its flushed
		// mark, and consume-queue entries may point at records that are gone.
		if err := s.queues.TruncateFrom(end); err != nil {
			return 0, fmt.Errorf("store: truncate consume queues from %d: %w", end, err)
		}
	}
	if minOff > 0 {
		// Retention may have deleted log files after the last run applied it.
		if err := s.queues.DeleteBefore(minOff); err != nil {
			return 0, fmt.Errorf("store: delete consume-queue files before %d: %w", minOff, err)
		}
	}
	incarnations := map[string]topicIncarnation{}
	s.queues.Each(func(q *consumequeue.Queue) {
		id := q.ID()
		inc, ok := incarnations[id.Topic]
		if !ok {
			inc.topic, inc.id = dispatcher.ParseQueueName(id.Topic)
			incarnations[id.Topic] = inc
		}
		s.log.SetQueueOffset(inc.topic, inc.id, id.Partition, q.MaxOffset())
	})
	s.cp = cp
	s.cpFrom.Store(cp.Dispatched)
	s.logger.WithFields(map[string]any{
		"crashed": crashed, "rebuild": rebuild, "from": start, "end": end,
		"records": records, "elapsed": (l.took + time.Since(began)).String(),
	}).Info("data directory recovered")
	return end, nil
}
