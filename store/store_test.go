package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/internal/poll"
)

func TestCleanReopenKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, testOptions(dir))
	recs := appendN(t, d, 1, 0, 400)
	waitDispatched(t, d)
	end := d.log.WriteOffset()
	if len(d.log.Files()) < 3 {
		t.Fatalf("want several commit-log files, got %d", len(d.log.Files()))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, abortName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("abort file after clean close: %v", err)
	}
	cp, err := ReadCheckpoint(filepath.Join(dir, checkpointName))
	if err != nil {
		t.Fatal(err)
	}
	if cp.Dispatched != end || cp.CommitLogFlushed != end {
		t.Fatalf("checkpoint %+v, want both offsets %d", cp, end)
	}

	d = mustOpen(t, testOptions(dir))
	defer d.Close()
	if got := d.log.WriteOffset(); got != end {
		t.Fatalf("write offset after reopen %d, want %d", got, end)
	}
	for _, a := range recs {
		checkReadable(t, d, a)
	}
	// Appends continue each partition's offsets where they stopped.
	next := map[[2]any]int64{}
	for _, a := range recs {
		next[[2]any{a.msg.Topic, a.msg.Partition}] = a.pos.QueueOffset + int64(a.msg.Count)
	}
	more := appendN(t, d, 2, 0, 50)
	for _, a := range more {
		k := [2]any{a.msg.Topic, a.msg.Partition}
		if a.pos.QueueOffset != next[k] {
			t.Fatalf("%v: new record at offset %d, want %d", k, a.pos.QueueOffset, next[k])
		}
		next[k] += int64(a.msg.Count)
	}
	waitDispatched(t, d)
	for _, a := range more {
		checkReadable(t, d, a)
	}
}

func TestSecondOpenIsLocked(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, testOptions(dir))
	defer d.Close()
	if _, err := Open(testOptions(dir)); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
}

func TestWaitDispatchedHonoursContext(t *testing.T) {
	d := mustOpen(t, testOptions(t.TempDir()))
	defer d.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.WaitDispatched(ctx, 1<<40); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitDispatched past the end: %v", err)
	}
}

// holdDispatcher parks the dispatching goroutine until the returned
// function is called.
func holdDispatcher(t testing.TB, d *Store) func() {
	t.Helper()
	parked, release := make(chan struct{}), make(chan struct{})
	go d.d.Do(context.Background(), "test", func() error {
		close(parked)
		<-release
		return nil
	})
	<-parked
	return func() { close(release) }
}

func TestLag(t *testing.T) {
	d := mustOpen(t, testOptions(t.TempDir()))
	defer d.Close()
	if lag := d.Lag(); lag != (Lag{}) {
		t.Fatalf("lag of an empty log: %+v", lag)
	}
	release := holdDispatcher(t, d)
	start := d.log.WriteOffset()
	// The oldest undispatched record was stored an hour ago, as a follower
	// stores its leader's records with their store time (AppendRaw), so
	// its age needs no waiting; the records after it are fresh.
	old := commitlog.Message{Topic: "lag", Body: []byte("old")}
	if _, err := d.log.AppendRaw(start, commitlog.Encode(nil, &old, start, 0, time.Now().Add(-time.Hour).UnixMilli())); err != nil {
		t.Fatal(err)
	}
	appendN(t, d, 3, 0, 20)
	lag := d.Lag()
	if want := d.log.WriteOffset() - start; lag.Bytes != want {
		t.Fatalf("lag bytes %d, want %d", lag.Bytes, want)
	}
	if lag.Time < time.Hour || lag.Time > 2*time.Hour {
		t.Fatalf("lag time %v, want the age of the record stored an hour ago", lag.Time)
	}
	release()
	waitDispatched(t, d)
	if lag := d.Lag(); lag != (Lag{}) {
		t.Fatalf("lag after catching up: %+v", lag)
	}
}

