package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfile begins a CPU profile of the broker's start into path and
// returns the function that ends it, which runBroker calls once the
// listeners serve. A restart (store recovery, journal replay, producer
// snapshot) happens before the admin port, and so /debug/pprof, exists;
// this is the only way to see it. An empty path profiles nothing.
func startProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("start profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start profile %s: %w", path, err)
	}
	stopped := false
	return func() error {
		if stopped {
			return nil
		}
		stopped = true
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("start profile %s: %w", path, err)
		}
		return nil
	}, nil
}
