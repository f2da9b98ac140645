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

// incarnation is one partition of one incarnation of a topic, as a record
// names it; the dispatcher's cache is keyed by it so indexing a record
// builds no string.
type incarnation struct {
	topic     string
	id        commitlog.TopicID
	partition int32
}

// liveID returns the TopicID whose records of topic are dispatched; with
// no Options.Live every topic is live with the zero id.
func (d *Dispatcher) liveID(topic string) (commitlog.TopicID, bool) {
	if d.opts.Live == nil {
		return commitlog.TopicID{}, true
	}
	return d.opts.Live(topic)
}

// dispatchable reports whether records of topic carrying id are indexed:
// all but those of an incarnation another one has replaced. A topic the
// metadata does not know is indexed: on a follower its records can arrive
// before the watch that announces the topic's creation, and a record
// skipped then would stay hidden for good (its partition's queue would
// start after it). If the topic was deleted instead, the queues are dead
// weight until Open or DeleteTopic removes them, or retention passes them.
func (d *Dispatcher) dispatchable(topic string, id commitlog.TopicID) bool {
	if d.opts.Live == nil {
		return true
	}
	live, ok := d.opts.Live(topic)
	return !ok || live == id
}

// isLive reports whether id is the live incarnation of topic.
func (d *Dispatcher) isLive(topic string, id commitlog.TopicID) bool {
	if d.opts.Live == nil {
		return true
	}
	live, ok := d.opts.Live(topic)
	return ok && live == id
}

// Queue returns the consume queue of a partition of the live incarnation
// of topic, if it has one.
func (d *Dispatcher) Queue(topic string, partition int32) (*consumequeue.Queue, bool) {
	id, ok := d.liveID(topic)
	if !ok {
		return nil, false
	}
	return d.queues.Lookup(d.queueName(topic, id), partition)
}

// topicIncarnation names one incarnation of a topic, all its partitions.
type topicIncarnation struct {
	topic string
	id    commitlog.TopicID
}

// queueName is QueueName, remembered: Queue serves every partition of
// every produce answer and fetch, and building the name each time was an
// allocation per partition per request.
func (d *Dispatcher) queueName(topic string, id commitlog.TopicID) string {
	k := topicIncarnation{topic, id}
	if name, ok := d.names.Load(k); ok {
		return name.(string)
	}
	name := QueueName(topic, id)
	d.names.Store(k, name)
	return name
}

// deleteIncarnations removes the consume queues and offset counters of
// every incarnation whose queue directory passes dead. It runs on the
// dispatching goroutine (or in Open before it starts).
func (d *Dispatcher) deleteIncarnations(dead func(topic string, id commitlog.TopicID) bool) error {
	names := map[string]bool{}
	for _, q := range d.queues.Queues() {
		names[q.Topic] = true
	}
	var errs []error
	for name := range names {
		topic, id := ParseQueueName(name)
		if !dead(topic, id) {
			continue
		}
		d.log.DeleteQueue(topic, id)
		d.names.Delete(topicIncarnation{topic, id})
		for k := range d.cache {
			if k.topic == topic && k.id == id {
				delete(d.cache, k)
			}
		}
		for qid := range d.gaps {
			if qid.Topic == name {
				delete(d.gaps, qid)
			}
		}
		if err := d.queues.DeleteTopic(name); err != nil {
			errs = append(errs, fmt.Errorf("dispatcher: delete queues of %s: %w", name, err))
		}
		d.watches.wakeTopic(name)
		d.logger.WithField("queue", name).Info("consume queues of a deleted topic incarnation removed")
	}
	return errors.Join(errs...)
}
