package bench

import (
	"os"
	"testing"
	"time"
)

// TestProcCPU burns 100 ms of CPU and checks that /proc/self/stat, parsed
// by procCPU, counts at least half of what getrusage counts (ticks are
// 10 ms, so the two differ by little).
func TestProcCPU(t *testing.T) {
	self := time.Duration(0)
	for x := 0; self < 100*time.Millisecond; x++ {
		var err error
		if self, err = selfCPU(); err != nil {
			t.Fatal(err)
		}
	}
	proc, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if proc < self/2 {
		t.Fatalf("/proc counts %v, rusage %v", proc, self)
	}
	if _, err := procCPU(-1); err == nil {
		t.Error("cpu of pid -1: no error")
	}
}
