package dispatcher

import (
	"testing"

	"github.com/unilog/unilog/commitlog"
)

// TestLiveAskedOncePerRun: a run of records of the live incarnation asks
// Options.Live once, a record of another incarnation asks again and is not
// indexed, the answer serves publishEvery records at most, and Forget
// drops it.
func TestLiveAskedOncePerRun(t *testing.T) {
	qs := openQueues(t, t.TempDir())
	a, b := commitlog.TopicID{1}, commitlog.TopicID{2}
	live, asked := a, 0
	d := New(Options{Queues: qs, Logger: quietLogger(), Live: func(string) (commitlog.TopicID, bool) {
		asked++
		return live, true
	}})
	next := map[commitlog.TopicID]int64{}
	index := func(id commitlog.TopicID) {
		t.Helper()
		r := commitlog.Record{TotalSize: 100, PhysOffset: 100 * int64(len(next)+int(next[a]+next[b])), Count: 1,
			QueueOffset: next[id], Topic: "t", TopicID: id}
		if err := d.Index(&r); err != nil {
			t.Fatal(err)
		}
		next[id]++
	}
	maxOf := func(id commitlog.TopicID) int64 {
		q, err := qs.Queue(QueueName("t", id), 0)
		if err != nil {
			t.Fatal(err)
		}
		return q.MaxOffset()
	}

	for range publishEvery {
		index(a)
	}
	if asked != 1 || maxOf(a) != publishEvery {
		t.Fatalf("%d records of the live incarnation: Live asked %d times, %d indexed; want 1, all", publishEvery, asked, maxOf(a))
	}
	index(a)
	if asked != 2 {
		t.Errorf("record %d after one answer: Live asked %d times, want 2", publishEvery+1, asked)
	}
	index(b)
	if asked != 3 || maxOf(b) != 0 {
		t.Errorf("record of a replaced incarnation: Live asked %d times, want 3; %d indexed, want 0", asked, maxOf(b))
	}
	d.Forget("t", b)
	index(a)
	if asked != 4 {
		t.Errorf("after Forget: Live asked %d times, want 4", asked)
	}
}
