package controlplane

import (
	"errors"
	"testing"

	"github.com/unilog/unilog/internal/poll"
)

// TestMoveSteps walks a move through its compare-and-set steps and checks
// each refusal on the way, and that another node sees the switch.
func TestMoveSteps(t *testing.T) {
	srv := startServer(t)
	n1 := openTestMetadata(t, srv.ClientURL(), "g1")
	n2 := openTestMetadata(t, srv.ClientURL(), "g1")
	if err := n1.CreateTopic(Topic{Name: "orders", ID: [16]byte{1}, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func() error
		want error
	}{
		{"unknown partition", func() error { return n1.StartMove("orders", 2, "g2", 1) }, ErrUnknownPartition},
		{"unknown topic", func() error { return n1.StartMove("nope", 0, "g2", 1) }, ErrUnknownTopic},
		{"no move to finish", func() error { return n1.FinishMove("orders", 0, 5, 2) }, ErrNoMove},
		{"to its own group is a no-op", func() error { return n1.StartMove("orders", 0, "g1", 1) }, nil},
		{"cancel with none", func() error { return n1.CancelMove("orders", 0) }, ErrNoMove},
		{"start", func() error { return n1.StartMove("orders", 0, "g2", 1) }, nil},
		{"start twice", func() error { return n2.StartMove("orders", 0, "g3", 1) }, ErrMoveInProgress},
		{"cancel before the fence", func() error { return n2.CancelMove("orders", 0) }, nil},
		{"start again", func() error { return n1.StartMove("orders", 0, "g2", 2) }, nil},
		{"finish before the fence", func() error { return n1.FinishMove("orders", 0, 5, 2) }, ErrMoveNotReady},
		{"fence", func() error { return n2.UpdateMove("orders", 0, func(mv *Move) error { mv.Fenced = true; return nil }) }, nil},
		{"cancel once fenced", func() error { return n1.CancelMove("orders", 0) }, ErrMoveInProgress},
		{"finish before the end", func() error { return n1.FinishMove("orders", 0, 5, 2) }, ErrMoveNotReady},
		{"end", func() error { return n1.UpdateMove("orders", 0, func(mv *Move) error { mv.End = 42; return nil }) }, nil},
		{"finish", func() error { return n2.FinishMove("orders", 0, 5, 2) }, nil},
		{"update once finished", func() error { return n1.UpdateMove("orders", 0, func(*Move) error { return nil }) }, ErrNoMove},
	}
	for _, s := range steps {
		if err := s.do(); !errors.Is(err, s.want) || (s.want == nil) != (err == nil) {
			t.Fatalf("%s: got %v, want %v", s.name, err, s.want)
		}
		switch s.name {
		case "start again", "cancel before the fence":
			if n1.FencedInTopic("orders")(0) {
				t.Fatalf("%s: partition 0 fenced", s.name)
			}
		case "fence":
			poll.True(t, "node 1 to see partition 0 fenced, and only it", func() bool {
				fenced := n1.FencedInTopic("orders")
				return fenced(0) && !fenced(1) && !n1.FencedInTopic("nope")(0)
			})
		case "finish":
			poll.True(t, "node 1 to see no partition fenced", func() bool { return !n1.FencedInTopic("orders")(0) })
		}
		if s.name == "start again" {
			if mv := n1.Moves(); len(mv) != 1 || mv[0].From != "g1" || mv[0].To != "g2" || mv[0].End != -1 || mv[0].StartedMs != 2 {
				t.Fatalf("moves after start: %+v", mv)
			}
		}
	}
	// The source reported epoch 5; g2's lease is at 2: clients see 6.
	poll.True(t, "node 1 to see the partition on g2 and no move", func() bool {
		top, ok := n1.Topic("orders")
		return ok && top.Groups[0] == "g2" && top.Groups[1] == "g1" && len(n1.Moves()) == 0 &&
			top.Epochs[0] == PartitionEpoch{Base: 4, First: 6, Since: 42}
	})
}
