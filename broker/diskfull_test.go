package broker

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/internal/fileops/fileopstest"
	"github.com/unilog/unilog/internal/poll"
)

// smallDisk is a place that can be made full and given space again.
type smallDisk interface {
	dir() string
	fill(t *testing.T)
	free(t *testing.T)
	// holds is how many bytes of records the commit log takes before
	// filling: a tmpfs the log's first two (allocated) files, a file size
	// limit what its writes reach in the first file.
	holds() int
}

// tmpfsDisk is a size-limited tmpfs mounted under the test's directory,
// filled by a file that leaves less than one commit-log file free.
type tmpfsDisk struct {
	mnt, filler string
	slack       int64
}

func (d *tmpfsDisk) dir() string { return filepath.Join(d.mnt, "data") }

func (d *tmpfsDisk) holds() int { return diskFullFileSize }

func (d *tmpfsDisk) fill(t *testing.T) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.mnt, &st); err != nil {
		t.Fatal(err)
	}
	size := int64(st.Bavail)*st.Bsize - d.slack
	f, err := os.Create(d.filler)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		t.Fatalf("fill tmpfs with %d bytes: %v", size, err)
	}
}

func (d *tmpfsDisk) free(t *testing.T) {
	if err := os.Remove(d.filler); err != nil {
		t.Fatal(err)
	}
}

// rlimitDisk is the fallback where mounting is refused: RLIMIT_FSIZE below
// the commit-log file size makes the next file's fallocate fail with
// EFBIG, which commitlog reports as ErrDiskFull like ENOSPC.
type rlimitDisk struct {
	root  string
	limit uint64
	saved syscall.Rlimit
}

func (d *rlimitDisk) dir() string { return d.root }

func (d *rlimitDisk) holds() int { return int(d.limit) }

func (d *rlimitDisk) fill(t *testing.T) {
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &d.saved); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: d.limit, Max: d.saved.Max}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_FSIZE, &d.saved) })
}

func (d *rlimitDisk) free(t *testing.T) {
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &d.saved); err != nil {
		t.Fatal(err)
	}
}

const diskFullFileSize = 4 << 20

func newSmallDisk(t *testing.T, kind string) smallDisk {
	base := t.TempDir()
	if kind == "rlimit" {
		return &rlimitDisk{root: filepath.Join(base, "data"), limit: diskFullFileSize / 2}
	}
	mnt := filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=32m"); err != nil {
		t.Logf("mounting a tmpfs refused (%v): simulating a full disk with RLIMIT_FSIZE", err)
		return &rlimitDisk{root: filepath.Join(base, "data"), limit: diskFullFileSize / 2}
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, 0); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	return &tmpfsDisk{mnt: mnt, filler: filepath.Join(mnt, "filler"), slack: 1 << 20}
}

func readOnlyMetric(t *testing.T, b *Broker) string {
	t.Helper()
	resp, err := http.Get("http://" + b.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, "unilog_read_only "); ok {
			return v
		}
	}
	t.Fatal("no unilog_read_only metric")
	return ""
}

// TestDiskFullReadOnly fills the disk under a broker: produce fails with
// KAFKA_STORAGE_ERROR and nothing else, everything acknowledged stays
// readable, and writing resumes once space is freed. It runs on a small
// tmpfs (or, where mounting is refused, RLIMIT_FSIZE) and always on
// RLIMIT_FSIZE too, so the fallback is exercised everywhere.
func TestDiskFullReadOnly(t *testing.T) {
	for _, kind := range []string{"tmpfs", "rlimit"} {
		t.Run(kind, func(t *testing.T) {
			// RLIMIT_FSIZE holds for go test's own log of opened files
			// too: the limit is set in a child process without it.
			if kind == "rlimit" && !fileopstest.InChild(t) {
				return
			}
			testDiskFullReadOnly(t, newSmallDisk(t, kind))
		})
	}
}

func testDiskFullReadOnly(t *testing.T, disk smallDisk) {
	cfg := testConfig(t, disk.dir())
	so := testStore()
	so.CommitLog.FileSize = diskFullFileSize
	b := startBrokerWith(t, cfg, so)
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "full", 1)

	// Let the file after the first be preallocated before the disk fills,
	// so the failure comes at the third file, deterministically.
	second := filepath.Join(disk.dir(), "commitlog", fmt.Sprintf("%020d", diskFullFileSize))
	poll.True(t, "the second log file preallocated", func() bool {
		_, err := os.Stat(second)
		return err == nil
	})
	disk.fill(t)

	value := strings.Repeat("x", 64<<10)
	produce := func(i int) (int16, *string) {
		p := rawProduce(t, cl, "full", 0, rawBatch(-1, -1, -1, fmt.Sprintf("%06d%s", i, value)))
		return p.ErrorCode, p.ErrorMessage
	}
	acked := 0
	for ; ; acked++ {
		code, msg := produce(acked)
		if code == 0 {
			if acked > 3*diskFullFileSize/len(value) {
				t.Fatalf("%d batches acknowledged and the disk never filled", acked)
			}
			continue
		}
		if code != kerr.KafkaStorageError.Code {
			t.Fatalf("produce %d on a full disk: %v, want KAFKA_STORAGE_ERROR", acked, kerr.ErrorForCode(code))
		}
		if msg == nil || !strings.Contains(*msg, "disk full") {
			t.Fatalf("produce on a full disk: message %v", msg)
		}
		break
	}
	if acked < disk.holds()/len(value)-1 {
		t.Fatalf("disk full after only %d batches", acked)
	}
	if v := readOnlyMetric(t, b); v != "1" {
		t.Fatalf("unilog_read_only %s on a full disk, want 1", v)
	}
	// Still full: a second produce fails the same way, reads go on.
	if code, _ := produce(acked); code != kerr.KafkaStorageError.Code {
		t.Fatalf("second produce on a full disk: %v", kerr.ErrorForCode(code))
	}
	checkValues(t, consumeN(t, b.Addr(), "full", acked), 0)

	disk.free(t)
	if code, _ := produce(acked); code != 0 {
		t.Fatalf("produce after space returned: %v", kerr.ErrorForCode(code))
	}
	acked++
	if v := readOnlyMetric(t, b); v != "0" {
		t.Fatalf("unilog_read_only %s after space returned, want 0", v)
	}
	checkValues(t, consumeN(t, b.Addr(), "full", acked), 0)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	verifyDir(t, disk.dir())
}

// checkValues asserts records carry their sequence numbers in order.
func checkValues(t *testing.T, recs []*kgo.Record, from int) {
	t.Helper()
	for i, r := range recs {
		if got := string(r.Value[:6]); got != fmt.Sprintf("%06d", from+i) {
			t.Fatalf("record %d holds %q", i, got)
		}
	}
}
