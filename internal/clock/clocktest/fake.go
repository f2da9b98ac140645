// Package clocktest is a clock.Clock that moves only when a test says.
package clocktest

import (
	"sort"
	"sync"
	"time"

	"github.com/unilog/unilog/internal/clock"
)

// Fake moves only when Advance is called. The AfterFunc calls that come
// due run inside Advance, in deadline order and outside the clock's lock
// (they may call Now), so a test sees their effects when Advance returns.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
}

type timer struct {
	c       *Fake
	at      time.Time
	f       func()
	stopped bool
}

// New returns a Fake set to a fixed instant.
func New() *Fake { return &Fake{now: time.Unix(1_700_000_000, 0)} }

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc arms f to run when Advance passes d from now.
func (c *Fake) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves time forward by d and runs the calls that came due.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due, rest []*timer
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.stopped = true
			due = append(due, t)
		default:
			rest = append(rest, t)
		}
	}
	c.timers = rest
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.f()
	}
}
