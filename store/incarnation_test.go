package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/unilog/unilog/commitlog"
)

// liveTopics plays the broker's metadata: the live TopicID of each topic.
type liveTopics struct {
	mu  sync.Mutex
	ids map[string]commitlog.TopicID
}

func (l *liveTopics) set(topic string, id commitlog.TopicID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids[topic] = id
}

func (l *liveTopics) drop(topic string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.ids, topic)
}

func (l *liveTopics) live(topic string) (commitlog.TopicID, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id, ok := l.ids[topic]
	return id, ok
}

func incarnationOptions(dir string, live *liveTopics) Options {
	opts := testOptions(dir)
	opts.Live = live.live
	return opts
}

// partitionBodies reads partition 0 of the live incarnation of topic
// through its consume queue.
func partitionBodies(t *testing.T, d *Store, topic string) []string {
	t.Helper()
	q, ok := d.queue(topic, 0)
	if !ok {
		return nil
	}
	var out []string
	for off := q.MinOffset(); off < q.MaxOffset(); off++ {
		e, err := q.Get(off)
		if err != nil {
			t.Fatalf("%s/0 offset %d: %v", topic, off, err)
		}
		v, err := d.log.Read(e.PhysOffset)
		if err != nil {
			t.Fatalf("%s/0 offset %d: %v", topic, off, err)
		}
		r := v.Record()
		if r.Topic != topic || r.QueueOffset != off {
			t.Fatalf("%s/0 offset %d points at %s offset %d", topic, off, r.Topic, r.QueueOffset)
		}
		out = append(out, string(r.Body))
		v.Release()
	}
	return out
}

func appendTo(t *testing.T, d *Store, topic string, id commitlog.TopicID, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if _, err := d.log.Append(&commitlog.Message{Topic: topic, TopicID: id, Body: []byte(b)}); err != nil {
			t.Fatal(err)
		}
	}
	waitDispatched(t, d)
}

// TestRecreatedTopicQueues deletes a topic and creates it again: the new
// incarnation's queue starts at 0 and holds only its own records, after a
// clean restart and after a rebuild of the queues from the log.
func TestRecreatedTopicQueues(t *testing.T) {
	dir := t.TempDir()
	old, cur := commitlog.TopicID{1}, commitlog.TopicID{2}
	live := &liveTopics{ids: map[string]commitlog.TopicID{"t": old, "other": {3}}}
	d := mustOpen(t, incarnationOptions(dir, live))
	appendTo(t, d, "t", old, "old-1", "old-2", "old-3")
	appendTo(t, d, "other", commitlog.TopicID{3}, "kept")
	w := d.NewWaiter()
	defer w.Release()
	w.Watch("t", 0, 10)

	live.drop("t")
	if err := d.DeleteTopic(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.C():
	default:
		t.Fatal("DeleteTopic left a watcher of the deleted incarnation waiting")
	}
	live.set("t", cur)
	// A record of the dead incarnation that lands after the delete (an
	// append in flight) must not reach the new queue.
	appendTo(t, d, "t", old, "old-late")
	appendTo(t, d, "t", cur, "new-1")
	check := func(when string) {
		t.Helper()
		if got := partitionBodies(t, d, "t"); strings.Join(got, " ") != "new-1" {
			t.Fatalf("%s: t/0 holds %q, want [new-1]", when, got)
		}
		if got := partitionBodies(t, d, "other"); strings.Join(got, " ") != "kept" {
			t.Fatalf("%s: other/0 holds %q", when, got)
		}
		if _, err := os.Stat(filepath.Join(dir, "consumequeue", QueueName("t", old))); err == nil {
			t.Fatalf("%s: the dead incarnation's queue directory is still there", when)
		}
	}
	check("before restart")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Verify(dir); err != nil {
		t.Fatal(err)
	}
	var dumped []string
	if err := Dump(dir, "t", 0, 0, 0, func(r *commitlog.Record) error {
		dumped = append(dumped, string(r.Body))
		return nil
	}); err != nil || strings.Join(dumped, " ") != "new-1" {
		t.Fatalf("Dump of t/0 by topic name: %q %v", dumped, err)
	}

	d = mustOpen(t, incarnationOptions(dir, live))
	check("after a clean restart")
	if got := d.log.NextQueueOffset("t", cur, 0); got != 1 {
		t.Fatalf("next offset of the live incarnation after restart: %d", got)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.RemoveAll(filepath.Join(dir, "consumequeue")); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, incarnationOptions(dir, live))
	check("after a rebuild")
	appendTo(t, d, "t", cur, "new-2")
	if got := partitionBodies(t, d, "t"); strings.Join(got, " ") != "new-1 new-2" {
		t.Fatalf("after one more record t/0 holds %q", got)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenDeletesDeadIncarnationQueues: the metadata changed (the topic was
// deleted and created again) but the old queues were never removed, as
// after a crash between the two. Open removes them and the new incarnation
// starts at offset 0.
func TestOpenDeletesDeadIncarnationQueues(t *testing.T) {
	dir := t.TempDir()
	old, cur := commitlog.TopicID{1}, commitlog.TopicID{2}
	live := &liveTopics{ids: map[string]commitlog.TopicID{"t": old}}
	d := mustOpen(t, incarnationOptions(dir, live))
	appendTo(t, d, "t", old, "old-1", "old-2")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	live.set("t", cur)
	d = mustOpen(t, incarnationOptions(dir, live))
	defer d.Close()
	if _, err := os.Stat(filepath.Join(dir, "consumequeue", QueueName("t", old))); err == nil {
		t.Fatal("Open left the dead incarnation's queue directory")
	}
	if got := partitionBodies(t, d, "t"); len(got) != 0 {
		t.Fatalf("new incarnation holds %q before any append", got)
	}
	appendTo(t, d, "t", cur, "new-1")
	if got := partitionBodies(t, d, "t"); strings.Join(got, " ") != "new-1" {
		t.Fatalf("t/0 holds %q, want [new-1]", got)
	}
}
