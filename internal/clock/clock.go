// Package clock is the time source of the timeouts tests must drive
// without sleeping: leader leases and membership deadlines (package ha/controlplane)
// and group session and rebalance timeouts (package group). Production
// code uses System; tests use clocktest.Fake.
package clock

import "time"

// Clock tells the time and calls functions later.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it did.
	Stop() bool
}

// System is the wall clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (System) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
