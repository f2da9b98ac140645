package dispatcher

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRebuildConsumeQueues deletes the consume queues and checks that a
// restart rebuilds every file byte for byte.
func TestRebuildConsumeQueues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(cqDir string) error
	}{
		{"whole directory", os.RemoveAll},
		{"every partition directory", func(cqDir string) error {
			dirs, err := filepath.Glob(filepath.Join(cqDir, "*", "*"))
			for _, d := range dirs {
				if err == nil {
					err = os.RemoveAll(d)
				}
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := mustOpen(t, testOptions(dir))
			recs := appendN(t, d, 21, 0, 600)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			cqDir := filepath.Join(dir, "consumequeue")
			want := readDir(t, cqDir)
			if len(want) < 20 {
				t.Fatalf("only %d consume-queue files; the test wants several per partition", len(want))
			}
			if err := tc.remove(cqDir); err != nil {
				t.Fatal(err)
			}
			d = mustOpen(t, testOptions(dir))
			for _, a := range recs {
				checkReadable(t, d, a)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if err := equalFiles(want, readDir(t, cqDir)); err != nil {
				t.Fatalf("rebuilt consume queues differ: %v", err)
			}
		})
	}
}
