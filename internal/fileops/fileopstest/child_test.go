package fileopstest

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestInChild: the test goes on in a child process without go test's log
// of opened files, where a small file size limit holds; the parent's
// limit stays as it was.
func TestInChild(t *testing.T) {
	var before syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &before); err != nil {
		t.Fatal(err)
	}
	if !InChild(t) {
		var after syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &after); err != nil || after != before {
			t.Fatalf("the parent's file size limit went from %+v to %+v (%v)", before, after, err)
		}
		return
	}
	if f := flag.Lookup("test.testlogfile"); f != nil && f.Value.String() != "" {
		t.Fatalf("the child logs opened files to %s", f.Value)
	}
	LimitFileSize(t, 1<<10)
	err := os.WriteFile(filepath.Join(t.TempDir(), "big"), make([]byte, 2<<10), 0o600)
	if !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("a write past the limit in the child: %v, want EFBIG", err)
	}
}
