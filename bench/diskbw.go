package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// DiskBandwidth is the raw sequential write bandwidth of the disk under a
// directory: the physical limit every result is compared with.
type DiskBandwidth struct {
	MBPerS float64 `json:"mb_per_s"`
	Bytes  int64   `json:"bytes"`
	Direct bool    `json:"direct"` // O_DIRECT was used
	Note   string  `json:"note,omitempty"`
}

// probeBlock is the size of one O_DIRECT write, as dd bs=1M.
const probeBlock = 1 << 20

// MeasureDisk writes size bytes sequentially to a scratch file in dir with
// O_DIRECT, 1 MiB aligned writes and a final fsync, like
// `dd bs=1M oflag=direct conv=fsync`. When the file system refuses O_DIRECT it
// falls back to buffered writes plus fsync and says so in Note.
func MeasureDisk(dir string, size int64) (DiskBandwidth, error) {
	size = max(size/probeBlock, 1) * probeBlock
	path := filepath.Join(dir, ".unilog-bench-diskprobe")
	defer os.Remove(path)
	res := DiskBandwidth{Bytes: size, Direct: true}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_DIRECT, 0o644)
	if errors.Is(err, unix.EINVAL) {
		res.Direct = false
		res.Note = "O_DIRECT refused by the file system; buffered writes + fsync (page cache included)"
		fd, err = unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o644)
	}
	if err != nil {
		return res, fmt.Errorf("bench: disk probe: open %s: %w", path, err)
	}
	defer unix.Close(fd)
	// An anonymous mapping is page aligned, which O_DIRECT requires.
	buf, err := unix.Mmap(-1, 0, probeBlock, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return res, fmt.Errorf("bench: disk probe: buffer: %w", err)
	}
	defer unix.Munmap(buf)
	for i := range buf {
		buf[i] = byte(i*7 + i>>8)
	}
	start := time.Now()
	for off := int64(0); off < size; off += probeBlock {
		n, err := unix.Pwrite(fd, buf, off)
		if errors.Is(err, unix.EINVAL) && res.Direct && off == 0 {
			// Some file systems accept the O_DIRECT open and refuse the write.
			return measureBuffered(path, size, buf)
		}
		if err != nil {
			return res, fmt.Errorf("bench: disk probe: write at %d: %w", off, err)
		}
		if n != probeBlock {
			return res, fmt.Errorf("bench: disk probe: short write at %d: %d bytes", off, n)
		}
	}
	if err := unix.Fsync(fd); err != nil {
		return res, fmt.Errorf("bench: disk probe: fsync: %w", err)
	}
	res.MBPerS = float64(size) / time.Since(start).Seconds() / 1e6
	return res, nil
}

func measureBuffered(path string, size int64, buf []byte) (DiskBandwidth, error) {
	res := DiskBandwidth{Bytes: size, Note: "O_DIRECT writes refused; buffered writes + fsync (page cache included)"}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return res, fmt.Errorf("bench: disk probe: %w", err)
	}
	defer f.Close()
	start := time.Now()
	for off := int64(0); off < size; off += int64(len(buf)) {
		if _, err := f.Write(buf); err != nil {
			return res, fmt.Errorf("bench: disk probe: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		return res, fmt.Errorf("bench: disk probe: %w", err)
	}
	res.MBPerS = float64(size) / time.Since(start).Seconds() / 1e6
	return res, nil
}
