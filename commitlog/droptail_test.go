package commitlog

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestRecoverDropsTail: after recovery has checked the unwritten rest of
// the last file, those pages are no longer mapped into the process (its
// RSS), though the records before the end still read back.
func TestRecoverDropsTail(t *testing.T) {
	const fileSize = 32 << 20
	opts := testOptions(t, t.TempDir(), fileSize)
	l := openLog(t, opts)
	m := testMessage(1, 100)
	if _, err := l.AppendBatch([]Message{m}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, opts)
	defer l.Close() // its preallocator may still be making the next file
	s := l.chain()[0]
	if rss := mappingRSS(t, s.ro); rss > 1<<20 {
		t.Errorf("the %d MiB file's mapping has %d KiB resident after recovery, want at most 1 MiB", fileSize>>20, rss>>10)
	}
	v, err := l.Read(0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	if diff := sameMessage(v.Record(), &m); diff != "" {
		t.Error(diff)
	}
}

// mappingRSS reads the Rss of the mapping holding b from /proc/self/smaps.
func mappingRSS(t *testing.T, b []byte) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uint64
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			kb, err := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return 0
}
