package commitlog

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRecoverRespectsFlushedMark damages real files before and after the
// flushed mark, with and without RecoverTruncate: a torn tail after the
// mark is cut, damage before it refuses to open with nothing changed
// unless the operator asked for the cut.
func TestRecoverRespectsFlushedMark(t *testing.T) {
	const fileSize = 16 << 10
	p := writePristine(t, fileSize, 150)
	lastBase := (p.end - 1) / fileSize * fileSize
	// The mark sits at a record in the last file, so that there is a
	// record of the last file on each side of it.
	first := 0
	for p.pos[first].PhysOffset < lastBase {
		first++
	}
	if len(p.pos)-first < 4 {
		t.Fatalf("test set-up: %d records in the last file, want 4", len(p.pos)-first)
	}
	markRec := first + 2
	mark := p.pos[markRec].PhysOffset
	before, after := p.pos[first], p.pos[markRec+1]
	flip := func(phys int64) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) { flipByte(t, dir, fileSize, phys, 0x5a) }
	}
	cut := func(phys int64) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, segmentName(lastBase)), phys-lastBase); err != nil {
				t.Fatal(err)
			}
		}
	}
	removeLast := func(t *testing.T, dir string) {
		if err := os.Remove(filepath.Join(dir, segmentName(lastBase))); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		damage   func(t *testing.T, dir string)
		from     int64 // where Recover starts (the checkpoint's dispatched offset)
		truncate bool
		wantEnd  int64 // where the log ends when it opens
		refused  string
	}{
		{name: "flip in an early file, before the mark", damage: flip(p.pos[3].PhysOffset + 30), refused: segmentName(0)},
		{name: "flip before the mark", damage: flip(before.PhysOffset + 20), refused: segmentName(lastBase)},
		{name: "flip before the mark, truncate", damage: flip(before.PhysOffset + 20), truncate: true, wantEnd: before.PhysOffset},
		{name: "cut file before the mark", damage: cut(before.PhysOffset + 10), refused: segmentName(lastBase)},
		{name: "cut file before the mark, truncate", damage: cut(before.PhysOffset + 10), truncate: true, wantEnd: before.PhysOffset},
		{name: "last file removed", damage: removeLast, refused: "the files end at"},
		{name: "last file removed, truncate", damage: removeLast, truncate: true, wantEnd: lastBase},
		{name: "torn tail after the mark", damage: flip(after.PhysOffset + 20), wantEnd: after.PhysOffset},
		{name: "cut file after the mark", damage: cut(after.PhysOffset + 10), wantEnd: after.PhysOffset},
		{name: "damage right at the mark is a tail", damage: flip(mark + 20), wantEnd: mark},
		{name: "cut before where recovery starts", damage: cut(before.PhysOffset + 9), from: mark, refused: "(offset " + strconv.FormatInt(before.PhysOffset, 10)},
		{name: "cut before where recovery starts, truncate", damage: cut(before.PhysOffset + 9), from: mark, truncate: true, wantEnd: before.PhysOffset},
		{name: "last file removed, recovery starts in it", damage: removeLast, from: mark, refused: "the files end at"},
		{name: "last file removed, recovery starts in it, truncate", damage: removeLast, from: mark, truncate: true, wantEnd: lastBase},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := p.copyTo(t)
			tc.damage(t, dir)
			damaged := readFiles(t, dir)
			opts := testOptions(t, dir, fileSize)
			opts.Flushed, opts.RecoverTruncate = mark, tc.truncate
			l, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			end, err := l.Recover(tc.from, nil)
			if tc.refused != "" {
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("Recover = %d, %v; want ErrDamaged naming %q", end, err, tc.refused)
				}
				l.Close()
				if got := readFiles(t, dir); !sameFiles(damaged, got) {
					t.Fatal("a refused recovery changed the files")
				}
				// Open extends a cut file to a whole page; the next start
				// must still see the cut.
				l, err = Open(opts)
				if err != nil {
					t.Fatal(err)
				}
				if end, err := l.Recover(tc.from, nil); !errors.Is(err, ErrDamaged) {
					t.Fatalf("second Recover = %d, %v; want ErrDamaged again", end, err)
				}
				return
			}
			if err != nil || end != tc.wantEnd {
				t.Fatalf("Recover = %d, %v; want %d", end, err, tc.wantEnd)
			}
			if _, err := l.Append(&p.msgs[0]); err != nil {
				t.Fatalf("append after recovery: %v", err)
			}
		})
	}
}

func readFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// sameFiles reports whether now holds the files of was with the same
// bytes. Open may extend a cut last file with zeros to a whole page
// (openSegment), which adds nothing and loses nothing, so that is allowed.
func sameFiles(was, now map[string]string) bool {
	if len(was) != len(now) {
		return false
	}
	for k, v := range was {
		w, ok := now[k]
		if !ok || !strings.HasPrefix(w, v) || strings.Trim(w[len(v):], "\x00") != "" {
			return false
		}
	}
	return true
}

// flipByte XORs the byte at physical offset phys of the log in dir (files
// of fileSize bytes) with mask.
func flipByte(t *testing.T, dir string, fileSize, phys int64, mask byte) {
	t.Helper()
	path := filepath.Join(dir, segmentName(phys/fileSize*fileSize))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[phys%fileSize] ^= mask
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