// TestLiveFilter: records of an incarnation replaced by another are not
// indexed; records of a topic the metadata does not know are (a follower
// can see them before it learns of the topic), each into its own queue,
// which the live view does not serve until the topic is known.
func TestLiveFilter(t *testing.T) {
	var mu sync.Mutex
	live := map[string]commitlog.TopicID{"keep": {7}}
	opts := testOptions(t.TempDir())
	opts.Live = func(topic string) (commitlog.TopicID, bool) {
		mu.Lock()
		defer mu.Unlock()
		id, ok := live[topic]
		return id, ok
	}
	d := mustOpen(t, opts)
	defer d.Close()
	dead := commitlog.Message{Topic: "keep", TopicID: commitlog.TopicID{6}, Body: []byte("old")}
	early := commitlog.Message{Topic: "new", TopicID: commitlog.TopicID{9}, Body: []byte("first")}
	kept := commitlog.Message{Topic: "keep", TopicID: commitlog.TopicID{7}, Body: []byte("b")}
	var pos []commitlog.Position
	for _, m := range []commitlog.Message{dead, early, kept} {
		p, err := d.log.Append(&m)
		if err != nil {
			t.Fatal(err)
		}
		pos = append(pos, p)
	}
	waitDispatched(t, d)
	if _, ok := d.queues.Lookup(QueueName("keep", commitlog.TopicID{6}), 0); ok {
		t.Fatal("a queue was made for a replaced incarnation")
	}
	if _, ok := d.queue("new", 0); ok {
		t.Fatal("a topic the metadata does not know is served")
	}
	checkReadable(t, d, appended{msg: kept, pos: pos[2]})

	// The topic's creation reaches this node after its first record: the
	// record is there from offset 0, and the next one follows it.
	mu.Lock()
	live["new"] = commitlog.TopicID{9}
	mu.Unlock()
	second := commitlog.Message{Topic: "new", TopicID: commitlog.TopicID{9}, Body: []byte("second")}
	p, err := d.log.Append(&second)
	if err != nil {
		t.Fatal(err)
	}
	waitDispatched(t, d)
	q, ok := d.queue("new", 0)
	if !ok || q.MinOffset() != 0 || q.MaxOffset() != 2 {
		t.Fatalf("queue of the late-known topic: ok %v, offsets [%d, %d), want [0, 2)", ok, q.MinOffset(), q.MaxOffset())
	}
	checkReadable(t, d, appended{msg: early, pos: pos[1]})
	checkReadable(t, d, appended{msg: second, pos: p})
}

func TestDeleteTopic(t *testing.T) {
	d := mustOpen(t, testOptions(t.TempDir()))
	defer d.Close()
	appendN(t, d, 4, 0, 30)
	w := d.NewWaiter()
	w.Watch("orders", 0, 1<<40)
	if err := d.DeleteTopic(context.Background(), "orders"); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.queues.Lookup("orders", 0); ok {
		t.Fatal("queue survived DeleteTopic")
	}
	select {
	case <-w.C():
	default:
		t.Fatal("DeleteTopic left a watcher of the topic waiting")
	}
	if n := d.Watchers(); n != 0 {
		t.Fatalf("%d watchers registered after DeleteTopic", n)
	}
	p, err := d.log.Append(&commitlog.Message{Topic: "orders", Body: []byte("again")})
	if err != nil {
		t.Fatal(err)
	}
	if p.QueueOffset != 0 {
		t.Fatalf("re-created topic starts at %d", p.QueueOffset)
	}
	waitDispatched(t, d)
	checkReadable(t, d, appended{msg: commitlog.Message{Topic: "orders", Body: []byte("again")}, pos: p})
}

