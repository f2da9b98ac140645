package group

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/internal/clock"
)

// memLog is an in-memory Log: a byte counter stands in for physical
// offsets, each record of a batch takes one partition offset, every record
// is durable at once, and OldestFileEnd is set by the test.
type memLog struct {
	mu        sync.Mutex
	parts     map[int32][]memRecord
	next      map[int32]int64
	pos       int64
	oldestEnd int64
	failNext  error
}

type memRecord struct {
	recs []Record
	base int64
	end  int64
}

func newMemLog() *memLog {
	return &memLog{parts: make(map[int32][]memRecord), next: make(map[int32]int64)}
}

func (l *memLog) Append(partition int32, recs []Record) (int64, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.failNext; err != nil {
		l.failNext = nil
		return 0, 0, err
	}
	for _, r := range recs {
		l.pos += int64(len(r.Key) + len(r.Value))
	}
	l.pos += 64
	base := l.next[partition]
	l.next[partition] += int64(len(recs))
	l.parts[partition] = append(l.parts[partition], memRecord{append([]Record(nil), recs...), base, l.pos})
	return l.pos, l.next[partition], nil
}

func (l *memLog) Start(partition int32) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if recs := l.parts[partition]; len(recs) > 0 {
		return recs[0].base
	}
	return l.next[partition]
}

func (l *memLog) WaitDurable(ctx context.Context, end int64) error { return ctx.Err() }

func (l *memLog) Replay(partition int32, from int64, fn func(Record, int64) error) (int64, error) {
	l.mu.Lock()
	recs := append([]memRecord(nil), l.parts[partition]...)
	next := l.next[partition]
	l.mu.Unlock()
	for _, mr := range recs {
		for i, r := range mr.recs {
			if mr.base+int64(i) < from {
				continue
			}
			if err := fn(r, mr.end); err != nil {
				return 0, err
			}
		}
	}
	return next, nil
}

func (l *memLog) OldestFileEnd() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.oldestEnd
}

// dropBefore deletes every record ending at or before end, as retention
// deleting the files that hold them.
func (l *memLog) dropBefore(end int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, recs := range l.parts {
		keep := recs[:0]
		for _, r := range recs {
			if r.end > end {
				keep = append(keep, r)
			}
		}
		l.parts[p] = keep
	}
}

func testLogger(t testing.TB) logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(testWriter{t})
	l.SetLevel(logrus.WarnLevel)
	return l
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// openTest opens a coordinator over log with a fake clock and member ids
// "<prefix>-<n>".
func openTest(t testing.TB, log Log, clk clock.Clock) *Coordinator {
	t.Helper()
	c, err := Open(testOptions(t, log, clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func testOptions(t testing.TB, log Log, clk clock.Clock) Options {
	var mu sync.Mutex
	n := 0
	return Options{
		Log:               log,
		Partitions:        4,
		SyncCommits:       true,
		MinSessionTimeout: time.Second,
		Clock:             clk,
		Logger:            testLogger(t),
		NewMemberID: func(client string) string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("%s-%d", client, n)
		},
	}
}
