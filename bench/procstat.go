package bench

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// resources is what a layout holds from the kernel at the end of a run.
type resources struct {
	openFiles   int   // entries in /proc/self/fd, the whole process
	mapAreas    int   // lines in /proc/self/maps, the whole process
	mappedBytes int64 // size of the mappings of files under the run directory
	dirMaps     int   // map areas of files under the run directory
}

// measureResources reads /proc/self. It runs right at the limits, where
// opening /proc may itself fail for want of a descriptor: counts it could
// not take are -1.
func measureResources(dir string) resources {
	r := resources{openFiles: -1, mapAreas: -1}
	// /proc/self/maps names files by absolute path.
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		r.openFiles = len(fds) - 1 // the descriptor ReadDir itself held
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return r
	}
	defer f.Close()
	r.mapAreas = 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		r.mapAreas++
		line := sc.Text()
		i := strings.Index(line, " /")
		if i < 0 || !strings.HasPrefix(line[i+1:], dir+"/") {
			continue
		}
		lo, hi, ok := strings.Cut(strings.Fields(line)[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil {
			r.mappedBytes += int64(b - a)
			r.dirMaps++
		}
	}
	return r
}

// readLimit reads a one-number file such as /proc/sys/vm/max_map_count; 0 if
// it cannot.
func readLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}
