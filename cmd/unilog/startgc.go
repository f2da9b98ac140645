package main

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
)

// startGCPercent is the collector's target while `unilog produce` runs:
// the client's live heap is the records in flight, and collecting four
// times less often than the default costs little memory.
const startGCPercent = 400

// startGC raises the collector's target to startGCPercent until the
// returned function restores it, unless GOGC or GOMEMLIMIT says how the
// operator wants the heap run.
func startGC() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	return holdGC(startGCPercent, math.MaxInt64)
}

// brokerStartGC turns the collector off while the broker starts, under a
// soft memory limit of half the memory available, until the returned
// function restores both. A start at a million partitions builds about
// half a gigabyte of live heap from nothing: each collection on the way
// marks all of it built so far, and the mutator assists of one fell on
// the journal replay, which is what a restart waits for. Past the limit
// the collector runs as it must. Without /proc/meminfo, or where GOGC or
// GOMEMLIMIT is set, it does what startGC does.
func brokerStartGC() (restore func()) {
	avail := memAvailable()
	if avail <= 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return startGC()
	}
	return holdGC(-1, avail/2)
}

// gcHold is the process's collector settings while commands hold them:
// the tests run brokers and clients side by side in one process, and one
// restoring what it found while another still held would leave the
// other's setting behind for good.
var gcHold struct {
	sync.Mutex
	n       int
	percent int
	limit   int64
}

// holdGC sets the collector's percent and memory limit unless another
// hold already did, and returns the release, which may be called more
// than once; the last release restores what the first hold found.
func holdGC(percent int, limit int64) (release func()) {
	gcHold.Lock()
	defer gcHold.Unlock()
	if gcHold.n == 0 {
		gcHold.limit = debug.SetMemoryLimit(limit)
		gcHold.percent = debug.SetGCPercent(percent)
	}
	gcHold.n++
	var once sync.Once
	return func() {
		once.Do(func() {
			gcHold.Lock()
			defer gcHold.Unlock()
			if gcHold.n--; gcHold.n == 0 {
				debug.SetGCPercent(gcHold.percent)
				debug.SetMemoryLimit(gcHold.limit)
			}
		})
	}
}

// memAvailable is MemAvailable of /proc/meminfo in bytes, or 0. It is the
// host's, not a container's limit: an operator who runs the broker under a
// tighter limit says so with GOMEMLIMIT, which the runtime needs anyway.
func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return parseMemAvailable(b)
}

func parseMemAvailable(meminfo []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 3 && string(f[0]) == "MemAvailable:" && string(f[2]) == "kB" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil || kb < 0 {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
