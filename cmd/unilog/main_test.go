package main

import (
	"os"
	"path/filepath"
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
	// Every broker a test starts, in process or as a child, is of one
	// cluster unless it says otherwise: nodes with their own data
	// directories would otherwise each make their own secret.
	dir, err := os.MkdirTemp("", "unilog-test-secret")
	if err != nil {
		panic(err)
	}
	os.Setenv(clusterSecretEnv, filepath.Join(dir, "cluster.secret"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const clusterSecretEnv = "UNILOG_CLUSTER_SECRET_FILE"
