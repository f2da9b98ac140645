package dispatcher

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
)

// incarnationSep separates a topic from its TopicID in a queue directory
// name. Kafka topic names cannot contain it.
const incarnationSep = "@"

// QueueName is the consume-queue directory name of one incarnation of a
// topic: the topic itself for the zero TopicID (records written before
// topic ids, and callers that use none), else topic@<32 hex digits>.
func QueueName(topic string, id commitlog.TopicID) string {
	if id.IsZero() {
		return topic
	}
	return topic + incarnationSep + id.String()
}

// ParseQueueName splits a consume-queue directory name into its topic and
// TopicID; a name without a TopicID suffix is a topic with the zero id.
func ParseQueueName(name string) (topic string, id commitlog.TopicID) {
	i := strings.LastIndex(name, incarnationSep)
	if i < 0 || len(name)-i-1 != 2*commitlog.TopicIDSize {
		return name, id
	}
	if _, err := hex.Decode(id[:], []byte(name[i+1:])); err != nil || QueueName(name[:i], id) != name {
		// Not written by QueueName (upper case, a zero id): a plain topic.
		return name, commitlog.TopicID{}
	}
	return name[:i], id
}

// dispatchable reports whether records of topic carrying id are indexed:
// all but those of an incarnation another one has replaced. A topic the
// metadata does not know is indexed: on a follower its records can arrive
// before the watch that announces the topic's creation, and a record
// skipped then would stay hidden for good (its partition's queue would
// start after it). If the topic was deleted instead, the queues are dead
// weight until the store removes them, or retention passes them.
func (d *Dispatcher) dispatchable(topic string, id commitlog.TopicID) bool {
	if d.opts.Live == nil || d.live.live(topic, id) {
		return true
	}
	live, ok := d.opts.Live(topic)
	if ok && live == id {
		d.live.remember(topic, id)
	}
	return !ok || live == id
}

// Index appends the consume-queue entries of one record. It is idempotent:
// offsets the queue already holds are skipped, which makes a re-scan over
// dispatched records harmless. Recovery calls it before Start; after,
// only the dispatching goroutine does.
func (d *Dispatcher) Index(r *commitlog.Record) error {
	if !d.dispatchable(r.Topic, r.TopicID) {
		return nil
	}
	tq := d.cache.topic(r.Topic, r.TopicID)
	slot := tq.queues.Ptr(r.Partition)
	q := slot.q
	if q == nil {
		var err error
		q, err = d.queues.Queue(tq.name, r.Partition)
		if errors.Is(err, consumequeue.ErrInvalidName) {
			// No retry can name this queue (a topic name too long for its
			// directory, stored by an older build): stopping here would stop
			// indexing every partition behind it.
			if id := (consumequeue.ID{Topic: tq.name, Partition: r.Partition}); !d.gaps[id] {
				d.gaps[id] = true
				d.logger.WithError(err).WithFields(map[string]any{
					"topic": r.Topic, "partition": r.Partition, "record_offset": r.QueueOffset, "phys": r.PhysOffset,
				}).Error("commit-log record's consume queue cannot be named; its partition is not dispatched")
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("dispatcher: open queue %s/%d: %w", tq.name, r.Partition, err)
		}
		slot.q = q
	}
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
		if id := q.ID(); !d.gaps[id] {
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
	if d.opts.Notify != nil && d.opts.Notify.Watching() {
		d.grown.mark(slot)
	}
	return nil
}
