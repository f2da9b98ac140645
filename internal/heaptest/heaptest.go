// Package heaptest measures the live heap for benchmarks that report
// memory per partition, so that they count what stays reachable, not
// garbage the collector has not reached yet.
package heaptest

import "runtime"

// Live is the heap in use after a full collection.
func Live() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
