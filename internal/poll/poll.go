// Package poll waits in tests for conditions that hold "eventually": a
// background goroutine (flusher, retention, a watch) reaching a state it is
// not synchronised with. The limit only bounds a broken run; nothing is
// timed by it, so a slow machine makes a test slower, never wrong. Where a
// channel or a hook can say when something happened, tests use that.
package poll

import (
	"errors"
	"testing"
	"time"
)

// Limit is how long Until waits before it fails the test.
const Limit = 30 * time.Second

// Until calls cond every millisecond until it returns nil, and fails the
// test with what and cond's last error if that takes longer than Limit.
func Until(t testing.TB, what string, cond func() error) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(Limit)
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("after %v waiting for %s: %v", Limit, what, err)
		}
	}
}

// errNotYet is what True's condition reports while it does not hold.
var errNotYet = errors.New("not yet")

// True is Until for a condition that has nothing to say while it fails.
func True(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Until(t, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}
