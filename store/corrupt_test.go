package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
)

// span is a byte range of the log that recovery judges as a whole: a
// record, or the 8-byte head of an end-of-file marker.
type span struct {
	phys, size int64
}

// TestCorruptLogRecovery damages real commit-log files at random places
// (byte flips, zeroed ranges, truncated files) and checks that recovery
// keeps every record before the damage, ends the log exactly at the first
// damaged record, leaves no consume-queue entry behind it, and that the
// store then takes new appends.
func TestCorruptLogRecovery(t *testing.T) {
	pristine := t.TempDir()
	d := mustOpen(t, testOptions(pristine))
	recs := appendN(t, d, 11, 0, 500)
	waitDispatched(t, d)
	files := d.log.Files()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].pos.PhysOffset < recs[j].pos.PhysOffset })
	end := recs[len(recs)-1].pos.End()
	spans := damageSpans(recs, files)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	outcomes := map[string]int{}
	for trial := range 40 {
		dir := t.TempDir()
		copyDir(t, pristine, dir)
		logDir := filepath.Join(dir, "commitlog")
		// Nor did the log's flushed mark: recovery takes every damage for a
		// torn tail and cuts it, which is what this test checks.
		if err := os.Remove(filepath.Join(logDir, commitlog.FlushedMarkName)); err != nil {
			t.Fatal(err)
		}
		before := readDir(t, logDir)
		kind, where := damage(t, rng, logDir, files, end)
		after := readDir(t, logDir)
		desc := fmt.Sprintf("trial %d: %s at %d", trial, kind, where)

		// First changed byte decides where the log must end.
		first := firstChange(files, before, after)
		want := end
		for _, s := range spans {
			if first < s.phys+s.size && first >= s.phys {
				want = s.phys
				break
			}
		}
		// Pretend the damage came with a crash before any checkpoint reached
		// the disk, so recovery scans (and so sees) the whole log.
		if err := os.Remove(filepath.Join(dir, checkpointName)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, abortName), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := Open(testOptions(dir))
		if err != nil {
			// A file cut to a size the log cannot map is refused as corrupt
			// with nothing changed, which loses nothing either.
			if kind != "truncate" || !errors.Is(err, commitlog.ErrCorrupt) {
				t.Fatalf("%s: Open: %v", desc, err)
			}
			if err := equalFiles(after, readDir(t, logDir)); err != nil {
				t.Fatalf("%s: refused open changed the log: %v", desc, err)
			}
			outcomes["truncate refused as corrupt"]++
			continue
		}
		if got := d.log.WriteOffset(); got != want {
			d.Close()
			t.Fatalf("%s: log recovered to %d, want %d (first changed byte %d)", desc, got, want, first)
		}
		if want < end {
			outcomes[kind+": log cut at the damage"]++
		} else {
			outcomes[kind+": harmless (marker filler or tail)"]++
		}
		next := map[consumequeue.ID]int64{}
		for _, a := range recs {
			id := consumequeue.ID{Topic: a.msg.Topic, Partition: a.msg.Partition}
			if a.pos.PhysOffset < want {
				checkReadable(t, d, a)
				next[id] = a.pos.QueueOffset + int64(a.msg.Count)
				continue
			}
			if q, ok := d.queues.Lookup(id.Topic, id.Partition); ok && q.MaxOffset() > a.pos.QueueOffset {
				d.Close()
				t.Fatalf("%s: queue %v still indexes offset %d of a lost record", desc, id, a.pos.QueueOffset)
			}
		}
		more := appendN(t, d, 12+uint64(trial), 0, 20)
		for _, a := range more {
			id := consumequeue.ID{Topic: a.msg.Topic, Partition: a.msg.Partition}
			if a.pos.QueueOffset != next[id] {
				d.Close()
				t.Fatalf("%s: new record of %v at offset %d, want %d", desc, id, a.pos.QueueOffset, next[id])
			}
			next[id] += int64(a.msg.Count)
		}
		waitDispatched(t, d)
		for _, a := range more {
			checkReadable(t, d, a)
		}
		if err := d.Close(); err != nil {
			t.Fatalf("%s: Close: %v", desc, err)
		}
		if err := Verify(dir); err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// damageSpans lists the records and end-of-file marker heads in log order.
func damageSpans(recs []appended, files []commitlog.FileInfo) []span {
	var out []span
	for i, a := range recs {
		out = append(out, span{a.pos.PhysOffset, int64(a.pos.Size)})
		if i+1 == len(recs) {
			break
		}
		nextPhys := recs[i+1].pos.PhysOffset
		for _, f := range files {
			fend := f.Base + f.Size
			if a.pos.End() < fend && nextPhys >= fend && fend-a.pos.End() >= commitlog.BlankSize {
				out = append(out, span{a.pos.End(), commitlog.BlankSize})
			}
		}
	}
	return out
}

// damage applies one random kind of damage somewhere in [files[0].Base, end).
func damage(t *testing.T, rng *rand.Rand, dir string, files []commitlog.FileInfo, end int64) (string, int64) {
	t.Helper()
	phys := files[0].Base + rng.Int64N(end-files[0].Base)
	var f commitlog.FileInfo
	for _, x := range files {
		if phys >= x.Base && phys < x.Base+x.Size {
			f = x
		}
	}
	path := filepath.Join(dir, f.Name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pos := phys - f.Base
	kind := []string{"flip", "zero", "truncate"}[rng.IntN(3)]
	switch kind {
	case "flip":
		b[pos] ^= 1 << rng.IntN(8)
	case "zero":
		clear(b[pos:min(int64(len(b)), pos+1+rng.Int64N(300))])
	case "truncate":
		if rng.IntN(2) == 0 {
			// Keep the size mappable: cut to a page boundary.
			pos -= pos % int64(os.Getpagesize())
			phys = f.Base + pos
		}
		b = b[:pos]
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return kind, phys
}

// firstChange is the physical offset of the first byte that differs; a
// missing byte (a truncated file) counts as changed.
func firstChange(files []commitlog.FileInfo, before, after map[string][]byte) int64 {
	for _, f := range files {
		x, y := before[f.Name], after[f.Name]
		for i := range x {
			if i >= len(y) || x[i] != y[i] {
				return f.Base + int64(i)
			}
		}
	}
	return 1 << 62
}

func readDir(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func copyDir(t testing.TB, from, to string) {
	t.Helper()
	for rel, b := range readDir(t, from) {
		p := filepath.Join(to, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
