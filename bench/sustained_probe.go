package bench

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/unilog/unilog/internal/bytesize"
)

// A sustained row's share of the disk is measured against the disk in the
// same stretch of time, over the same byte count. This virtual disk's
// O_DIRECT bandwidth varies by 2x within an hour and with the size written
// (dd of 1 GiB 1.0 GB/s, of 14 GiB 1.4 GB/s, a minute apart), so the
// report's one 1 GiB probe at the start is a fair measure only of the 1 GiB
// sweep runs. Right before each sustained run, after the previous run's
// directory is gone and its write-back synced, an O_DIRECT probe writes the
// run's payload size and is deleted: the probe and the run's data never
// occupy the disk at once. It costs one more sustained-size write per
// sustained run (~10 s for 13.7 GiB here).

// probeBeforeSustained probes the disk over total bytes and records the
// probe in rep; the run then compares with it. A probe that fails (a full
// disk) leaves the run compared with the first probe, and says so.
func probeBeforeSustained(cfg *Config, rep *Report, total int64) (DiskBandwidth, string) {
	unix.Sync()
	d, err := MeasureDisk(cfg.Dir, total)
	if err != nil {
		fmt.Fprintf(cfg.Notes, "sustained disk probe: %v\n", err)
		return rep.Disk, fmt.Sprintf("no probe of the sustained size (%v); against the first probe", err)
	}
	rep.SustainedDisk = append(rep.SustainedDisk, d)
	fmt.Fprintf(cfg.Notes, "sustained disk probe: %.0f MB/s raw sequential write (%s)%s\n", d.MBPerS, bytesize.Format(d.Bytes), noteSuffix(d.Note))
	return d, d.Note
}

// sustainedDiskSpread is the paired probes' bandwidth over the report.
func (rep *Report) sustainedDiskSpread() Spread {
	mbs := make([]float64, len(rep.SustainedDisk))
	for i, d := range rep.SustainedDisk {
		mbs[i] = d.MBPerS
	}
	return spreadOf(mbs)
}

// sustainedDiskText says what a sustained row's *of disk* is against;
// sweep is the sweep runs' payload size.
func sustainedDiskText(rep *Report, sweep int64) string {
	if len(rep.SustainedDisk) == 0 {
		return " Their *of disk* is against the first probe above."
	}
	return fmt.Sprintf(" Their *of disk* is not against the first probe but against an O_DIRECT probe of the same %s written right before each "+
		"sustained run (after the previous run's files were deleted and synced; the probe's file is deleted before the run): this virtual "+
		"disk's bandwidth varies by 2x within the hour and with the size written, so a ratio is only fair within one stretch of time and "+
		"one size. The sweep rows (%s each) are compared with the first probe (%s).",
		bytesize.Format(rep.SustainedDisk[0].Bytes), bytesize.Format(sweep), bytesize.Format(rep.Disk.Bytes))
}
