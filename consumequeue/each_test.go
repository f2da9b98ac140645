package consumequeue

import (
	"maps"
	"slices"
	"testing"
)

// TestEach reopens a store holding queues in the journal and queues with
// files (promoted), in two topics: Each visits every one once with its
// MaxOffset, the unopened queues with files included, and Topics names
// both topics.
func TestEach(t *testing.T) {
	opts := smallOptions(t.TempDir())
	s := mustOpen(t, opts)
	want := map[ID]int64{}
	for p, n := range []int64{1, 3, 20, 0} {
		for _, topic := range []string{"a", "b@0123"} {
			q := mustQueue(t, s, topic, int32(p))
			appendRange(t, q, 0, n)
			want[q.ID()] = n
		}
	}
	waitPromotions(t, s)
	s = reopen(t, s)
	got := map[ID]int64{}
	s.Each(func(q *Queue) {
		if _, dup := got[q.ID()]; dup {
			t.Errorf("%v visited twice", q.ID())
		}
		got[q.ID()] = q.MaxOffset()
	})
	if len(got) != len(want) {
		t.Errorf("visited %d queues, want %d: %v", len(got), len(want), got)
	}
	for id, n := range want {
		if got[id] != n {
			t.Errorf("%v: MaxOffset %d, want %d", id, got[id], n)
		}
	}
	if topics := s.Topics(); !slices.Equal(topics, []string{"a", "b@0123"}) {
		t.Errorf("Topics() = %q", topics)
	}
	if err := s.DeleteTopic("a"); err != nil {
		t.Fatal(err)
	}
	if topics := s.Topics(); !slices.Equal(topics, []string{"b@0123"}) {
		t.Errorf("after deleting a: Topics() = %q", topics)
	}
}

// TestEmpty: a store is empty until a queue is declared, whether the queue
// stays in the journal or has files of its own (SmallEntries -1), and
// after a reopen, which finds either kind without being asked for it.
func TestEmpty(t *testing.T) {
	for _, tc := range []struct {
		name  string
		small int
	}{{"journal", 8}, {"files", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := smallOptions(t.TempDir())
			opts.SmallEntries = tc.small
			s := mustOpen(t, opts)
			if !s.Empty() {
				t.Fatal("a new store is not empty")
			}
			s = reopen(t, s)
			if !s.Empty() {
				t.Fatal("a reopened new store is not empty")
			}
			appendRange(t, mustQueue(t, s, "a", 3), 0, 2)
			if s.Empty() {
				t.Fatal("empty holding a queue")
			}
			s = reopen(t, s)
			if s.Empty() {
				t.Fatal("empty after a reopen holding a queue")
			}
		})
	}
}

// TestJournalTopicCounts: the journal's per-topic count of its queues,
// which Topics reads, follows declarations, promotions confirmed by a
// Flush and topic deletions, and a reopen's replay counts the same.
func TestJournalTopicCounts(t *testing.T) {
	s := mustOpen(t, smallOptions(t.TempDir()))
	check := func(when string) {
		t.Helper()
		s.journal.mu.Lock()
		defer s.journal.mu.Unlock()
		counts := map[string]int{}
		for _, sq := range s.journal.live {
			counts[sq.q.id.Topic]++
		}
		if !maps.Equal(counts, s.journal.topics) {
			t.Fatalf("%s: queues per topic %v, counted %v", when, counts, s.journal.topics)
		}
	}
	for p := range int32(3) {
		appendRange(t, mustQueue(t, s, "small", p), 0, 2)
	}
	appendRange(t, mustQueue(t, s, "promoted", 0), 0, 20)
	appendRange(t, mustQueue(t, s, "gone", 0), 0, 1)
	check("declared")
	waitPromotions(t, s)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	check("promoted")
	if err := s.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	check("deleted")
	if topics := s.Topics(); !slices.Equal(topics, []string{"promoted", "small"}) {
		t.Errorf("Topics() = %q", topics)
	}
	s = reopen(t, s)
	check("reopened")
}
