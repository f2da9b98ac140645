package main

import (
	"os"
	"testing"
)

// runMainEnv makes the test binary run the unilog command instead of the
// tests, so a test can start brokers as processes it can SIGKILL: the
// failover tests re-exec themselves with it set.
const runMainEnv = "UNILOG_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
