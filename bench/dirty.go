package bench

import (
	"fmt"
	"strconv"

	"github.com/unilog/unilog/internal/bytesize"
)

// DirtyLimit is the amount of dirty page cache at which the kernel starts
// throttling writers, as read from /proc: vm.dirty_bytes when set, else
// vm.dirty_ratio percent of MemAvailable (the kernel applies the ratio to
// its own notion of available memory, which MemAvailable approximates).
// A run that writes several times this much measures the disk's write-back,
// not copies into the page cache.
type DirtyLimit struct {
	Bytes        int64  `json:"bytes"`
	DirtyBytes   int64  `json:"vm_dirty_bytes"`
	DirtyRatio   int64  `json:"vm_dirty_ratio"`
	MemAvailable int64  `json:"mem_available"`
	How          string `json:"how"`
}

// ReadDirtyLimit reads /proc/sys/vm/dirty_bytes, dirty_ratio and
// MemAvailable; Bytes is 0 when none of them could be read.
func ReadDirtyLimit() DirtyLimit {
	d := DirtyLimit{
		DirtyBytes: readLimit("/proc/sys/vm/dirty_bytes"),
		DirtyRatio: readLimit("/proc/sys/vm/dirty_ratio"),
	}
	if kb := procField("/proc/meminfo", "MemAvailable"); kb != "" {
		var n int64
		if _, err := fmt.Sscanf(kb, "%d", &n); err == nil {
			d.MemAvailable = n << 10
		}
	}
	switch {
	case d.DirtyBytes > 0:
		d.Bytes = d.DirtyBytes
		d.How = "vm.dirty_bytes " + strconv.FormatInt(d.DirtyBytes, 10)
	case d.DirtyRatio > 0 && d.MemAvailable > 0:
		d.Bytes = d.MemAvailable * d.DirtyRatio / 100
		d.How = fmt.Sprintf("vm.dirty_ratio %d%% of MemAvailable %s", d.DirtyRatio, bytesize.Format(d.MemAvailable))
	}
	return d
}

func (d DirtyLimit) String() string {
	if d.Bytes == 0 {
		return "unknown (no vm.dirty_bytes, vm.dirty_ratio or MemAvailable in /proc)"
	}
	return fmt.Sprintf("%s (%s)", bytesize.Format(d.Bytes), d.How)
}
