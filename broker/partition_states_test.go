package broker

import (
	"maps"
	"slices"
	"testing"
)

// TestPartitionStates: a state is found where it was made, whatever the
// order partitions are made in or how far the table grew; get makes
// none; clone's tables are the partitions' at the time, each the same
// state; a deleted topic leaves the others.
func TestPartitionStates(t *testing.T) {
	s := make(partitionStates)
	made := map[topicPartition]*partitionState{}
	for _, tp := range []topicPartition{{"a", 5}, {"a", 0}, {"b", 2}, {"a", 70}, {"a", 5}, {"b", 0}} {
		p := s.at(tp.topic, tp.partition)
		if prev, ok := made[tp]; ok && prev != p {
			t.Fatalf("%v: a second state", tp)
		}
		made[tp] = p
	}
	for _, tc := range []struct {
		topic     string
		partition int32
		want      bool
	}{
		{"a", 5, true}, {"a", 70, true}, {"a", 1, false}, {"a", 71, false}, {"a", -1, false},
		{"b", 2, true}, {"b", 1, false}, {"c", 0, false},
	} {
		if got := s.get(tc.topic, tc.partition); (got != nil) != tc.want || tc.want && got != made[topicPartition{tc.topic, tc.partition}] {
			t.Errorf("get(%s, %d) = %p, want %v", tc.topic, tc.partition, got, tc.want)
		}
	}
	if len(s["c"]) != 0 || len(s["a"]) != 71 {
		t.Fatalf("tables: a %d, c %d slots", len(s["a"]), len(s["c"]))
	}
	c := s.clone()
	s.at("a", 1)
	seen := map[topicPartition]*partitionState{}
	for topic, t := range c {
		for i, p := range t {
			if p != nil {
				seen[topicPartition{topic, int32(i)}] = p
			}
		}
	}
	if !maps.Equal(seen, made) {
		t.Fatalf("clone holds %v, want %v", seen, made)
	}
	delete(s, "a")
	if s.get("a", 5) != nil || s.get("b", 2) != made[topicPartition{"b", 2}] {
		t.Fatal("deleting topic a")
	}
}

// TestResolveStates: a request's batches of one topic get their
// partitions' states, the same a later lookup finds, the table grown
// once to the topic's partition count.
func TestResolveStates(t *testing.T) {
	b := &Broker{parts: make(partitionStates)}
	pending := make([]pendingBatch, 0, 3)
	for _, p := range []int32{7, 0, 3} {
		pending = append(pending, pendingBatch{sb: StorageBatch{Topic: "t", Partition: p}})
	}
	b.resolveStates("t", 10, pending)
	for _, pb := range pending {
		if pb.p == nil || pb.p != b.partition("t", pb.sb.Partition) {
			t.Fatalf("partition %d: state %p, lookup %p", pb.sb.Partition, pb.p, b.partition("t", pb.sb.Partition))
		}
	}
	if n := len(b.parts["t"]); n != 10 {
		t.Fatalf("table of %d slots, want 10", n)
	}
	// A batch past the count (metadata raced ahead of it) grows the table.
	more := []pendingBatch{{sb: StorageBatch{Topic: "t", Partition: 12}}}
	b.resolveStates("t", 10, more)
	if more[0].p == nil || more[0].p != b.knownPartition("t", 12) {
		t.Fatal("partition 12 not resolved")
	}
	if got := slices.IndexFunc(b.parts["t"], func(p *partitionState) bool { return p == more[0].p }); got != 12 {
		t.Fatalf("partition 12's state in slot %d", got)
	}
}

// BenchmarkResolveStates is the broker's partition-state lookup for one
// request to 10,000 partitions of a topic (one batch each), as the
// 10,000-partition rows of docs/BENCHMARKS.md send them.
//
//	go test -run '^$' -bench ResolveStates -count 6 ./broker/
func BenchmarkResolveStates(b *testing.B) {
	const parts = 10_000
	br := &Broker{parts: make(partitionStates)}
	topics := []string{"bench-topic-0", "bench-topic-1", "bench-topic-2", "bench-topic-3"}
	pending := make([]pendingBatch, parts)
	for i := range pending {
		pending[i].sb.Partition = int32(i)
	}
	for _, topic := range topics {
		br.resolveStates(topic, parts, pending)
	}
	b.ResetTimer()
	for i := range b.N {
		br.resolveStates(topics[i%len(topics)], parts, pending)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*parts), "ns/batch")
}

// fenceByTopic is a Moves answering the fence per topic, as the control
// plane's does.
type fenceByTopic struct {
	*fakeMoves
	fenced []int32
}

func (f fenceByTopic) FencedInTopic(string) func(int32) bool {
	return func(p int32) bool { return slices.Contains(f.fenced, p) }
}

// TestTopicFenced: a produce's fence per partition is the Moves' answer
// per topic where it gives one, else Move's Fenced per partition; no
// Moves fences nothing.
func TestTopicFenced(t *testing.T) {
	perPartition := &fakeMoves{moves: map[topicPartition]PartitionMove{
		{"t", 1}: {Topic: "t", Partition: 1, Fenced: true},
		{"t", 2}: {Topic: "t", Partition: 2},
	}}
	for _, tc := range []struct {
		name  string
		moves Moves
		want  []bool // partitions 0-3
	}{
		{"no moves", nil, []bool{false, false, false, false}},
		{"per partition", perPartition, []bool{false, true, false, false}},
		{"per topic", fenceByTopic{fakeMoves: perPartition, fenced: []int32{0, 3}}, []bool{true, false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Broker{cfg: Config{Moves: tc.moves}}
			fenced := b.topicFenced("t")
			for p, want := range tc.want {
				if got := fenced(int32(p)); got != want {
					t.Errorf("partition %d fenced %v, want %v", p, got, want)
				}
			}
		})
	}
}
