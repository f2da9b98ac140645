package bench

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// dropCaches writes back dirty pages and asks the kernel to drop the clean
// page cache, dentries and inodes, so that the next read comes from disk.
// It needs root; the error says why a read was not cold.
func dropCaches() error {
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
		return fmt.Errorf("page cache not dropped: %w", err)
	}
	return nil
}
