package commitlog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const replicaFileSize = 8192

// sizedMessage is a message whose record is exactly size bytes.
func sizedMessage(partition int32, size int, fill byte) Message {
	body := bytes.Repeat([]byte{fill}, size-MinRecordSize-TopicIDSize-1)
	return Message{Topic: "t", Partition: partition, Body: body}
}

// replicaWorkload appends records that roll files in every way: a short
// tail with no marker (exactly 4 bytes left), an end-of-file marker, and
// a record that fills its file to the last byte.
func replicaWorkload(t *testing.T, l *Log) {
	t.Helper()
	var sizes []int
	sizes = append(sizes, 2047, 2047, 2047, 2047) // 8188: a 4-byte tail, no marker
	sizes = append(sizes, 3000, 3000, 3000)       // the third does not fit: marker
	sizes = append(sizes, 3000, 3000, 2192)       // fills a file exactly
	for i := 0; i < 40; i++ {
		sizes = append(sizes, 100+(i*577)%1900)
	}
	for i, n := range sizes {
		m := sizedMessage(int32(i%3), n, byte(i))
		if _, err := l.Append(&m); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
}

// replicate streams leader into follower with ReadRaw/AppendRaw chunks of
// at most max bytes until the follower has everything.
func replicate(t *testing.T, leader, follower *Log, max int) {
	t.Helper()
	var buf []byte
	for pos := follower.WriteOffset(); pos < leader.WriteOffset(); {
		chunk, next, err := leader.ReadRaw(buf[:0], pos, max)
		if err != nil {
			t.Fatalf("ReadRaw %d: %v", pos, err)
		}
		if _, err := follower.AppendRaw(pos, chunk); err != nil {
			t.Fatalf("AppendRaw %d (%d bytes): %v", pos, len(chunk), err)
		}
		pos, buf = next, chunk
	}
}

// sameLogs fails unless the two logs hold the same bytes up to their
// common write offset and the same queue counters.
func sameLogs(t *testing.T, a, b *Log) {
	t.Helper()
	if a.WriteOffset() != b.WriteOffset() {
		t.Fatalf("write offsets %d and %d", a.WriteOffset(), b.WriteOffset())
	}
	fa, fb := a.Files(), b.Files()
	if len(fa) != len(fb) {
		t.Fatalf("%d files and %d files", len(fa), len(fb))
	}
	for i := range fa {
		x, err := os.ReadFile(fa[i].Path)
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(fb[i].Path)
		if err != nil {
			t.Fatal(err)
		}
		if fa[i].Name != fb[i].Name || !bytes.Equal(x, y) {
			t.Fatalf("file %s differs from %s", fa[i].Name, fb[i].Name)
		}
	}
	for p := int32(0); p < 3; p++ {
		if x, y := a.NextQueueOffset("t", TopicID{}, p), b.NextQueueOffset("t", TopicID{}, p); x != y {
			t.Fatalf("partition %d: next queue offset %d and %d", p, x, y)
		}
	}
}

func TestReplicateByteIdentical(t *testing.T) {
	for _, max := range []int{1, 3000, 1 << 20} {
		leader := openLog(t, testOptions(t, "", replicaFileSize))
		follower := openLog(t, testOptions(t, "", replicaFileSize))
		replicaWorkload(t, leader)
		if len(leader.Files()) < 4 {
			t.Fatalf("workload made %d files, want at least 4", len(leader.Files()))
		}
		replicate(t, leader, follower, max)
		if err := leader.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := follower.Flush(); err != nil {
			t.Fatal(err)
		}
		sameLogs(t, leader, follower)
		// The follower's records read back, and it can lead: new appends
		// get the offsets the leader would have given.
		for pos := follower.MinOffset(); pos < follower.WriteOffset(); {
			v, err := follower.Read(pos)
			if err != nil {
				t.Fatalf("max %d: follower read %d: %v", max, pos, err)
			}
			pos = v.Next()
			v.Release()
		}
		m := sizedMessage(1, 200, 9)
		pl, err1 := leader.Append(&m)
		pf, err2 := follower.Append(&m)
		// The store timestamps are each append's own clock reading.
		pl.StoreTimestamp, pf.StoreTimestamp = 0, 0
		if err1 != nil || err2 != nil || pl != pf {
			t.Fatalf("max %d: next append: leader %+v %v, follower %+v %v", max, pl, err1, pf, err2)
		}
		leader.Close()
		follower.Close()
	}
}

func TestAppendRawRejects(t *testing.T) {
	leader := openLog(t, testOptions(t, "", replicaFileSize))
	defer leader.Close()
	for i := 0; i < 3; i++ {
		m := sizedMessage(0, 500, byte(i))
		if _, err := leader.Append(&m); err != nil {
			t.Fatal(err)
		}
	}
	good, _, err := leader.ReadRaw(nil, 0, 1<<20)
	if err != nil || len(good) != 1500 {
		t.Fatalf("ReadRaw: %d bytes, %v", len(good), err)
	}
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 1; return b }
	cases := []struct {
		name  string
		phys  int64
		chunk []byte
		want  error
	}{
		{"crc of the last record", 0, flip(1400), ErrCorrupt},
		{"size of the second record", 0, flip(502), ErrCorrupt},
		{"torn chunk", 0, good[:1499], ErrCorrupt},
		{"not at the write offset", 500, good[500:], ErrOutOfRange},
		{"record placed elsewhere", 0, good[500:], ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := openLog(t, testOptions(t, "", replicaFileSize))
			defer f.Close()
			if _, err := f.AppendRaw(c.phys, c.chunk); !errors.Is(err, c.want) {
				t.Fatalf("AppendRaw: %v, want %v", err, c.want)
			}
			if f.WriteOffset() != 0 || f.NextQueueOffset("t", TopicID{}, 0) != 0 {
				t.Fatalf("a rejected chunk moved the log: write offset %d, next offset %d", f.WriteOffset(), f.NextQueueOffset("t", TopicID{}, 0))
			}
			if _, err := f.AppendRaw(0, good); err != nil {
				t.Fatalf("the good chunk after a rejected one: %v", err)
			}
		})
	}
}

