package dispatcher

import (
	"strings"
	"testing"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
)

// dispatchLog returns a dispatcher over a log holding one-record messages
// of topics, round robin over parts partitions, and their positions. It is
// not started: the test drives DispatchTo itself.
func dispatchLog(t *testing.T, topics []string, parts int32) (*Dispatcher, *consumequeue.Store, []commitlog.Position) {
	t.Helper()
	l, err := commitlog.Open(commitlog.Options{Dir: t.TempDir(), FileSize: 1 << 20, Logger: quietLogger(), RetentionAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	if _, err := l.Recover(0, nil); err != nil {
		t.Fatal(err)
	}
	var pos []commitlog.Position
	for i, topic := range topics {
		p, err := l.Append(&commitlog.Message{Topic: topic, Partition: int32(i) % parts, Count: 1, Body: []byte("v")})
		if err != nil {
			t.Fatal(err)
		}
		pos = append(pos, p)
	}
	qs := openQueues(t, t.TempDir())
	d := New(Options{Log: l, Queues: qs, Logger: quietLogger()})
	d.cursor = l.Cursor(0)
	t.Cleanup(d.cursor.Close)
	return d, qs, pos
}

// TestDispatchToLimit: a pass indexes the records that start before its
// limit, wherever that falls in a window of records read ahead, and the
// next pass goes on from there.
func TestDispatchToLimit(t *testing.T) {
	const n, parts = 3*readAhead + 5, 4
	topics := make([]string, n)
	for i := range topics {
		topics[i] = "t"
	}
	d, qs, pos := dispatchLog(t, topics, parts)
	indexed := func() (total int64) {
		for p := range int32(parts) {
			if q, ok := qs.Lookup("t", p); ok {
				total += q.MaxOffset()
			}
		}
		return total
	}
	for _, upTo := range []int{1, readAhead - 1, readAhead, readAhead + 1, 2*readAhead + 3, n} {
		limit := pos[upTo-1].PhysOffset + 1 // inside record upTo-1: it starts before the limit
		if err := d.DispatchTo(limit); err != nil {
			t.Fatal(err)
		}
		want := pos[upTo-1].PhysOffset + int64(pos[upTo-1].Size)
		if d.Dispatched() != want || indexed() != int64(upTo) {
			t.Fatalf("limit in record %d: dispatched %d with %d entries, want %d with %d", upTo-1, d.Dispatched(), indexed(), want, upTo)
		}
	}
}

// TestDispatchSkipsUnnamableQueue: a record whose queue no retry can
// name (a topic too long for a directory, stored by an older build) is
// logged once and left out, and the records after it are indexed. Before,
// the pass stopped at it on every retry: indexing stopped for every
// partition and every acks=-1 produce timed out.
func TestDispatchSkipsUnnamableQueue(t *testing.T) {
	topics := make([]string, readAhead+3)
	for i := range topics {
		topics[i] = "t"
	}
	const bad = 5
	topics[bad] = strings.Repeat("x", 256)
	topics[bad+readAhead/2] = topics[bad]
	d, qs, pos := dispatchLog(t, topics, 1)
	logger, hook := logtest.NewNullLogger()
	d.logger = logger
	end := pos[len(pos)-1].PhysOffset + int64(pos[len(pos)-1].Size)
	if err := d.DispatchTo(end); err != nil {
		t.Fatalf("a record whose queue cannot be named stopped the pass: %v", err)
	}
	if d.Dispatched() != end {
		t.Fatalf("dispatched %d, want %d", d.Dispatched(), end)
	}
	if q, ok := qs.Lookup("t", 0); !ok || q.MaxOffset() != int64(len(topics)-2) {
		t.Fatalf("the other records are not all indexed")
	}
	if n := len(hook.AllEntries()); n != 1 {
		t.Fatalf("%d log lines for two records of one unnamable queue, want 1", n)
	}
}

// TestDispatchStopsAtFailingRecord: a pass whose queues cannot be opened
// (the store closed under it) returns the error and does not move the
// dispatched offset, so that the retry starts at the same record.
func TestDispatchStopsAtFailingRecord(t *testing.T) {
	d, qs, pos := dispatchLog(t, []string{"t", "t"}, 1)
	if err := qs.Close(); err != nil {
		t.Fatal(err)
	}
	for try := range 2 {
		if err := d.DispatchTo(pos[1].PhysOffset + 1); err == nil {
			t.Fatalf("try %d: no error with the queue store closed", try)
		}
		if d.Dispatched() != 0 {
			t.Fatalf("try %d: dispatched %d, want 0", try, d.Dispatched())
		}
	}
}
