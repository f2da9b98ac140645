package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/fileops"
)

// TestRecoveryRefusesDamageBeforeFlushedMark corrupts and cuts real
// commit-log files of a crashed data directory before and after the
// checkpoint's flushed mark, with and without RecoverTruncate. Damage before
// the mark refuses to open, naming the file and offset, and changes no
// stored byte; with RecoverTruncate, or after the mark, the log is cut at
// the damage and the directory then verifies clean. Inspect points at the
// damage either way.
func TestRecoveryRefusesDamageBeforeFlushedMark(t *testing.T) {
	pristine := t.TempDir()
	d := mustOpen(t, testOptions(pristine))
	recs := appendN(t, d, 24, 0, 400)
	waitDispatched(t, d)
	files := d.log.Files()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].pos.PhysOffset < recs[j].pos.PhysOffset })
	last := files[len(files)-1]
	// The mark is a record boundary in the last file with records on both sides.
	first := sort.Search(len(recs), func(i int) bool { return recs[i].pos.PhysOffset >= last.Base })
	if len(recs)-first < 6 {
		t.Fatalf("test set-up: %d records in the last file, want 6", len(recs)-first)
	}
	markAt := first + (len(recs)-first)/2
	mark := recs[markAt].pos.PhysOffset
	early, before, after := recs[len(recs)/4].pos, recs[markAt-1].pos, recs[markAt+1].pos

	fileOf := func(phys int64) commitlog.FileInfo {
		for _, f := range files {
			if phys >= f.Base && phys < f.Base+f.Size {
				return f
			}
		}
		t.Fatalf("no file holds %d", phys)
		return commitlog.FileInfo{}
	}
	flip := func(phys int64) func(dir string) {
		return func(dir string) {
			f := fileOf(phys)
			path := filepath.Join(dir, "commitlog", f.Name)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[phys-f.Base] ^= 0xa5
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cut := func(phys int64) func(dir string) {
		return func(dir string) {
			if err := os.Truncate(filepath.Join(dir, "commitlog", last.Name), phys-last.Base); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name     string
		damage   func(dir string)
		at       commitlog.Position // the first record lost
		clean    bool               // the last run stopped cleanly: checkpoint at the end, no abort file
		truncate bool
		refused  bool
	}{
		{name: "flip in an early file", damage: flip(early.PhysOffset + 50), at: early, refused: true},
		{name: "flip in an early file, truncate", damage: flip(early.PhysOffset + 50), at: early, truncate: true},
		{name: "flip before the mark", damage: flip(before.PhysOffset + 40), at: before, refused: true},
		{name: "flip before the mark, truncate", damage: flip(before.PhysOffset + 40), at: before, truncate: true},
		{name: "cut before the mark", damage: cut(before.PhysOffset + 9), at: before, refused: true},
		{name: "cut before the mark, truncate", damage: cut(before.PhysOffset + 9), at: before, truncate: true},
		{name: "torn tail after the mark", damage: flip(after.PhysOffset + 40), at: after},
		{name: "cut after the mark", damage: cut(after.PhysOffset + 9), at: after},
		{name: "clean stop, cut before the end", damage: cut(before.PhysOffset + 9), at: before, clean: true, refused: true},
		{name: "clean stop, cut before the end, truncate", damage: cut(before.PhysOffset + 9), at: before, clean: true, truncate: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, pristine, dir)
			if !tc.clean {
				// A crash after a checkpoint that saw the log flushed to mark
				// but dispatched only to the start: recovery scans all of it.
				// The log's own mark, written after every flush without an
				// fsync, did not reach the disk after that.
				if err := writeCheckpoint(fileops.OS{}, dir, Checkpoint{CommitLogFlushed: mark, Time: time.Now()}); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(filepath.Join(dir, "commitlog", commitlog.FlushedMarkName)); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, abortName), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tc.damage(dir)
			logDir := filepath.Join(dir, "commitlog")
			damaged := readDir(t, logDir)

			rep, err := Inspect(dir, InspectOptions{Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			if !reportNames(rep, fileOf(tc.at.PhysOffset).Name, tc.at.PhysOffset) {
				t.Fatalf("inspect does not point at %s offset %d: %q", fileOf(tc.at.PhysOffset).Name, tc.at.PhysOffset, rep.Problems)
			}
			beforeMark := tc.at.PhysOffset < rep.FlushedMark
			if said := strings.Contains(strings.Join(rep.Problems, "\n"), "before the flushed mark"); said != beforeMark {
				t.Fatalf("damage at %d, flushed mark %d: inspect says before the mark: %v: %q", tc.at.PhysOffset, rep.FlushedMark, said, rep.Problems)
			}

			opts := testOptions(dir)
			opts.CommitLog.RecoverTruncate = tc.truncate
			d, err := Open(opts)
			if tc.refused {
				if err == nil {
					end := d.log.WriteOffset()
					d.Close()
					t.Fatalf("opened with damage at %d before the flushed mark %d: the log now ends at %d", tc.at.PhysOffset, mark, end)
				}
				if !errors.Is(err, commitlog.ErrDamaged) || !strings.Contains(err.Error(), fileOf(tc.at.PhysOffset).Name) {
					t.Fatalf("Open: %v; want ErrDamaged naming %s", err, fileOf(tc.at.PhysOffset).Name)
				}
				if err := equalFiles(zeroExtended(damaged, readDir(t, logDir)), readDir(t, logDir)); err != nil {
					t.Fatalf("a refused open changed the commit log: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if got := d.log.WriteOffset(); got != tc.at.PhysOffset {
				d.Close()
				t.Fatalf("log recovered to %d, want %d", got, tc.at.PhysOffset)
			}
			for _, a := range recs {
				if a.pos.PhysOffset < tc.at.PhysOffset {
					checkReadable(t, d, a)
				}
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if err := Verify(dir); err != nil {
				t.Fatalf("after recovery: %v", err)
			}
		})
	}
}

// reportNames reports whether one of rep's problems names the file and the offset.
func reportNames(rep *Report, file string, phys int64) bool {
	off := " " + strconv.FormatInt(phys, 10)
	for _, p := range rep.Problems {
		if strings.Contains(p, file) && strings.Contains(p, off) {
			return true
		}
	}
	return false
}

// zeroExtended returns was with each file that now holds the same bytes
// followed by zeros replaced by its new content: commitlog.Open extends a
// cut last file with zeros to a whole page, which adds and loses nothing.
func zeroExtended(was, now map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for name, b := range was {
		out[name] = b
		if n, ok := now[name]; ok && len(n) > len(b) && bytes.Equal(n[:len(b)], b) && !bytes.ContainsFunc(n[len(b):], func(r rune) bool { return r != 0 }) {
			out[name] = n
		}
	}
	return out
}
