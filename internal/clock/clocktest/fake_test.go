package clocktest

import (
	"testing"
	"time"
)

func TestFakeRunsDueCallsInDeadlineOrder(t *testing.T) {
	c := New()
	start := c.Now()
	var ran []string
	c.AfterFunc(3*time.Second, func() { ran = append(ran, "3s") })
	c.AfterFunc(time.Second, func() { ran = append(ran, "1s") })
	stopped := c.AfterFunc(2*time.Second, func() { ran = append(ran, "2s") })
	late := c.AfterFunc(time.Minute, func() { ran = append(ran, "1m") })
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop reports a pending call once")
	}
	c.Advance(5 * time.Second)
	if got := c.Now().Sub(start); got != 5*time.Second {
		t.Fatalf("Now moved %s, want 5s", got)
	}
	if len(ran) != 2 || ran[0] != "1s" || ran[1] != "3s" {
		t.Fatalf("ran %v, want [1s 3s]", ran)
	}
	if !late.Stop() {
		t.Fatal("a call not yet due could not be stopped")
	}
	c.Advance(time.Hour)
	if len(ran) != 2 {
		t.Fatalf("a stopped call ran: %v", ran)
	}
}
