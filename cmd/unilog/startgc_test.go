package main

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestParseMemAvailable(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int64
	}{
		{"present", "MemTotal:       24589064 kB\nMemFree:         1000 kB\nMemAvailable:   20000000 kB\n", 20000000 << 10},
		{"absent (kernels before 3.14)", "MemTotal:       24589064 kB\nMemFree:         1000 kB\n", 0},
		{"not a number", "MemAvailable:   lots kB\n", 0},
		{"another unit", "MemAvailable:   20000000 MB\n", 0},
		{"empty", "", 0},
	} {
		if got := parseMemAvailable([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestBrokerStartGC: while the broker starts the collector is off under a
// memory limit, and the restore puts back what was there, twice over
// (runBroker restores once serving and again on the way out).
func TestBrokerStartGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	if memAvailable() <= 0 {
		t.Skip("no MemAvailable in /proc/meminfo")
	}
	before, limit0 := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	defer debug.SetGCPercent(before)
	restore := brokerStartGC()
	percent, limit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	if percent != -1 || limit <= 0 || limit == math.MaxInt64 {
		t.Fatalf("while starting: GC percent %d, memory limit %d; want off under a limit", percent, limit)
	}
	restore()
	restore()
	if percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); percent != 100 || limit != limit0 {
		t.Fatalf("restored: GC percent %d, memory limit %d; want 100 and %d", percent, limit, limit0)
	}

	// An operator's GOGC decides instead: nothing is changed.
	t.Setenv("GOGC", "200")
	restore = brokerStartGC()
	if percent := debug.SetGCPercent(100); percent != 100 {
		t.Fatalf("under GOGC: GC percent %d while starting, want it left at 100", percent)
	}
	restore()
}

// TestHoldGCOverlapping: two commands in one process, the second starting
// before the first restores, leave the settings as they found them, in
// either order of release.
func TestHoldGCOverlapping(t *testing.T) {
	// Another test of the package may have left a limit (tuneClientGC).
	before, limit0 := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	defer debug.SetGCPercent(before)
	for _, firstOut := range []bool{true, false} {
		a := holdGC(-1, 1<<30)
		b := holdGC(400, math.MaxInt64)
		if firstOut {
			a()
			b()
		} else {
			b()
			a()
		}
		if percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); percent != 100 || limit != limit0 {
			t.Fatalf("first out %v: GC percent %d, memory limit %d after both; want 100 and %d", firstOut, percent, limit, limit0)
		}
	}
}
