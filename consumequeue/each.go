package consumequeue

import (
	"maps"
	"os"
	"slices"
)

// Each opens every queue (one that cannot be opened is logged and
// skipped, as Lookup does) and calls fn with it, in no particular order.
// Unlike Queues it neither sorts nor dedups a list of every queue's ID: at
// 1,000,000 small queues, sorting Queues' list took a tenth of a
// restart's CPU.
func (s *Store) Each(fn func(*Queue)) {
	qs, err := s.all()
	if err != nil {
		s.log.WithError(err).Error("consume queues unreadable")
	}
	for _, q := range qs {
		fn(q)
	}
}

// Topics lists the topic names that have queues in the journal or a
// directory, sorted. It opens no queue.
func (s *Store) Topics() []string {
	names := map[string]struct{}{}
	s.journal.mu.Lock()
	// Counted as queues come and go: iterating a million small queues
	// was 0.3 CPU s of a restart.
	for topic := range s.journal.topics {
		names[topic] = struct{}{}
	}
	s.journal.mu.Unlock()
	des, _ := os.ReadDir(s.opts.Dir)
	for _, de := range des {
		if de.IsDir() && validTopic(de.Name()) {
			names[de.Name()] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(names))
}

// Empty reports whether the store holds no queue, in the journal or in a
// directory: recovery rebuilds every queue from the commit log then.
// Unlike len(Queues()) it neither collects nor sorts the journal's
// queues, a million of them at a million partitions.
func (s *Store) Empty() bool {
	s.journal.mu.Lock()
	small := len(s.journal.live)
	s.journal.mu.Unlock()
	return small == 0 && len(s.dirQueues()) == 0
}
