package replication

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/unilog/unilog/internal/poll"
)

// publisher is a PublishInSync the test answers call by call.
type publisher struct {
	calls   chan []string
	answers chan error
}

func newPublisher() *publisher {
	return &publisher{calls: make(chan []string, 1), answers: make(chan error)}
}

func (p *publisher) publish(ctx context.Context, nodes []string) error {
	p.calls <- nodes
	select {
	case err := <-p.answers:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// expect takes the next call, fails unless it publishes want, and leaves
// it blocked until answer is called.
func (p *publisher) expect(t *testing.T, want ...string) {
	t.Helper()
	select {
	case got := <-p.calls:
		if !slices.Equal(got, append([]string{}, want...)) {
			t.Fatalf("published %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no publish of %q", want)
	}
}

func (p *publisher) answer(err error) { p.answers <- err }

// TestShrinkHoldsHighWatermarkUntilPublished is the failover gap of issue
// 8: a follower that leaves the in-sync set may still be elected until
// the set without it is stored, so the high watermark must not pass what
// it has before then, however far the leader writes.
func TestShrinkHoldsHighWatermarkUntilPublished(t *testing.T) {
	pub := newPublisher()
	leader, follower := newNode(t), newNode(t)
	ld, addr := leader.lead(t, 1, LeaderConfig{MinInSync: 2, PublishInSync: pub.publish})
	_, stop, _ := follower.follow(t, addr, 1, false)
	leader.append(t, 40, 800, 1)

	pub.expect(t, follower.dir) // a grow: published, but nothing waits for it
	pub.answer(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	had := leader.log.WriteOffset()
	if err := ld.WaitReplicated(ctx, had); err != nil {
		t.Fatalf("WaitReplicated with the follower in sync: %v", err)
	}

	stop()
	pub.expect(t) // the shrink, left blocked
	changed := ld.Changed()
	leader.append(t, 40, 800, 2)
	if err := ld.WaitReplicated(ctx, leader.log.WriteOffset()); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("WaitReplicated while the shrink is unpublished: %v, want ErrNotEnoughReplicas at once", err)
	}
	if hw := ld.HighWatermark(); hw != had {
		t.Fatalf("high watermark %d before the shrink is published, want the dropped follower's end %d", hw, had)
	}

	pub.answer(errors.New("control plane unreachable"))
	pub.expect(t) // the retry
	leader.append(t, 10, 800, 3)
	if hw := ld.HighWatermark(); hw != had {
		t.Fatalf("high watermark %d after a failed publish, want it held at %d", hw, had)
	}
	select {
	case <-changed:
		t.Fatal("waiters woken while the shrink is unpublished")
	default:
	}

	pub.answer(nil)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("waiters not woken once the shrink was published")
	}
	if hw, end := ld.HighWatermark(), leader.log.WriteOffset(); hw != end {
		t.Fatalf("high watermark %d once the shrink is published, want the leader's end %d", hw, end)
	}
}

// TestLagShrinkHoldsHighWatermarkUntilPublished: a follower still
// connected but silent past MaxLag is dropped by the lag checker, and is
// held the same way as one that disconnected.
func TestLagShrinkHoldsHighWatermarkUntilPublished(t *testing.T) {
	pub := newPublisher()
	leader := newNode(t)
	ld, addr := leader.lead(t, 1, LeaderConfig{MaxLag: 2 * time.Second, PublishInSync: pub.publish})
	leader.append(t, 20, 800, 1)
	had := leader.log.WriteOffset()

	// A follower that says it has the leader's log, then never acks again.
	c, _ := handshake(t, addr, nil, 1, hello{end: had, lastEpoch: 1, node: "silent"})
	ack := appendFrame(nil, frameAck, 1, int64s(had, had))
	for range 2 { // the answer to Start, then the ack that puts it in sync
		if _, err := c.Write(ack); err != nil {
			t.Fatal(err)
		}
	}
	pub.expect(t, "silent")
	pub.answer(nil)

	leader.append(t, 20, 800, 2)
	pub.expect(t) // dropped for lag, left blocked
	if hw := ld.HighWatermark(); hw != had {
		t.Fatalf("high watermark %d before the shrink is published, want the dropped follower's end %d", hw, had)
	}
	pub.answer(nil)
	poll.True(t, "the high watermark at the leader's end", func() bool { return ld.HighWatermark() == leader.log.WriteOffset() })
}
