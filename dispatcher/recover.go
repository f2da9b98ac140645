package dispatcher

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
)

// open opens both stores and brings the consume queues in line with the
// commit log; see "Recovery" in the package doc.
func (d *Dispatcher) open(crashed bool) error {
	began := time.Now()
	cpPath := filepath.Join(d.opts.Dir, checkpointName)
	cp, err := ReadCheckpoint(cpPath)
	haveCP := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		// The log is the authority and the queues can be rebuilt from it, so
		// a damaged checkpoint costs a full scan, not the data directory.
		d.logger.WithError(err).Warn("checkpoint unreadable; recovering from the start of the commit log")
		crashed = true
	}

	logOpts := d.opts.CommitLog
	if haveCP {
		logOpts.Flushed = cp.CommitLogFlushed
	}
	d.log, err = commitlog.Open(logOpts)
	if err != nil {
		return fmt.Errorf("dispatcher: %w", err)
	}
	// Before Recover starts retention: until the first publish the floor
	// is 0 and nothing can be deleted, and every pass after it reaches
	// the queues through the hook.
	d.log.AddRetentionFloor(d.dispatched.Load)
	d.log.OnRetention(d.onRetention)
	if extra := d.opts.RetentionFloor; extra != nil {
		d.log.AddRetentionFloor(extra)
	}
	d.queues, err = consumequeue.Open(d.opts.ConsumeQueue)
	if err != nil {
		return fmt.Errorf("dispatcher: %w", err)
	}

	// Queues of incarnations deleted since they were written: a crash
	// between the metadata change and the queue removal leaves them.
	if err := d.deleteIncarnations(func(topic string, id commitlog.TopicID) bool { return !d.isLive(topic, id) }); err != nil {
		return err
	}
	minOff := d.log.MinOffset()
	rebuild := len(d.queues.Queues()) == 0 && len(d.log.Files()) > 0
	start := minOff
	// A repair (RecoverTruncate) reads the whole log, not only what the
	// checkpoint left undispatched: damage below the checkpoint (a record
	// an older build stored claiming more offsets than it holds, indexed
	// before a clean stop) is found and cut too. Indexing is idempotent.
	if haveCP && !rebuild && !d.opts.CommitLog.RecoverTruncate {
		start = max(cp.Dispatched, minOff)
	}
	if crashed && !rebuild {
		if err := d.queues.TruncateFrom(start); err != nil {
			return fmt.Errorf("dispatcher: truncate consume queues from %d: %w", start, err)
		}
	}
	var records int64
	end, err := d.log.Recover(start, func(r *commitlog.Record) error {
		records++
		return d.index(r)
	})
	if err != nil {
		return fmt.Errorf("dispatcher: recover commit log from %d: %w", start, err)
	}
	if haveCP && end < cp.Dispatched {
		// Only with RecoverTruncate: the log was cut before its flushed
		// mark, and consume-queue entries may point at records that are gone.
		if err := d.queues.TruncateFrom(end); err != nil {
			return fmt.Errorf("dispatcher: truncate consume queues from %d: %w", end, err)
		}
	}
	if minOff > 0 {
		// Retention may have deleted log files after the last run applied it.
		if err := d.queues.DeleteBefore(minOff); err != nil {
			return fmt.Errorf("dispatcher: delete consume-queue files before %d: %w", minOff, err)
		}
	}
	for _, id := range d.queues.Queues() {
		q, ok := d.queues.Lookup(id.Topic, id.Partition)
		if !ok {
			continue
		}
		topic, tid := ParseQueueName(id.Topic)
		d.log.SetQueueOffset(topic, tid, id.Partition, q.MaxOffset())
	}
	d.publish(end)
	d.cursor = d.log.Cursor(end)
	d.cp = cp
	d.cpFrom.Store(cp.Dispatched)
	d.logger.WithFields(map[string]any{
		"crashed": crashed, "rebuild": rebuild, "from": start, "end": end,
		"records": records, "elapsed": time.Since(began).String(),
	}).Info("data directory recovered")
	return nil
}

// index appends the consume-queue entries of one record. It is idempotent:
// offsets the queue already holds are skipped, which makes a re-scan over
// dispatched records harmless.
func (d *Dispatcher) index(r *commitlog.Record) error {
	if !d.dispatchable(r.Topic, r.TopicID) {
		return nil
	}
	key := incarnation{topic: r.Topic, id: r.TopicID, partition: r.Partition}
	q := d.cache[key]
	if q == nil {
		var err error
		q, err = d.queues.Queue(QueueName(r.Topic, r.TopicID), r.Partition)
		if err != nil {
			return fmt.Errorf("dispatcher: open queue %s/%d: %w", QueueName(r.Topic, r.TopicID), r.Partition, err)
		}
		d.cache[key] = q
	}
	id := q.ID()
	end := r.QueueOffset + int64(max(r.Count, 1))
	next := q.MaxOffset()
	if end <= next {
		return nil
	}
	if r.QueueOffset > next && q.MinOffset() == next {
		// An empty queue starts where its first record is: a partition
		// whose older records retention removed.
		next = r.QueueOffset
	}
	if r.QueueOffset > next {
		if !d.gaps[id] {
			d.gaps[id] = true
			d.logger.WithFields(map[string]any{
				"topic": r.Topic, "partition": r.Partition, "queue_max": next,
				"record_offset": r.QueueOffset, "phys": r.PhysOffset,
			}).Error("commit-log record leaves a gap in its consume queue; not dispatched")
		}
		return nil
	}
	e := consumequeue.Entry{PhysOffset: r.PhysOffset, Size: r.TotalSize, Timestamp: r.ProducerTimestamp}
	if err := q.AppendRange(next, end-next, e); err != nil {
		return fmt.Errorf("dispatcher: index %s/%d offsets %d-%d: %w", r.Topic, r.Partition, next, end-1, err)
	}
	if d.watches.count.Load() > 0 {
		d.touched[id] = end
	}
	return nil
}
