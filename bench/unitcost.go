package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// UnitCosts are what the kernel charges on this machine for the three
// operations a broker's CPU per GB is most made of besides its own code: a
// system call, a page of fresh anonymous memory (the Go heap growing, a
// request frame the pool has not got yet) and a page of the page cache
// mapped into the process (a reader of the commit log's mapping). CPU
// seconds per GB carry from one machine to another only as far as these
// do. On the 2-core virtual machine of docs/BENCHMARKS.md (`unilog bench
// machine`, four runs) the first touch of an anonymous page cost
// 11.6-16.4 µs and a system call 0.98-1.19 µs, so there a figure
// dominated by faults says as much about the host as about the code.
//
// The fourth, a page the page cache takes for a file's new bytes, is what
// every byte a broker stores costs the kernel before the disk. On a
// virtual machine whose balloon reports freed memory to its host (the
// 2-core machine of 2026-12-07 had one) it is at times the host's fault
// too: there the first 256 MiB written cost 11.2 µs a page and the same
// written again after a delete 0.9, and for a while a broker's produce
// spent 64% of its CPU in that copy, three times its usual CPU per GB;
// later the same runs cost as usual again. The probe writes its file
// once, first, so that it meets memory as the first run of a report
// does.
type UnitCosts struct {
	Syscall   time.Duration // one getppid(2), the cheapest call there is
	AnonPage  time.Duration // first write to a 4 KiB page of fresh anonymous memory
	FilePage  time.Duration // first read of a cached file page through a new mapping, per 4 KiB page
	CachePage time.Duration // a file's new page in the page cache, by pwrite of 1 MiB pieces, per 4 KiB page
}

// Each probe runs unitRounds times and reports the median, so one
// descheduling does not become the figure.
const (
	unitRounds    = 5
	unitCalls     = 100_000
	unitRegion    = 32 << 20
	unitPageBytes = 4 << 10
	// cacheRegion is the new file CachePage writes once: a round after
	// another would reuse the pages the one before freed.
	cacheRegion = 256 << 20
	// runProbeRegion is the new file a compare writes after each run
	// (probeCachePage): small, because the run after it reuses the pages
	// it frees, which would spare that run the charge being measured.
	runProbeRegion = 32 << 20
)

// ProbeUnitCosts measures UnitCosts, using a scratch file in dir (the
// benchmark's directory, so the file page is of the file system measured)
// that it removes. It takes about a second on the machine above.
func ProbeUnitCosts(dir string) (UnitCosts, error) {
	var u UnitCosts
	var err error
	if u.CachePage, err = probeCachePage(dir, cacheRegion); err != nil {
		return u, err
	}
	u.Syscall = medianOf(func() (time.Duration, error) {
		start := time.Now()
		for range unitCalls {
			syscall.Getppid()
		}
		return time.Since(start) / unitCalls, nil
	}, &err)
	u.AnonPage = medianOf(probeAnonPage, &err)
	f, ferr := cachedScratchFile(dir)
	if ferr != nil {
		return u, ferr
	}
	defer os.Remove(f.Name())
	defer f.Close()
	u.FilePage = medianOf(func() (time.Duration, error) { return probeFilePage(f) }, &err)
	return u, err
}

// medianOf runs probe unitRounds times and returns the median; the first
// error is kept in *err.
func medianOf(probe func() (time.Duration, error), err *error) time.Duration {
	var ds []time.Duration
	for range unitRounds {
		d, perr := probe()
		if perr != nil {
			if *err == nil {
				*err = perr
			}
			return 0
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// probeAnonPage maps a fresh anonymous region, writes one byte to each of
// its pages and unmaps it.
func probeAnonPage() (time.Duration, error) {
	b, err := unix.Mmap(-1, 0, unitRegion, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return 0, fmt.Errorf("bench: unit costs: map anonymous memory: %w", err)
	}
	defer unix.Munmap(b)
	start := time.Now()
	for i := 0; i < len(b); i += unitPageBytes {
		b[i] = 1
	}
	return time.Since(start) / (unitRegion / unitPageBytes), nil
}

// probeCachePage writes a new file of size bytes in dir and returns the
// time per 4 KiB page; the file is removed.
func probeCachePage(dir string, size int64) (time.Duration, error) {
	start := time.Now()
	f, err := writeScratchFile(dir, size)
	if err != nil {
		return 0, err
	}
	d := time.Since(start)
	f.Close()
	os.Remove(f.Name())
	return d / time.Duration(size/unitPageBytes), nil
}

// cachedScratchFile writes unitRegion bytes to a new file in dir, so that
// its pages are in the page cache.
func cachedScratchFile(dir string) (*os.File, error) { return writeScratchFile(dir, unitRegion) }

// writeScratchFile writes size bytes of ones to a new file in dir in
// pieces of 1 MiB.
func writeScratchFile(dir string, size int64) (*os.File, error) {
	f, err := os.CreateTemp(dir, ".unitcost-*")
	if err != nil {
		return nil, fmt.Errorf("bench: unit costs: %w", err)
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = 1
	}
	for off := int64(0); off < size; off += int64(len(chunk)) {
		if _, err := f.WriteAt(chunk, off); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, fmt.Errorf("bench: unit costs: write %s: %w", filepath.Base(f.Name()), err)
		}
	}
	return f, nil
}

// probeFilePage maps f anew (so none of its pages is mapped yet) and reads
// one byte of each page: the kernel maps the cached pages as it faults,
// several per fault, which is how a reader of the log's mapping meets them.
func probeFilePage(f *os.File) (time.Duration, error) {
	b, err := unix.Mmap(int(f.Fd()), 0, unitRegion, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("bench: unit costs: map %s: %w", filepath.Base(f.Name()), err)
	}
	defer unix.Munmap(b)
	start := time.Now()
	sum := 0
	for i := 0; i < len(b); i += unitPageBytes {
		sum += int(b[i])
	}
	d := time.Since(start)
	if sum != unitRegion/unitPageBytes {
		return 0, fmt.Errorf("bench: unit costs: read back %d from %s, wrote ones", sum, filepath.Base(f.Name()))
	}
	return d / (unitRegion / unitPageBytes), nil
}

// String renders the costs for a report.
func (u UnitCosts) String() string {
	us := func(d time.Duration) string { return fmt.Sprintf("%.2f µs", float64(d.Nanoseconds())/1e3) }
	return fmt.Sprintf("a system call (getppid) %s; the first touch of a fresh anonymous 4 KiB page %s; "+
		"mapping a cached file page by a read fault %s per 4 KiB page (medians of %d rounds over %d MiB); "+
		"a new page of the page cache written %s per 4 KiB page (one new file of %d MiB, written once)",
		us(u.Syscall), us(u.AnonPage), us(u.FilePage), unitRounds, unitRegion>>20, us(u.CachePage), cacheRegion>>20)
}
