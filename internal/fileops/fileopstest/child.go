package fileopstest

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// childEnv marks the process InChild starts.
const childEnv = "UNILOG_FILEOPSTEST_CHILD"

// InChild runs the calling test again in a child process of the test
// binary and reports whether this is the child, where the test goes on.
// In the parent it waits for the child, fails the test with the child's
// output unless the child's run of it passed, and reports false: the
// test returns.
//
// It is for a test that sets a small file size limit (LimitFileSize).
// The limit holds for every file of the process, go test's own log of
// the files the tests open too (-test.testlogfile), which grows with
// every test of the package: once past the limit, the package failed
// after all its tests passed ("can't write testlog.txt: file too
// large"). The child is started without that log.
func InChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		return true
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s in a child process: %v\n%s", t.Name(), err, out)
	}
	return false
}
