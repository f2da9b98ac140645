package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/edsrzf/mmap-go"
)

// The run directory is often given relative (make bench-report uses
// ./bench-data) while /proc/self/maps names files absolutely.
func TestMeasureResourcesRelativeDir(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	if err := os.Mkdir("run", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join("run", "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 20); err != nil {
		t.Fatal(err)
	}
	m, err := mmap.Map(f, mmap.RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unmap()
	for _, dir := range []string{"run", "./run", filepath.Join(root, "run")} {
		r := measureResources(dir)
		if r.mappedBytes != 1<<20 || r.dirMaps != 1 {
			t.Errorf("measureResources(%q): mapped %d bytes in %d areas, want %d in 1", dir, r.mappedBytes, r.dirMaps, 1<<20)
		}
	}
}
