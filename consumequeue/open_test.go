package consumequeue

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestOpenDamagedQueue(t *testing.T) {
	const epf = 8
	tests := []struct {
		name   string
		damage func(t *testing.T, qdir string)
		// wantErr is nil when the queue opens; then [min, max) is checked.
		wantErr  error
		min, max int64
	}{
		{"all-zero last file is dropped", func(t *testing.T, d string) {
			if err := os.WriteFile(filepath.Join(d, fileName(24)), make([]byte, 4096), 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil, 0, 20},
		{"empty last file is dropped", func(t *testing.T, d string) {
			if err := os.WriteFile(filepath.Join(d, fileName(24)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil, 0, 20},
		{"foreign files are ignored", func(t *testing.T, d string) {
			if err := os.WriteFile(filepath.Join(d, "README"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil, 0, 20},
		{"corrupt last header", func(t *testing.T, d string) {
			writeAt(t, filepath.Join(d, fileName(16)), 3, []byte{0xff})
		}, ErrCorrupt, 0, 0},
		{"corrupt first header", func(t *testing.T, d string) {
			writeAt(t, filepath.Join(d, fileName(0)), 20, []byte{0xff})
		}, ErrCorrupt, 0, 0},
		{"missing middle file", func(t *testing.T, d string) {
			if err := os.Remove(filepath.Join(d, fileName(8))); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt, 0, 0},
		{"name off the grid", func(t *testing.T, d string) {
			if err := os.Rename(filepath.Join(d, fileName(16)), filepath.Join(d, fileName(17))); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt, 0, 0},
		{"file renamed", func(t *testing.T, d string) {
			if err := os.Rename(filepath.Join(d, fileName(16)), filepath.Join(d, fileName(24))); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt, 0, 0},
		{"file larger than full", func(t *testing.T, d string) {
			if err := os.Truncate(filepath.Join(d, fileName(16)), 1<<20); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			buildQueue(t, dir, epf, 0, 20)
			tt.damage(t, filepath.Join(dir, "t", "0"))
			s := openStore(t, dir, epf, 0)
			q, err := s.Queue("t", 0)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("open: %v, want %v", err, tt.wantErr)
				}
				if _, ok := s.Lookup("t", 0); ok {
					t.Fatal("Lookup returned a damaged queue")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkRange(t, q, tt.min, tt.max)
		})
	}
}

func TestEntriesPerFileMismatch(t *testing.T) {
	dir := t.TempDir()
	buildQueue(t, dir, 8, 0, 5)
	s := openStore(t, dir, 16, 0)
	if _, err := s.Queue("t", 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with other EntriesPerFile: %v", err)
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{
		{},
		{Dir: "x", EntriesPerFile: -1},
		{Dir: "x", EntriesPerFile: maxEntriesPerFile + 1},
		{Dir: "x", MaxMapped: -1},
	} {
		if _, err := Open(o); err == nil {
			t.Errorf("Open(%+v) accepted", o)
		}
	}
	s := openStore(t, t.TempDir(), 0, 0)
	if s.opts.EntriesPerFile != DefaultEntriesPerFile || s.opts.MaxMapped != DefaultMaxMapped {
		t.Fatalf("defaults %+v", s.opts)
	}
	q := mustQueue(t, s, "t", 0)
	appendRange(t, q, 0, 3)
	// A fresh file is 4 KiB, not the 9.6 MB it can grow to.
	st, err := os.Stat(filepath.Join(s.queueDir(ID{"t", 0}), fileName(0)))
	if err != nil || st.Size() != minFileSize {
		t.Fatalf("first file: %v, %v", st, err)
	}
	if got := filesOf(t, s, "t", 0); !slices.Equal(got, []string{fileName(0)}) {
		t.Fatalf("files %v", got)
	}
}
