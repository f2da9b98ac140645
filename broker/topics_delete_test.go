package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/poll"
)

// stuckDelete holds every DeleteTopic until released or its context ends,
// as a dispatcher far behind the log would.
type stuckDelete struct {
	Storage
	entered chan string
	release chan struct{}
}

func (s *stuckDelete) DeleteTopic(ctx context.Context, topic string) error {
	s.entered <- topic
	select {
	case <-s.release:
		return s.Storage.DeleteTopic(ctx, topic)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func deleteTopicsReq(timeout time.Duration, names ...string) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = int32(timeout / time.Millisecond)
	req.TopicNames = names // up to v5; the client picks the version
	for _, n := range names {
		req.Topics = append(req.Topics, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(n)})
	}
	return req
}

// TestDeleteTopicsWaitsOutsideTheTopicLock: while a DeleteTopics waits for
// the dispatcher to drop the queues, the topic is already gone from the
// metadata and other topic requests are answered; a wait past the
// request's timeout is REQUEST_TIMED_OUT, not a hang, and the deletion
// stands.
func TestDeleteTopicsWaitsOutsideTheTopicLock(t *testing.T) {
	s := &stuckDelete{entered: make(chan string, 4), release: make(chan struct{})}
	b, err := open(testConfig(t, t.TempDir()), testStore(), func(st Storage) Storage { s.Storage = st; return s })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "gone", 2)
	createTopic(t, cl, "late", 1)

	answered := make(chan *kmsg.DeleteTopicsResponse, 1)
	go func() {
		resp, err := deleteTopicsReq(time.Minute, "gone").RequestWith(testCtx(t), cl)
		if err != nil {
			t.Error(err)
		}
		answered <- resp
	}()
	if got := <-s.entered; got != "gone" {
		t.Fatalf("DeleteTopic of %q, want gone", got)
	}
	// The delete is stuck in the storage: topic requests from another
	// connection (one connection's requests are answered in order) still
	// go through.
	createTopic(t, newClient(t, b.Addr()), "meanwhile", 1)
	if _, ok := b.meta.Topic("gone"); ok {
		t.Fatal("topic still in the metadata while its queues are being dropped")
	}
	close(s.release)
	if resp := <-answered; resp == nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete answered %+v, want no error", resp)
	}

	// A storage that never finishes in time: the request says so.
	s.release = make(chan struct{})
	resp, err := deleteTopicsReq(50*time.Millisecond, "late").RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	<-s.entered
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.RequestTimedOut.Code || resp.Topics[0].ErrorMessage == nil {
		t.Fatalf("delete past its timeout answered %+v, want REQUEST_TIMED_OUT with a message", resp.Topics)
	}
	poll.True(t, "the timed-out delete to stand in the metadata", func() bool { _, ok := b.meta.Topic("late"); return !ok })
}
