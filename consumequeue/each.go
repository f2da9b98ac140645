package consumequeue

import (
	"maps"
	"os"
	"slices"
)

// Each opens every queue, as Lookup does (one that cannot be opened is
// logged and skipped), and calls fn with it, in no particular order.
// Unlike Queues it neither sorts nor dedups a list of every queue's ID: at
// 1,000,000 small queues, sorting Queues' list took a tenth of a
// restart's CPU.
func (s *Store) Each(fn func(*Queue)) {
	s.mu.RLock()
	qs := slices.Collect(maps.Values(s.queues))
	s.mu.RUnlock()
	for _, q := range qs {
		fn(q)
	}
	for _, id := range s.dirQueues() {
		s.mu.RLock()
		_, seen := s.queues[id]
		s.mu.RUnlock()
		if seen {
			continue
		}
		if q, ok := s.Lookup(id.Topic, id.Partition); ok {
			fn(q)
		}
	}
}

// Topics lists the topic names that have queues in the journal or a
// directory, sorted. It opens no queue.
func (s *Store) Topics() []string {
	names := map[string]struct{}{}
	s.journal.mu.Lock()
	for _, sq := range s.journal.live {
		names[sq.id.Topic] = struct{}{}
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
