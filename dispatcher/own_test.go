package dispatcher

import (
	"context"
	"testing"
	"time"

	"github.com/unilog/unilog/commitlog"
)

// TestWaitDispatchedIndexesOwnAppend: a producer waiting for its record is
// not held up by the dispatching goroutine when no pass runs: with the
// goroutine stuck after a pass (in AfterPass, which the test holds), the
// record appended next is indexed on the waiter's goroutine and the wait
// returns. Before, every wait waited for the goroutine.
func TestWaitDispatchedIndexesOwnAppend(t *testing.T) {
	l, err := commitlog.Open(commitlog.Options{Dir: t.TempDir(), FileSize: 1 << 20, Logger: quietLogger(), RetentionAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	if _, err := l.Recover(0, nil); err != nil {
		t.Fatal(err)
	}
	qs := openQueues(t, t.TempDir())
	var (
		entered = make(chan struct{})
		hold    = make(chan struct{})
		armed   = true // read and written by the goroutine's first AfterPass only
	)
	d := New(Options{Log: l, Queues: qs, Logger: quietLogger(), AfterPass: func() {
		if armed {
			armed = false
			close(entered)
			<-hold
		}
	}})
	d.Start(0)
	t.Cleanup(func() {
		close(hold)
		if err := d.Stop(); err != nil {
			t.Error(err)
		}
	})
	<-entered // the goroutine's first pass (nothing to dispatch) is done and it waits in AfterPass

	p, err := l.Append(&commitlog.Message{Topic: "t", Count: 1, Body: []byte("v")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.WaitDispatched(ctx, p.PhysOffset+int64(p.Size)); err != nil {
		t.Fatalf("wait for a record appended while the dispatching goroutine is busy: %v", err)
	}
	q, ok := qs.Lookup("t", 0)
	if !ok || q.MaxOffset() != 1 {
		t.Fatalf("after the wait the queue holds %v (found %v), want 1 entry", q, ok)
	}
}
