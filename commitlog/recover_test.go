package commitlog

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/unilog/unilog/internal/fileops"
)

// damageMessage is testMessage with a body of non-zero bytes, so that cutting
// any bytes off the end of its record is always detectable.
func damageMessage(i, bodySize int) Message {
	m := testMessage(i, bodySize)
	for j := range m.Body {
		m.Body[j] |= 1
	}
	return m
}

type pristineLog struct {
	dir      string
	fileSize int64
	msgs     []Message
	pos      []Position
	end      int64
}

// writePristine writes a closed log of a few files with records of mixed
// sizes (so file tails get markers and short zero tails).
func writePristine(t *testing.T, fileSize int64, n int) *pristineLog {
	t.Helper()
	p := &pristineLog{dir: t.TempDir(), fileSize: fileSize}
	l := openLog(t, testOptions(t, p.dir, fileSize))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i++ {
		m := damageMessage(i, 1+rng.IntN(700))
		pos, err := l.Append(&m)
		if err != nil {
			t.Fatal(err)
		}
		p.msgs = append(p.msgs, m)
		p.pos = append(p.pos, pos)
	}
	p.end = l.WriteOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// copyTo copies the log's files but not its flushed mark, so that the
// damage a test makes is after the mark, a torn tail that recovery cuts
// (TestRecoverRespectsFlushedMark sets the mark itself).
func (p *pristineLog) copyTo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ents, err := os.ReadDir(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == markName {
			continue
		}
		b, err := os.ReadFile(filepath.Join(p.dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// expectAfterDamage returns how many records survive damage at physical
// offset off and where recovery must end.
func (p *pristineLog) expectAfterDamage(off int64) (keep int, end int64) {
	for i, pos := range p.pos {
		if off >= pos.PhysOffset && off < pos.End() {
			return i, pos.PhysOffset
		}
		if off < pos.PhysOffset {
			// Between the previous record and this one: a file tail. Only
			// the marker's own 8 bytes matter.
			prevEnd := int64(0)
			if i > 0 {
				prevEnd = p.pos[i-1].End()
			}
			fileEnd := (prevEnd/p.fileSize + 1) * p.fileSize
			if fileEnd-prevEnd >= BlankSize && off < prevEnd+BlankSize {
				return i, prevEnd
			}
			return len(p.pos), p.end
		}
	}
	return len(p.pos), p.end
}

// recoverAll opens dir and recovers it from 0, returning the records.
func recoverAll(t *testing.T, opts Options) (*Log, []Message, []Position, int64) {
	t.Helper()
	l, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	var msgs []Message
	var pos []Position
	end, err := l.Recover(0, func(r *Record) error {
		m := Message{Topic: r.Topic, Partition: r.Partition, Count: r.Count, Flags: r.Flags, ProducerTimestamp: r.ProducerTimestamp,
			Key: append([]byte(nil), r.Key...), Body: append([]byte(nil), r.Body...)}
		if r.Key == nil {
			m.Key = nil
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, Header{Key: h.Key, Value: append([]byte(nil), h.Value...)})
		}
		msgs = append(msgs, m)
		pos = append(pos, r.Position())
		return nil
	})
	if err != nil {
		l.Close()
		t.Fatalf("Recover: %v", err)
	}
	return l, msgs, pos, end
}

func (p *pristineLog) checkPrefix(t *testing.T, what string, got []Message, gotPos []Position, keep int) {
	t.Helper()
	if len(got) != keep {
		t.Fatalf("%s: recovered %d records, want the %d before the damage", what, len(got), keep)
	}
	for i := range got {
		rec := Record{Topic: got[i].Topic, Partition: got[i].Partition, Count: got[i].Count, Flags: got[i].Flags,
			ProducerTimestamp: got[i].ProducerTimestamp, Key: got[i].Key, Headers: got[i].Headers, Body: got[i].Body}
		if d := sameMessage(&rec, &p.msgs[i]); d != "" || gotPos[i] != p.pos[i] {
			t.Fatalf("%s: record %d: %s (position %+v, want %+v)", what, i, d, gotPos[i], p.pos[i])
		}
	}
}

// afterRecovery appends the message that followed the kept prefix, at the
// same size, so that without zeroing the old next record would line up
// behind it and come back; then reopens and checks exactly keep+1 records.
func (p *pristineLog) afterRecovery(t *testing.T, l *Log, opts Options, keep int) {
	t.Helper()
	next := damageMessage(99999, 10)
	if keep < len(p.msgs) {
		next = p.msgs[keep]
	}
	if _, err := l.Append(&next); err != nil {
		t.Fatalf("append after recovery: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, got, gotPos, _ := recoverAll(t, opts)
	defer l2.Close()
	if len(got) != keep+1 {
		t.Fatalf("after a new append and a reopen: %d records, want %d (a stale record came back?)", len(got), keep+1)
	}
	p.checkPrefix(t, "reopen", got[:keep], gotPos[:keep], keep)
}

func TestRecoverAfterRandomCorruption(t *testing.T) {
	const fileSize = 16 << 10
	p := writePristine(t, fileSize, 150)
	rng := rand.New(rand.NewPCG(7, 8))
	for iter := 0; iter < 40; iter++ {
		off := rng.Int64N(p.end + 100)
		run := 1 + rng.IntN(16)
		t.Run(fmt.Sprintf("%d_at_%d_x%d", iter, off, run), func(t *testing.T) {
			dir := p.copyTo(t)
			path := filepath.Join(dir, segmentName(off/fileSize*fileSize))
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			pos := off % fileSize
			for k := 0; k < run && pos+int64(k) < fileSize; k++ {
				b[pos+int64(k)] ^= byte(1 + rng.IntN(255))
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			keep, wantEnd := p.expectAfterDamage(off)
			opts := testOptions(t, dir, fileSize)
			l, got, gotPos, end := recoverAll(t, opts)
			p.checkPrefix(t, "recover", got, gotPos, keep)
			if end != wantEnd {
				t.Fatalf("Recover ended at %d, want %d", end, wantEnd)
			}
			if l.WriteOffset() != end || l.FlushedOffset() != end {
				t.Fatalf("write offset %d flushed %d after recovering to %d", l.WriteOffset(), l.FlushedOffset(), end)
			}
			p.afterRecovery(t, l, opts, keep)
		})
	}
}

func TestRecoverAfterTruncation(t *testing.T) {
	const fileSize = 16 << 10
	p := writePristine(t, fileSize, 150)
	lastBase := (p.end - 1) / fileSize * fileSize
	rng := rand.New(rand.NewPCG(9, 10))
	for iter := 0; iter < 25; iter++ {
		cut := rng.Int64N(p.end - lastBase + 1)
		if iter == 0 {
			cut = 0
		}
		t.Run(fmt.Sprintf("%d_cut_%d", iter, cut), func(t *testing.T) {
			dir := p.copyTo(t)
			if err := os.Truncate(filepath.Join(dir, segmentName(lastBase)), cut); err != nil {
				t.Fatal(err)
			}
			keep := 0
			for keep < len(p.pos) && p.pos[keep].End() <= lastBase+cut {
				keep++
			}
			opts := testOptions(t, dir, fileSize)
			l, got, gotPos, end := recoverAll(t, opts)
			p.checkPrefix(t, "recover", got, gotPos, keep)
			if keep < len(p.pos) && end != max(p.pos[keep].PhysOffset, lastBase) {
				t.Fatalf("Recover ended at %d, want %d", end, p.pos[keep].PhysOffset)
			}
			p.afterRecovery(t, l, opts, keep)
		})
	}
}

func TestOpenRefusesCutMiddleFile(t *testing.T) {
	const fileSize = 16 << 10
	p := writePristine(t, fileSize, 150)
	dir := p.copyTo(t)
	path := filepath.Join(dir, segmentName(0))
	if err := os.Truncate(path, 5000); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(testOptions(t, dir, fileSize)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with a cut middle file: %v, want ErrCorrupt", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 5000 {
		t.Fatalf("Open modified the cut file: %v %v", fi, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(testOptions(t, dir, fileSize)); err != nil {
		t.Fatalf("chain starting at a later file: %v", err)
	}
}

func TestRecoverFrom(t *testing.T) {
	const fileSize = 16 << 10
	p := writePristine(t, fileSize, 150)
	// A marker position: the end of the last record of the first file.
	marker := 0
	for p.pos[marker+1].PhysOffset < fileSize {
		marker++
	}
	tests := []struct {
		name  string
		from  int64
		first int // index of the first record fn must see
	}{
		{"start", 0, 0},
		{"below min clamps", -5, 0},
		{"middle", p.pos[70].PhysOffset, 70},
		{"end-of-file marker", p.pos[marker].End(), marker + 1},
		{"end", p.end, len(p.pos)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Open(testOptions(t, p.copyTo(t), fileSize))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			next := tt.first
			end, err := l.Recover(tt.from, func(r *Record) error {
				if r.Position() != p.pos[next] {
					return fmt.Errorf("record %+v, want %+v", r.Position(), p.pos[next])
				}
				next++
				return nil
			})
			if err != nil || end != p.end || next != len(p.pos) {
				t.Fatalf("Recover = %d, %v, up to record %d; want %d, all %d", end, err, next, p.end, len(p.pos))
			}
		})
	}
	t.Run("beyond the end", func(t *testing.T) {
		l, err := Open(testOptions(t, p.copyTo(t), fileSize))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := l.Recover(1<<40, nil); !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("Recover beyond the end: %v", err)
		}
	})
	t.Run("callback error changes nothing", func(t *testing.T) {
		dir := p.copyTo(t)
		l, err := Open(testOptions(t, dir, fileSize))
		if err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		n := 0
		at, err := l.Recover(0, func(*Record) error {
			if n++; n == 10 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) || at != p.pos[9].PhysOffset {
			t.Fatalf("Recover = %d, %v; want boom at %d", at, err, p.pos[9].PhysOffset)
		}
		if _, err := l.Append(&p.msgs[0]); !errors.Is(err, ErrNotRecovered) {
			t.Fatalf("append after a failed Recover: %v", err)
		}
		l.Close()
		l2, got, _, end := recoverAll(t, testOptions(t, dir, fileSize))
		defer l2.Close()
		if end != p.end || len(got) != len(p.msgs) {
			t.Fatalf("after a failed Recover: %d records to %d, want %d to %d", len(got), end, len(p.msgs), p.end)
		}
	})
}

func TestRecoverRemovesLaterFilesAndTmp(t *testing.T) {
	const fileSize = 16 << 10
	p := writePristine(t, fileSize, 150)
	dir := p.copyTo(t)
	// Wipe the first record of the second file: everything from there on goes.
	second := filepath.Join(dir, segmentName(fileSize))
	f, err := os.OpenFile(second, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 100), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tmp := filepath.Join(dir, segmentName(99*fileSize)+tmpSuffix)
	if err := os.WriteFile(tmp, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, _, _, end := recoverAll(t, testOptions(t, dir, fileSize))
	defer l.Close()
	if end != fileSize {
		t.Fatalf("end %d, want %d", end, fileSize)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("leftover %s: %v", tmp, err)
	}
	// The third file was removed; the preallocator may have made a new,
	// empty one since, which is not part of the chain until it is entered.
	if files := l.Files(); len(files) != 2 || files[1].Base != fileSize {
		t.Fatalf("files %+v, want the first two", files)
	}
}

// TestRecoverWipesStaleRecords corrupts one record in the middle of a file:
// recovery must end there and clear the valid records behind it, so that
// neither a reopen nor an append of a different size brings one back.
func TestRecoverWipesStaleRecords(t *testing.T) {
	const fileSize = 64 << 10
	p := writePristine(t, fileSize, 40) // all in the first file
	if p.end > fileSize {
		t.Fatalf("pristine log spans %d bytes, want one file", p.end)
	}
	dir := p.copyTo(t)
	path := filepath.Join(dir, segmentName(0))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const bad = 10
	b[p.pos[bad].PhysOffset+offPhys+3] ^= 0x40 // CRC mismatch; the size still spans the record
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t, dir, fileSize)
	for round := 0; round < 2; round++ {
		l, got, gotPos, end := recoverAll(t, opts)
		p.checkPrefix(t, fmt.Sprintf("round %d", round), got, gotPos, bad)
		if end != p.pos[bad].PhysOffset {
			t.Fatalf("round %d: Recover ended at %d, want %d", round, end, p.pos[bad].PhysOffset)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.IndexFunc(b[end:], func(r rune) bool { return r != 0 }); i >= 0 {
			t.Fatalf("round %d: byte %d after the end %d is not zero", round, end+int64(i), end)
		}
	}
	// A shorter record than the corrupt one: the old layout would resume
	// behind it if anything stale were left.
	l, _, _, _ := recoverAll(t, opts)
	m := damageMessage(7777, 3)
	if _, err := l.Append(&m); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, got, _, _ := recoverAll(t, opts)
	defer l.Close()
	if len(got) != bad+1 {
		t.Fatalf("after an append and a reopen: %d records, want %d", len(got), bad+1)
	}
}

func TestZeroFrom(t *testing.T) {
	page := os.Getpagesize()
	const pages = 8
	tests := []struct {
		name    string
		dirty   []int // byte offsets set non-zero before zeroFrom
		from    int
		cleared int64
	}{
		{"already zero", nil, 100, 0},
		{"already zero from a page boundary", nil, 2 * page, 0},
		{"stale bytes in the first partial page", []int{150}, 100, int64(page - 100)},
		{"bytes before from are kept", []int{50, 150}, 100, int64(page - 100)},
		{"scattered pages", []int{3*page + 1, 5 * page, 5*page + 7, 8*page - 1}, 100, 3 * int64(page)},
		{"a run of pages", []int{2 * page, 3 * page, 4*page + 5}, 2 * page, 3 * int64(page)},
		// The pages between are fallocated and never written: holes to
		// SEEK_DATA (dataFrom), skipped, and the written one still found.
		{"a page after an unwritten stretch", []int{7*page + 5}, page, int64(page)},
		{"the last byte", []int{8*page - 1}, 0, int64(page)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mapped atomic.Int64
			s, err := createSegment(fileops.OS{}, t.TempDir(), 0, int64(pages*page), &mapped)
			if err != nil {
				t.Fatal(err)
			}
			defer s.release()
			for _, off := range tt.dirty {
				if _, err := s.writeAt([]byte{0xAA}, int64(off)); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := s.zeroFrom(int64(tt.from)); err != nil || got != tt.cleared {
				t.Fatalf("cleared %d bytes (%v), want %d", got, err, tt.cleared)
			}
			for i, c := range s.ro {
				want := byte(0)
				if i < tt.from && slices.Contains(tt.dirty, i) {
					want = 0xAA
				}
				if c != want {
					t.Fatalf("byte %d = %#x, want %#x", i, c, want)
				}
			}
		})
	}
}
