package store

import (
	"errors"
	"fmt"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/dispatcher"
)

// liveID returns the TopicID whose records of topic are dispatched; with
// no Options.Live every topic is live with the zero id.
func (s *Store) liveID(topic string) (commitlog.TopicID, bool) {
	if s.opts.Live == nil {
		return commitlog.TopicID{}, true
	}
	return s.opts.Live(topic)
}

// isLive reports whether id is the live incarnation of topic.
func (s *Store) isLive(topic string, id commitlog.TopicID) bool {
	if s.opts.Live == nil {
		return true
	}
	live, ok := s.opts.Live(topic)
	return ok && live == id
}

// queue returns the consume queue of a partition of the live incarnation
// of topic, if it has one.
func (s *Store) queue(topic string, partition int32) (*consumequeue.Queue, bool) {
	id, ok := s.liveID(topic)
	if !ok {
		return nil, false
	}
	return s.queues.Lookup(s.queueName(topic, id), partition)
}

// topicIncarnation names one incarnation of a topic, all its partitions.
type topicIncarnation struct {
	topic string
	id    commitlog.TopicID
}

// queueName is QueueName, remembered: queue serves every partition of
// every produce answer and fetch, and building the name each time was an
// allocation per partition per request.
func (s *Store) queueName(topic string, id commitlog.TopicID) string {
	k := topicIncarnation{topic, id}
	if name, ok := s.names.Load(k); ok {
		return name.(string)
	}
	name := QueueName(topic, id)
	s.names.Store(k, name)
	return name
}

// QueueName is the consume-queue directory name of one incarnation of a
// topic (dispatcher.QueueName); reports and tools name partitions by it.
func QueueName(topic string, id commitlog.TopicID) string { return dispatcher.QueueName(topic, id) }

// deleteIncarnations removes the consume queues and offset counters of
// every incarnation whose queue directory passes dead. It runs on the
// dispatching goroutine (or in Open before it starts).
func (s *Store) deleteIncarnations(dead func(topic string, id commitlog.TopicID) bool) error {
	var errs []error
	for _, name := range s.queues.Topics() {
		topic, id := dispatcher.ParseQueueName(name)
		if !dead(topic, id) {
			continue
		}
		s.log.DeleteQueue(topic, id)
		s.names.Delete(topicIncarnation{topic, id})
		s.forgetHandles(topic, id)
		s.d.Forget(topic, id)
		if err := s.queues.DeleteTopic(name); err != nil {
			errs = append(errs, fmt.Errorf("store: delete queues of %s: %w", name, err))
		}
		s.watches.wakeTopic(name)
		s.logger.WithField("queue", name).Info("consume queues of a deleted topic incarnation removed")
	}
	return errors.Join(errs...)
}
