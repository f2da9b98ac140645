package main

import (
	"os"
	"runtime/debug"
)

// startGCPercent is the collector's target while the broker starts. A
// start at a million partitions builds about a gigabyte of live heap
// (consume-queue and producer state) from nothing, and with the default
// 100 the collector marked it again at every doubling: a third of the
// start's CPU on 2 cores. At 400 it runs about half as often; the peak
// stays under the live heap plus the garbage of the journal replay.
const startGCPercent = 400

// startGC raises the collector's target to startGCPercent until the
// returned function restores it, unless GOGC or GOMEMLIMIT says how the
// operator wants the heap run. `unilog produce` runs under it throughout.
func startGC() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(startGCPercent)
	return func() { debug.SetGCPercent(prev) }
}