func TestTruncateAndFollow(t *testing.T) {
	opts := testOptions(t, "", replicaFileSize)
	leader := openLog(t, testOptions(t, "", replicaFileSize))
	defer leader.Close()
	old := openLog(t, opts)
	replicaWorkload(t, leader)
	replicate(t, leader, old, 1<<20)

	// The old log, leader of a previous epoch, wrote a tail of its own
	// that spans files; the new leader wrote a different one.
	common := old.WriteOffset()
	for i := 0; i < 30; i++ {
		m := sizedMessage(int32(i%3), 1500, 0xEE)
		if _, err := old.Append(&m); err != nil {
			t.Fatal(err)
		}
		m = sizedMessage(int32(i%2), 700, 0x11)
		if _, err := leader.Append(&m); err != nil {
			t.Fatal(err)
		}
	}
	if len(old.Files()) <= len(leader.Files())-3 {
		t.Fatalf("the divergent tail should span files")
	}
	if err := old.Truncate(common + 1); err == nil {
		t.Fatal("Truncate inside a record succeeded")
	}
	if err := old.Truncate(old.WriteOffset() + 1); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Truncate past the end: %v", err)
	}
	if err := old.Truncate(common); err != nil {
		t.Fatalf("Truncate: %v", err)
	}
	if old.WriteOffset() != common || old.FlushedOffset() > common {
		t.Fatalf("after Truncate: write %d flushed %d, want %d", old.WriteOffset(), old.FlushedOffset(), common)
	}
	replicate(t, leader, old, 4096)
	sameLogs(t, leader, old)

	// Nothing of the cut tail comes back after a restart.
	old.Close()
	again, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	end, err := again.Recover(0, func(r *Record) error {
		if len(r.Body) > 0 && r.Body[0] == 0xEE {
			t.Fatalf("a truncated record at %d came back", r.PhysOffset)
		}
		return nil
	})
	if err != nil || end != leader.WriteOffset() {
		t.Fatalf("Recover: end %d, %v; want %d", end, err, leader.WriteOffset())
	}
	// Closed, the directory holds the leader's files and nothing else: no
	// file allocated past the old end survives the truncation.
	again.Close()
	names, err := filepath.Glob(filepath.Join(opts.Dir, "[0-9]*"))
	if err != nil {
		t.Fatal(err)
	}
	lf := leader.Files()
	if len(names) != len(lf) || filepath.Base(names[len(names)-1]) != lf[len(lf)-1].Name {
		t.Fatalf("files left: %v, leader has %d up to %s", names, len(lf), lf[len(lf)-1].Name)
	}
}

func TestTruncateWithinFileResetsOffsets(t *testing.T) {
	l := openLog(t, testOptions(t, "", replicaFileSize))
	defer l.Close()
	var ps []Position
	for i := 0; i < 6; i++ {
		m := sizedMessage(int32(i%2), 300, byte(i))
		p, err := l.Append(&m)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if err := l.Truncate(ps[3].PhysOffset); err != nil {
		t.Fatal(err)
	}
	// Records 3 (partition 1, offset 1) and 4, 5 are gone.
	if got := l.NextQueueOffset("t", TopicID{}, 0); got != 2 {
		t.Fatalf("partition 0 next offset %d, want 2", got)
	}
	if got := l.NextQueueOffset("t", TopicID{}, 1); got != 1 {
		t.Fatalf("partition 1 next offset %d, want 1", got)
	}
	if _, err := l.Read(ps[3].PhysOffset); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("reading a truncated record: %v", err)
	}
	m := sizedMessage(1, 300, 7)
	p, err := l.Append(&m)
	if err != nil || p.PhysOffset != ps[3].PhysOffset || p.QueueOffset != 1 {
		t.Fatalf("append after Truncate: %+v, %v", p, err)
	}
}

