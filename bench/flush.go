package bench

import (
	"fmt"
	"strings"
	"time"
)

// Flush is one flush policy, applied the same way to both layouts.
type Flush struct {
	Mode     string        // "none", "interval" or "sync"
	Interval time.Duration // for "interval"
}

// ParseFlush parses none, interval:DUR (e.g. interval:100ms) or sync.
func ParseFlush(s string) (Flush, error) {
	switch {
	case s == "none" || s == "sync":
		return Flush{Mode: s}, nil
	case strings.HasPrefix(s, "interval:"):
		d, err := time.ParseDuration(strings.TrimPrefix(s, "interval:"))
		if err != nil || d <= 0 {
			return Flush{}, fmt.Errorf("bench: flush %q: want interval:DURATION with a positive duration", s)
		}
		return Flush{Mode: "interval", Interval: d}, nil
	}
	return Flush{}, fmt.Errorf("bench: flush %q: want none, interval:DURATION or sync", s)
}

func (f Flush) String() string {
	if f.Mode == "interval" {
		return "interval:" + f.Interval.String()
	}
	return f.Mode
}
