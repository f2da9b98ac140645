package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/unilog/unilog/internal/bytesize"
)

// Machine describes the host a report was measured on.
type Machine struct {
	CPU          string
	NumCPU       int
	MemTotal     string
	Kernel       string
	GoVersion    string
	DirtyRatio   string // vm.dirty_ratio / vm.dirty_background_ratio (or _bytes)
	DirtyLimit   string // dirty_ratio applied to MemAvailable, roughly the kernel's threshold
	ReadAheadKB  string
	NoFile       uint64
	MaxMapCount  int64
	Filesystem   string // of the benchmark directory
	DiskFree     string
	DiskRotation string
	Costs        UnitCosts // zero when the probe failed (CostsErr)
	CostsErr     error
}

// DescribeMachine reads /proc and the file system of dir, and probes the
// kernel's unit costs there (unitcost.go).
func DescribeMachine(dir string) Machine {
	m := Machine{NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), MaxMapCount: readLimit("/proc/sys/vm/max_map_count")}
	m.CPU = procField("/proc/cpuinfo", "model name")
	if kb := procField("/proc/meminfo", "MemTotal"); kb != "" {
		var n int64
		fmt.Sscanf(kb, "%d", &n)
		m.MemTotal = bytesize.Format(n << 10)
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		m.NoFile = lim.Cur
	}
	ratio := func(name string) string {
		if b := readLimit("/proc/sys/vm/" + name + "_bytes"); b > 0 {
			return bytesize.Format(b)
		}
		return fmt.Sprintf("%d%%", readLimit("/proc/sys/vm/"+name+"_ratio"))
	}
	m.DirtyRatio = ratio("dirty") + " / " + ratio("dirty_background")
	if d := ReadDirtyLimit(); d.Bytes > 0 {
		m.DirtyLimit = bytesize.Format(d.Bytes)
	}
	var st unix.Stat_t
	var fs unix.Statfs_t
	if unix.Stat(dir, &st) == nil {
		m.Filesystem, m.DiskRotation, m.ReadAheadKB = mountOf(st.Dev)
	}
	if unix.Statfs(dir, &fs) == nil {
		m.DiskFree = bytesize.Format(int64(fs.Bavail) * fs.Bsize)
	}
	m.Costs, m.CostsErr = ProbeUnitCosts(dir)
	return m
}

// procField returns the value of the first "key: value" line with that key.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// mountOf finds the mount with device number dev in /proc/self/mountinfo and
// returns "source fstype (mount point)", whether the block device says it
// rotates, and its read-ahead.
func mountOf(dev uint64) (fs, rotation, readAhead string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", ""
	}
	defer f.Close()
	want := fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[2] != want {
			continue
		}
		sep := 6
		for sep < len(fields) && fields[sep] != "-" {
			sep++
		}
		if sep+2 >= len(fields) {
			continue
		}
		src := fields[sep+2]
		queue := "/sys/block/" + strings.TrimPrefix(src, "/dev/") + "/queue/"
		if b, err := os.ReadFile(queue + "rotational"); err == nil {
			rotation = map[string]string{"0": "non-rotational", "1": "rotational (as the virtual device reports it)"}[strings.TrimSpace(string(b))]
		}
		if b, err := os.ReadFile(queue + "read_ahead_kb"); err == nil {
			readAhead = strings.TrimSpace(string(b))
		}
		return fmt.Sprintf("%s %s (mounted on %s)", src, fields[sep+1], fields[4]), rotation, readAhead
	}
	return "", "", ""
}