func TestEpochs(t *testing.T) {
	dir := t.TempDir()
	e, err := OpenEpochs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Latest(); ok {
		t.Fatal("a new epoch list is not empty")
	}
	for _, x := range []EpochStart{{1, 0}, {1, 50}, {3, 100}, {4, 100}, {7, 250}} {
		if err := e.Assign(x.Epoch, x.Start); err != nil {
			t.Fatalf("Assign %v: %v", x, err)
		}
	}
	for _, x := range []EpochStart{{6, 300}, {8, 200}} {
		if err := e.Assign(x.Epoch, x.Start); !errors.Is(err, ErrEpoch) {
			t.Fatalf("Assign %v: %v, want ErrEpoch", x, err)
		}
	}
	e, err = OpenEpochs(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []EpochStart{{1, 0}, {3, 100}, {4, 100}, {7, 250}}
	if got := e.List(); len(got) != len(want) {
		t.Fatalf("after reopen: %v, want %v", got, want)
	}
	for _, c := range []struct{ ask, known, end int64 }{
		{0, -1, -1},
		{1, 1, 100},
		{2, 1, 100},
		{3, 3, 100},
		{4, 4, 250},
		{6, 4, 250},
		{7, 7, 400},
		{9, 7, 400},
	} {
		if known, end := e.EndOffset(c.ask, 400); known != c.known || end != c.end {
			t.Errorf("EndOffset(%d) = %d, %d; want %d, %d", c.ask, known, end, c.known, c.end)
		}
	}
	if err := e.TruncateFrom(100); err != nil {
		t.Fatal(err)
	}
	if last, _ := e.Latest(); last != (EpochStart{1, 0}) {
		t.Fatalf("after TruncateFrom(100): latest %v", last)
	}

	b, err := os.ReadFile(filepath.Join(dir, EpochFileName))
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		bad := bytes.Clone(b)
		bad[i] ^= 0x40
		if err := os.WriteFile(filepath.Join(dir, EpochFileName), bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenEpochs(dir); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d flipped: %v, want ErrCorrupt", i, err)
		}
	}
}

func TestRetentionFloorsLowestWins(t *testing.T) {
	opts := testOptions(t, "", replicaFileSize)
	opts.RetentionBytes = 1
	l := openLog(t, opts)
	defer l.Close()
	for len(l.Files()) < 5 {
		m := sizedMessage(0, 2000, 1)
		if _, err := l.Append(&m); err != nil {
			t.Fatal(err)
		}
	}
	files := l.Files()
	removeHigh := l.AddRetentionFloor(func() int64 { return files[3].Base })
	removeLow := l.AddRetentionFloor(func() int64 { return files[1].Base })
	if n := l.retain(time.Now()); n != 1 {
		t.Fatalf("%d files deleted under floors at files 1 and 3, want 1", n)
	}
	removeLow()
	if n := l.retain(time.Now()); n != 2 {
		t.Fatalf("%d files deleted under the floor at file 3, want 2", n)
	}
	removeHigh()
	if n := l.retain(time.Now()); n != 1 {
		t.Fatalf("%d files deleted with no floor, want 1 (all but the last)", n)
	}
}

func TestRestart(t *testing.T) {
	opts := testOptions(t, "", replicaFileSize)
	l := openLog(t, opts)
	replicaWorkload(t, l)
	at := int64(10 * replicaFileSize)
	if err := l.Restart(at); err != nil {
		t.Fatal(err)
	}
	if l.MinOffset() != at || l.WriteOffset() != at || len(l.Files()) != 1 {
		t.Fatalf("after Restart: min %d write %d files %d", l.MinOffset(), l.WriteOffset(), len(l.Files()))
	}
	m := sizedMessage(0, 300, 1)
	p, err := l.Append(&m)
	if err != nil || p.PhysOffset != at {
		t.Fatalf("append after Restart: %+v %v", p, err)
	}
	l.Close()
	again, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if end, err := again.Recover(0, nil); err != nil || end != p.End() || again.MinOffset() != at {
		t.Fatalf("reopened: end %d min %d, %v", end, again.MinOffset(), err)
	}
}

// A crash after Truncate cut below the flushed mark restarts: the mark
// went back with the cut, so the shorter log is not taken for damage.
func TestTruncateLowersFlushedMark(t *testing.T) {
	l := openLog(t, testOptions(t, "", replicaFileSize))
	defer l.Close()
	replicaWorkload(t, l)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	to := l.Files()[1].Base
	if err := l.Truncate(to); err != nil {
		t.Fatal(err)
	}
	m := sizedMessage(0, 300, 5)
	if _, err := l.Append(&m); err != nil {
		t.Fatal(err)
	}
	// A process crash now: the files and the mark as the page cache has them.
	crashed := t.TempDir()
	ents, err := os.ReadDir(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(l.Dir(), e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // a file the preallocator was renaming: a crash may lose it
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if mark, err := ReadFlushedMark(crashed); err != nil || mark > to {
		t.Fatalf("flushed mark %d after Truncate to %d (%v)", mark, to, err)
	}
	again, err := Open(testOptions(t, crashed, replicaFileSize))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if end, err := again.Recover(0, nil); err != nil || end < to {
		t.Fatalf("recover after a crash past Truncate: end %d, %v", end, err)
	}
}
