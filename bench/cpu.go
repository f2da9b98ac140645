package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat. It
// is 100 on every Linux architecture Go supports (the kernel fixes it for
// user space whatever its own HZ), and reading it would need cgo's sysconf.
const clockTicks = 100

// Cost sources, said beside every figure because they do not measure the
// same thing.
const (
	// CPUChild is the broker running as a child process: /proc/PID/stat
	// counts the broker alone.
	CPUChild = "proc-child"
	// CPUSelf is the broker running in this process: getrusage(RUSAGE_SELF)
	// also counts the load generator's clients.
	CPUSelf = "rusage-self, includes the load generator"
)

// procCPU returns the user plus system CPU time a process has used, from
// /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: cpu of %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces; fields count from the
	// closing parenthesis, which is field 2's end: utime and stime are
	// fields 14 and 15, the 12th and 13th after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: cpu of %d: malformed stat %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: cpu of %d: short stat %q", pid, s)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: cpu of %d: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// selfCPU returns this process's user plus system CPU time.
func selfCPU() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("bench: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
