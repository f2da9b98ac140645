package controlplane

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestStartServerStoreDirErrors: a store directory the server cannot use
// is reported with its path and the system's reason, not as JetStream's
// "storage directory is not a directory" (which it said for a directory
// it was not allowed to look into).
func TestStartServerStoreDirErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the store directory and the path the error must name.
		setup  func(t *testing.T, base string) (dir, culprit string)
		want   error
		asRoot bool // permissions are moot for root
	}{
		{"parent is a file", func(t *testing.T, base string) (string, string) {
			file := filepath.Join(base, "data")
			if err := os.WriteFile(file, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(file, "nats"), file
		}, syscall.ENOTDIR, true},
		{"parent not searchable", func(t *testing.T, base string) (string, string) {
			locked := filepath.Join(base, "data")
			if err := os.Mkdir(locked, 0o000); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(locked, 0o755) })
			return filepath.Join(locked, "nats"), locked
		}, fs.ErrPermission, false},
		{"not writable", func(t *testing.T, base string) (string, string) {
			dir := filepath.Join(base, "nats")
			if err := os.MkdirAll(filepath.Join(dir, "jetstream"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(dir, "jetstream"), 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(filepath.Join(dir, "jetstream"), 0o755) })
			return dir, filepath.Join(dir, "jetstream")
		}, fs.ErrPermission, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.asRoot && os.Geteuid() == 0 {
				t.Skip("running as root: permissions do not apply")
			}
			dir, culprit := tc.setup(t, t.TempDir())
			s, err := StartServer(ServerConfig{Name: "test", Dir: dir, Listen: "127.0.0.1:0", Logger: quietLogger()})
			if err == nil {
				s.Shutdown()
				t.Fatal("server started on an unusable store directory")
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), culprit) {
				t.Fatalf("error %q: want one wrapping %v and naming %s", err, tc.want, culprit)
			}
		})
	}
}