// TestDeleteTopicHonoursContext: while the dispatcher is busy, a
// DeleteTopic whose context ends returns the context's error instead of
// waiting, leaves the queues to a later DeleteTopic, which removes them.
func TestDeleteTopicHonoursContext(t *testing.T) {
	d := mustOpen(t, testOptions(t.TempDir()))
	defer d.Close()
	appendN(t, d, 4, 0, 30)
	waitDispatched(t, d)
	release := holdDispatcher(t, d)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.DeleteTopic(ctx, "orders"); !errors.Is(err, context.Canceled) {
		release()
		t.Fatalf("DeleteTopic with the dispatcher busy and its context cancelled: %v", err)
	}
	release()
	if _, ok := d.queues.Lookup("orders", 0); !ok {
		t.Fatal("a DeleteTopic that never started removed the queues")
	}
	if err := d.DeleteTopic(context.Background(), "orders"); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.queues.Lookup("orders", 0); ok {
		t.Fatal("queue survived DeleteTopic")
	}
}

func TestRetentionDeletesQueueFiles(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.CommitLog.RetentionBytes = 4 * opts.CommitLog.FileSize
	opts.CommitLog.RetentionCheckInterval = 5 * time.Millisecond
	d := mustOpen(t, opts)
	// One partition, small records: many consume-queue files per log file.
	// Retention does not wait for the dispatcher, so the test does.
	for range 80 {
		for range 100 {
			if _, err := d.log.Append(&commitlog.Message{Topic: "r", Body: make([]byte, 40)}); err != nil {
				t.Fatal(err)
			}
		}
		waitDispatched(t, d)
	}
	q, ok := d.queues.Lookup("r", 0)
	if !ok {
		t.Fatal("queue missing")
	}
	poll.Until(t, "retention to reach the queue", func() error {
		if q.MinOffset() == 0 {
			return fmt.Errorf("queue min 0, log min %d", d.log.MinOffset())
		}
		return nil
	})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopening applies the log's minimum once more, in case retention ran
	// again between the last deletion and Close.
	d = mustOpen(t, opts)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	lr, err := commitlog.OpenReader(filepath.Join(opts.Dir, "commitlog"))
	if err != nil {
		t.Fatal(err)
	}
	logMin := lr.Files()[0].Base
	lr.Close()
	cq, err := consumequeue.ReadQueue(filepath.Join(opts.Dir, "consumequeue"), consumequeue.ID{Topic: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if logMin == 0 || cq.Min == 0 {
		t.Fatalf("log min %d, queue min %d: nothing was deleted", logMin, cq.Min)
	}
	epf := int64(opts.ConsumeQueue.EntriesPerFile)
	newest := map[int64]int64{} // file base -> largest physical offset in it
	for _, e := range cq.Entries {
		base := e.Offset - e.Offset%epf
		newest[base] = max(newest[base], e.PhysOffset)
	}
	for base, phys := range newest {
		if phys < logMin {
			t.Errorf("consume-queue file %d only indexes deleted log files (newest entry %d < log min %d)", base, phys, logMin)
		}
	}
	if err := Verify(opts.Dir); err != nil {
		t.Fatal(err)
	}
}

// TestPrepareThenOpen: a prepared directory holds the lock and calls no
// Live (what answers it is still starting); Close releases it; Open
// recovers with the Live it is given and serves what was stored.
func TestPrepareThenOpen(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, testOptions(dir))
	recs := appendN(t, d, 1, 0, 200)
	waitDispatched(t, d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	opts := testOptions(dir)
	opts.Live = func(string) (commitlog.TopicID, bool) {
		t.Error("Live called by Prepare")
		return commitlog.TopicID{}, true
	}
	p, err := Prepare(opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(testOptions(dir)); !errors.Is(err, ErrLocked) {
		t.Fatalf("Prepare beside a prepared directory: %v, want ErrLocked", err)
	}
	p.Close()

	if p, err = Prepare(opts); err != nil {
		t.Fatalf("Prepare after Close: %v", err)
	}
	var asked atomic.Int64
	d, err = p.Open(func(string) (commitlog.TopicID, bool) {
		asked.Add(1)
		return commitlog.TopicID{}, true
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if asked.Load() == 0 {
		t.Error("Open recovered without asking its Live")
	}
	for _, a := range recs {
		checkReadable(t, d, a)
	}
}
