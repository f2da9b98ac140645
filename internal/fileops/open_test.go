package fileops

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestOpen(t *testing.T) {
	for _, c := range []struct {
		name    string
		exists  bool
		flag    int
		perm    os.FileMode
		wantErr error
	}{
		{name: "existing read-write", exists: true, flag: os.O_RDWR},
		{name: "existing write-only", exists: true, flag: os.O_WRONLY},
		{name: "created", flag: os.O_RDWR | os.O_CREATE | os.O_TRUNC, perm: 0o640},
		{name: "missing", flag: os.O_RDWR, wantErr: fs.ErrNotExist},
		{name: "exclusive over existing", exists: true, flag: os.O_RDWR | os.O_CREATE | os.O_EXCL, perm: 0o644, wantErr: fs.ErrExist},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			if c.exists {
				if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			f, err := Open(path, c.flag, c.perm)
			if c.wantErr != nil {
				var pe *os.PathError
				if !errors.Is(err, c.wantErr) || !errors.As(err, &pe) || pe.Op != "open" || pe.Path != path {
					t.Fatalf("Open: %v, want an *os.PathError of open %s that is %v", err, path, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fd := int(f.Fd())
			fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
			if err != nil || fl&unix.O_NONBLOCK != 0 {
				t.Errorf("status flags %#x (%v): want a blocking descriptor", fl, err)
			}
			if fdfl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || fdfl&unix.FD_CLOEXEC == 0 {
				t.Errorf("descriptor flags %#x (%v): want close-on-exec", fdfl, err)
			}
			if _, err := f.WriteAt([]byte("new"), 0); err != nil {
				t.Fatalf("write: %v", err)
			}
			if b, err := os.ReadFile(path); err != nil || string(b) != "new" {
				t.Fatalf("file holds %q (%v), want %q", b, err, "new")
			}
			if c.flag&os.O_CREATE == 0 {
				return
			}
			// The mode is what os.OpenFile gives under the same umask.
			ref := filepath.Join(dir, "ref")
			rf, err := os.OpenFile(ref, c.flag, c.perm)
			if err != nil {
				t.Fatal(err)
			}
			rf.Close()
			got, err1 := os.Stat(path)
			want, err2 := os.Stat(ref)
			if err1 != nil || err2 != nil || got.Mode() != want.Mode() {
				t.Fatalf("mode %v (%v), os.OpenFile made %v (%v)", got.Mode(), err1, want.Mode(), err2)
			}
		})
	}
}

// BenchmarkOpen opens, grows and closes an existing file, as a consume
// queue's growth does, through os.OpenFile and through Open.
func BenchmarkOpen(b *testing.B) {
	for _, c := range []struct {
		name string
		open func(string, int, os.FileMode) (*os.File, error)
	}{
		{"os.OpenFile", os.OpenFile},
		{"Open", Open},
	} {
		b.Run(c.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "f")
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				f, err := c.open(path, os.O_RDWR, 0)
				if err != nil {
					b.Fatal(err)
				}
				if err := (OS{}).Fallocate(f, 8192); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
}
