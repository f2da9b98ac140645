package commitlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/unilog/unilog/internal/poll"
)

func TestGroupCommit(t *testing.T) {
	for _, mode := range []FlushMode{FlushSync, FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			opts := testOptions(t, "", 256<<10)
			opts.FlushMode = mode
			opts.FlushInterval = time.Hour // only WaitDurable and appends trigger flushes
			l := openLog(t, opts)
			defer l.Close()
			const writers, each = 64, 20
			var wg sync.WaitGroup
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each; i++ {
						m := testMessage(w*each+i, 100)
						p, err := l.Append(&m)
						if err != nil {
							t.Error(err)
							return
						}
						if err := l.WaitDurable(context.Background(), p.End()); err != nil {
							t.Error(err)
							return
						}
						if f := l.FlushedOffset(); f < p.End() {
							t.Errorf("WaitDurable returned with flushed %d < end %d", f, p.End())
							return
						}
					}
				}()
			}
			wg.Wait()
			s := l.Stats()
			t.Logf("%d appends, %d waited, %d flushes", writers*each, s.DurableWaits, s.Flushes)
			if s.Flushes == 0 || s.Flushes >= writers*each {
				t.Fatalf("%d flushes for %d durable appends: no group commit", s.Flushes, writers*each)
			}
		})
	}
}

func TestWaitDurableEdges(t *testing.T) {
	opts := testOptions(t, "", 64<<10)
	opts.FlushInterval = time.Hour
	l := openLog(t, opts)
	m := testMessage(1, 10)
	p, err := l.Append(&m)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.WaitDurable(context.Background(), p.End()+1); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("beyond write offset: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.WaitDurable(ctx, p.End()); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if l.FlushedOffset() != l.WriteOffset() {
		t.Fatalf("after Flush: flushed %d, written %d", l.FlushedOffset(), l.WriteOffset())
	}
	if err := l.WaitDurable(context.Background(), p.End()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(&m); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if l.FlushedOffset() != l.WriteOffset() {
		t.Fatalf("Close did not flush: flushed %d, written %d", l.FlushedOffset(), l.WriteOffset())
	}
	if err := l.WaitDurable(context.Background(), l.WriteOffset()); err != nil {
		t.Fatalf("durable data after Close: %v", err)
	}
	if err := l.Flush(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush after Close: %v", err)
	}
}

func TestAsyncFlushInterval(t *testing.T) {
	opts := testOptions(t, "", 64<<10)
	opts.FlushInterval = 5 * time.Millisecond
	l := openLog(t, opts)
	defer l.Close()
	m := testMessage(1, 10)
	p, err := l.Append(&m)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the interval flush", func() error {
		if f := l.FlushedOffset(); f < p.End() {
			return fmt.Errorf("flushed to %d, the record ends at %d", f, p.End())
		}
		return nil
	})
	if l.Stats().DurableWaits != 0 {
		t.Fatal("flushed by a waiter, not by the interval")
	}
}

func TestParseFlushMode(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want FlushMode
		ok   bool
	}{{"async", FlushAsync, true}, {"sync", FlushSync, true}, {"SYNC", 0, false}, {"", 0, false}} {
		got, err := ParseFlushMode(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseFlushMode(%q) = %v, %v", tt.in, got, err)
		}
		if tt.ok && got.String() != tt.in {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
}

// TestHoldFlushes: under FlushSync appends between HoldFlushes and the
// last ReleaseFlushes start no flush, the release starts one for all of
// them, and a WaitDurable meanwhile is not held up.
func TestHoldFlushes(t *testing.T) {
	opts := testOptions(t, "", 256<<10)
	opts.FlushMode = FlushSync
	opts.FlushInterval = time.Hour // only appends, releases and WaitDurable flush
	l := openLog(t, opts)
	defer l.Close()
	appendOne := func(i int) Position {
		m := testMessage(i, 100)
		p, err := l.Append(&m)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The flush counter moves just after the flushed offset.
	flushed := func(n int64) {
		t.Helper()
		poll.True(t, fmt.Sprintf("%d flushes", n), func() bool { return l.Stats().Flushes >= n })
		if f, w := l.FlushedOffset(), l.WriteOffset(); f != w {
			t.Fatalf("flushed %d of %d", f, w)
		}
	}

	l.HoldFlushes()
	l.HoldFlushes() // nested
	for i := range 3 {
		appendOne(i)
		// Time for a flush started by the append to have run.
		time.Sleep(20 * time.Millisecond)
	}
	if s := l.Stats(); s.Flushes != 0 || l.FlushedOffset() == l.WriteOffset() {
		t.Fatalf("held: %d flushes, flushed %d of %d", s.Flushes, l.FlushedOffset(), l.WriteOffset())
	}
	l.ReleaseFlushes()
	time.Sleep(20 * time.Millisecond)
	if s := l.Stats(); s.Flushes != 0 {
		t.Fatalf("one of two holds released: %d flushes", s.Flushes)
	}
	l.ReleaseFlushes()
	flushed(1)
	time.Sleep(20 * time.Millisecond)
	if s := l.Stats(); s.Flushes != 1 {
		t.Fatalf("released: %d flushes, want one for the three appends", s.Flushes)
	}

	l.HoldFlushes()
	p := appendOne(3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.WaitDurable(ctx, p.End()); err != nil {
		t.Fatalf("WaitDurable under a hold: %v", err)
	}
	flushed(2)
	l.ReleaseFlushes()
	time.Sleep(20 * time.Millisecond)
	if s := l.Stats(); s.Flushes != 2 {
		t.Fatalf("after a waited append: %d flushes, want 2", s.Flushes)
	}
}
