package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfile begins a CPU profile of this process into path and returns
// the function that ends it. runBroker profiles its start with it, ending
// it once the listeners serve: a restart (store recovery, journal replay,
// producer snapshot) happens before the admin port, and so /debug/pprof,
// exists. bench compare profiles its clients with it. An empty path
// profiles nothing.
func startProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", path, err)
	}
	stopped := false
	return func() error {
		if stopped {
			return nil
		}
		stopped = true
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("cpu profile %s: %w", path, err)
		}
		return nil
	}, nil
}
