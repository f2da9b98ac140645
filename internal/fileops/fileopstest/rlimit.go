package fileopstest

import (
	"syscall"
	"testing"
)

// LimitFileSize sets RLIMIT_FSIZE to max bytes, so that growing a file
// past it fails with EFBIG as a full disk fails with ENOSPC (the Go
// runtime ignores SIGXFSZ). The returned restore puts the old limit back;
// it runs at the end of the test too, and only once. The limit is the
// whole process's: tests using it must not run in parallel.
func LimitFileSize(t testing.TB, max uint64) (restore func()) {
	t.Helper()
	var saved syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &saved); err != nil {
		t.Fatal(err)
	}
	limited := syscall.Rlimit{Cur: max, Max: saved.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limited); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore = func() {
		if !restored {
			restored = true
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &saved); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(restore)
	return restore
}
