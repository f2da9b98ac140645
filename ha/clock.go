package ha

import "time"

// Clock is the time source of leases and membership. Only elapsed time on
// one node's clock is ever compared (see the package doc), so a Clock needs
// a steady rate, not agreement with other nodes. Tests inject a fake one to
// drive expiry without sleeping.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call; false if it already ran or was stopped.
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
