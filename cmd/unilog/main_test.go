package main

import (
	"os"
	"testing"
)

// runMainEnv makes the test binary act as unilog itself, so that commands
// that start unilog as a child (bench compare runs `unilog bench serve`)
// can be tested with os.Executable().
const runMainEnv = "UNILOG_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
