package commitlog

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/fileops/fileopstest"
)

// needed is one sync a step relies on: calls of op whose path matches.
type needed struct {
	op    fileopstest.Op
	match func(path string) bool
}

func (n needed) String() string { return string(n.op) }

func pathEnds(suffix string) func(string) bool {
	return func(p string) bool { return strings.HasSuffix(p, suffix) }
}

// powerCutStep is a step of the log that must be durable once it returns.
// prepare (real file calls) builds the directory the step starts from; run
// takes the step with ops and returns the check an image of what the syncs
// made durable must pass.
type powerCutStep struct {
	name    string
	prepare func(t *testing.T, dir string)
	run     func(t *testing.T, dir string, ops FileOps) (check func(img string) error)
	needs   []needed
}

// TestPowerCutSteps rebuilds the log's directory as a power cut right after
// each step leaves it (fileopstest.Recorder), and checks the step held. Then
// it drops each sync the step needs, one at a time, and the same check must
// fail: a sync removed from the code, or taken outside the fileops seam
// where the recorder cannot see it, fails this test.
func TestPowerCutSteps(t *testing.T) {
	const fileSize = 64 << 10
	for _, st := range []powerCutStep{
		{
			name: "leader epochs",
			run: func(t *testing.T, dir string, ops FileOps) func(string) error {
				e, err := openEpochs(dir, ops)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range []EpochStart{{1, 0}, {2, 100}} {
					if err := e.Assign(a.Epoch, a.Start); err != nil {
						t.Fatal(err)
					}
				}
				return func(img string) error {
					e, err := OpenEpochs(img)
					if err != nil {
						return err
					}
					if got, want := e.List(), []EpochStart{{1, 0}, {2, 100}}; !slices.Equal(got, want) {
						return fmt.Errorf("epochs %v, want %v", got, want)
					}
					return nil
				}
			},
			needs: []needed{
				{fileopstest.Fdatasync, pathEnds(EpochFileName + fileops.TmpSuffix)},
				{fileopstest.SyncDir, func(string) bool { return true }},
			},
		},
		{
			// Recovery with RecoverTruncate cuts the log at damage below
			// the flushed mark: the mark it rewrites and the files it
			// removes must be on disk, or the next start refuses the log
			// (old mark) or finds the files again. (The tail it zeroes
			// cannot matter here: the damage still ends the scan.)
			name: "recovery cut and flushed mark",
			prepare: func(t *testing.T, dir string) {
				opts := testOptions(t, dir, fileSize)
				opts.FlushMode = FlushSync
				l := openLog(t, opts)
				var pos []Position
				for i := 0; i < 3*fitInFile(fileSize); i++ {
					p, _, err := appendDurable(t, l, i)
					if err != nil {
						t.Fatal(err)
					}
					pos = append(pos, p)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				flipByte(t, dir, fileSize, pos[5].PhysOffset+20, 0xff)
			},
			run: func(t *testing.T, dir string, ops FileOps) func(string) error {
				opts := testOptions(t, dir, fileSize)
				opts.RecoverTruncate = true
				opts.FS = ops
				before := logFiles(t, dir)
				l := openLog(t, opts)
				end := l.WriteOffset()
				removed := gone(before, logFiles(t, dir))
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if len(removed) == 0 {
					t.Fatal("recovery removed no file")
				}
				return func(img string) error {
					if back := slices.DeleteFunc(logFiles(t, img), func(f string) bool { return !slices.Contains(removed, f) }); len(back) > 0 {
						return fmt.Errorf("files %v, removed by recovery, are back after the cut", back)
					}
					c, err := Open(testOptions(t, img, fileSize))
					if err != nil {
						return err
					}
					defer c.Close()
					got, err := c.Recover(0, nil)
					if err == nil && got != end {
						err = fmt.Errorf("recovered to %d, the cut was at %d", got, end)
					}
					return err
				}
			},
			needs: []needed{
				{fileopstest.Fdatasync, pathEnds(markName)},
				{fileopstest.SyncDir, func(string) bool { return true }},
			},
		},
		{
			name: "retention",
			prepare: func(t *testing.T, dir string) {
				opts := testOptions(t, dir, fileSize)
				l := openLog(t, opts)
				for i := 0; i < 4*fitInFile(fileSize); i++ {
					m := testMessage(i, 1000)
					if _, err := l.Append(&m); err != nil {
						t.Fatal(err)
					}
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			},
			run: func(t *testing.T, dir string, ops FileOps) func(string) error {
				opts := testOptions(t, dir, fileSize)
				opts.RetentionBytes = 1
				opts.FS = ops
				l := openLog(t, opts)
				before := logFiles(t, dir)
				if n := l.retain(time.Now()); n == 0 {
					t.Fatal("retention deleted nothing")
				}
				removed := gone(before, logFiles(t, dir))
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				return func(img string) error {
					if back := slices.DeleteFunc(logFiles(t, img), func(f string) bool { return !slices.Contains(removed, f) }); len(back) > 0 {
						return fmt.Errorf("files %v, deleted by retention, are back after the cut", back)
					}
					return nil
				}
			},
			needs: []needed{{fileopstest.SyncDir, func(string) bool { return true }}},
		},
	} {
		t.Run(st.name, func(t *testing.T) {
			if err := cutAfter(t, st, nil); err != nil {
				t.Fatalf("with every sync: %v", err)
			}
			for _, n := range st.needs {
				if err := cutAfter(t, st, &n); err == nil {
					t.Errorf("without %s the step still survives the cut: the test cannot see that sync", n)
				} else {
					t.Logf("without %s: %v", n, err)
				}
			}
		})
	}
}

// cutAfter prepares a directory, makes it durable as it is, runs the step
// (without the sync skip names, if any), and checks an image of what the
// step made durable.
func cutAfter(t *testing.T, st powerCutStep, skip *needed) error {
	t.Helper()
	dir := t.TempDir()
	if st.prepare != nil {
		st.prepare(t, dir)
	}
	rec := fileopstest.NewRecorder(fileops.OS{}, dir)
	if err := rec.Syncfs(dir); err != nil {
		t.Fatal(err)
	}
	faults := fileopstest.NewFaults(rec)
	if skip != nil {
		faults.Skip(skip.op, skip.match)
	}
	check := st.run(t, dir, faults)
	img := t.TempDir()
	if err := rec.Image(img, false, 1); err != nil {
		t.Fatal(err)
	}
	return check(img)
}

// gone lists the names of before missing from after.
func gone(before, after []string) []string {
	return slices.DeleteFunc(slices.Clone(before), func(f string) bool { return slices.Contains(after, f) })
}

// logFiles lists the commit-log files in dir.
func logFiles(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		if _, ok := fileops.ParseOffsetName(de.Name()); ok {
			names = append(names, de.Name())
		}
	}
	return names
}
