package bench

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// partitionError is a failure tied to one partition, so that a run that hits
// a machine limit can say where.
type partitionError struct {
	partition int
	err       error
}

func (e *partitionError) Error() string { return fmt.Sprintf("partition %d: %v", e.partition, e.err) }
func (e *partitionError) Unwrap() error { return e.err }

func atPartition(p int, err error) error {
	if err == nil {
		return nil
	}
	return &partitionError{partition: p, err: err}
}

// describe turns a run's failure into the short reason shown in the table,
// naming the machine limit hit when it is one.
func describe(phase string, err error) string {
	var reason string
	switch {
	case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE):
		var lim unix.Rlimit
		unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
		reason = fmt.Sprintf("too many open files (ulimit -n %d)", lim.Cur)
	case errors.Is(err, unix.ENOMEM):
		reason = fmt.Sprintf("mmap: cannot allocate memory (map count; vm.max_map_count %d)", readLimit("/proc/sys/vm/max_map_count"))
	case errors.Is(err, unix.ENOSPC):
		reason = "no space left on device"
	default:
		reason = err.Error()
	}
	var pe *partitionError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s at partition %s, %s", reason, commas(int64(pe.partition)), phase)
	}
	return reason + ", " + phase
}

// commas formats n with thousands separators: 19,990.
func commas(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
