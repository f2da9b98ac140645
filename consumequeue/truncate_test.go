package consumequeue

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// slotAt returns the path of the file holding offset off and the byte
// position of its slot.
func slotAt(dir string, epf int, off int64) (string, int64) {
	base := off - off%int64(epf)
	return filepath.Join(dir, fileName(base)), HeaderSize + (off-base)*EntrySize
}

func writeAt(t *testing.T, path string, pos int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

func garbage(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// buildQueue writes entries [from, to) into a fresh store in dir.
func buildQueue(t *testing.T, dir string, epf int, from, to int64) {
	t.Helper()
	s := openStore(t, dir, epf, 0)
	appendRange(t, mustQueue(t, s, "t", 0), from, to)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestTruncateFrom(t *testing.T) {
	tests := []struct {
		name    string
		epf     int
		n       int64 // entries [0, n) written before the damage
		damage  func(t *testing.T, qdir string, epf int)
		phys    int64
		wantMax int64
	}{
		{"clean, cut in last file", 8, 30, nil, entryAt(27).PhysOffset, 27},
		{"clean, cut between physical offsets", 8, 30, nil, entryAt(27).PhysOffset - 50, 27},
		{"clean, cut at file boundary", 8, 30, nil, entryAt(24).PhysOffset, 24},
		{"clean, cut in an earlier file", 8, 30, nil, entryAt(10).PhysOffset, 10},
		{"clean, nothing to cut", 8, 30, nil, 1 << 40, 30},
		{"clean, cut everything", 8, 30, nil, 0, 0},
		{"shrinks a grown file", 512, 300, nil, entryAt(100).PhysOffset, 100},
		{"hole after checkpoint", 8, 30, func(t *testing.T, d string, epf int) {
			p, pos := slotAt(d, epf, 26)
			writeAt(t, p, pos, make([]byte, EntrySize))
		}, entryAt(25).PhysOffset, 25},
		{"hole at checkpoint", 8, 30, func(t *testing.T, d string, epf int) {
			p, pos := slotAt(d, epf, 26)
			writeAt(t, p, pos, make([]byte, EntrySize))
		}, entryAt(26).PhysOffset, 26},
		{"hole in an earlier file, stale entries after", 8, 30, func(t *testing.T, d string, epf int) {
			p, pos := slotAt(d, epf, 20)
			writeAt(t, p, pos, make([]byte, EntrySize))
		}, entryAt(20).PhysOffset, 20},
		{"torn last entry", 8, 30, func(t *testing.T, d string, epf int) {
			p, pos := slotAt(d, epf, 29)
			writeAt(t, p, pos+12, make([]byte, 20))
		}, 1 << 40, 29},
		{"garbage after the last entry", 8, 30, func(t *testing.T, d string, epf int) {
			p, pos := slotAt(d, epf, 30)
			writeAt(t, p, pos, garbage(2*EntrySize, 1))
		}, 1 << 40, 30},
		{"garbage over the tail", 8, 30, func(t *testing.T, d string, epf int) {
			p, pos := slotAt(d, epf, 27)
			writeAt(t, p, pos, garbage(5*EntrySize, 2))
		}, entryAt(27).PhysOffset, 27},
		{"garbage file after the last", 8, 30, func(t *testing.T, d string, epf int) {
			b := make([]byte, HeaderSize+epf*EntrySize)
			encodeHeader(b, header{Base: 32, Start: 32, EntriesPerFile: epf})
			copy(b[HeaderSize:], garbage(epf*EntrySize, 3))
			if err := os.WriteFile(filepath.Join(d, fileName(32)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, 1 << 40, 30},
		{"garbage in a big file", 512, 300, func(t *testing.T, d string, epf int) {
			p, pos := slotAt(d, epf, 200)
			writeAt(t, p, pos, make([]byte, EntrySize))
			p, pos = slotAt(d, epf, 250)
			writeAt(t, p, pos, garbage(40*EntrySize, 4))
		}, entryAt(200).PhysOffset, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			buildQueue(t, dir, tt.epf, 0, tt.n)
			qdir := filepath.Join(dir, "t", "0")
			if tt.damage != nil {
				tt.damage(t, qdir, tt.epf)
			}
			s := openStore(t, dir, tt.epf, 0)
			q := mustQueue(t, s, "t", 0)
			if err := q.TruncateFrom(tt.phys); err != nil {
				t.Fatal(err)
			}
			checkRange(t, q, 0, tt.wantMax)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			s = openStore(t, dir, tt.epf, 0)
			q = mustQueue(t, s, "t", 0)
			checkRange(t, q, 0, tt.wantMax)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if tt.wantMax > 0 {
				// The cut leaves the last file no longer than its survivors
				// need; nothing appended since could have grown it ahead.
				last := (tt.wantMax - 1) / int64(tt.epf) * int64(tt.epf)
				st, err := os.Stat(filepath.Join(qdir, fileName(last)))
				if err != nil {
					t.Fatal(err)
				}
				if need := sizeFor(int(tt.wantMax-1-last), tt.epf); st.Size() > need {
					t.Fatalf("%s is %d bytes after the cut to %d entries, want at most %d", fileName(last), st.Size(), tt.wantMax, need)
				}
				// The survivors' bytes are exactly what appending them writes.
				fresh := t.TempDir()
				buildQueue(t, fresh, tt.epf, 0, tt.wantMax)
				sameTree(t, readTree(t, dir), readTree(t, fresh))
			} else if got := filesOf(t, s, "t", 0); !slices.Equal(got, []string{fileName(0)}) {
				t.Fatalf("emptied queue keeps files %v, want only the first", got)
			}

			// Re-dispatching what was cut restores the original bytes.
			s = openStore(t, dir, tt.epf, 0)
			appendRange(t, mustQueue(t, s, "t", 0), tt.wantMax, tt.n)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			orig := t.TempDir()
			buildQueue(t, orig, tt.epf, 0, tt.n)
			sameTree(t, readTree(t, dir), readTree(t, orig))
		})
	}
}

// TestStoreTruncateFrom cuts every queue on disk, including ones this
// process never opened.
func TestStoreTruncateFrom(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, 8, 0)
	for p := int32(0); p < 4; p++ {
		appendRange(t, mustQueue(t, s, "a", p), 0, int64(10*p+5))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, 8, 0)
	if err := s.TruncateFrom(entryAt(12).PhysOffset); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 4; p++ {
		q, ok := s.Lookup("a", p)
		if !ok {
			t.Fatalf("partition %d missing", p)
		}
		checkRange(t, q, 0, min(int64(10*p+5), 12))
	}
}

func TestDeleteBefore(t *testing.T) {
	const epf = 8
	tests := []struct {
		name      string
		from, to  int64
		minPhys   int64
		wantMin   int64
		wantFiles []int64
	}{
		{"below everything", 0, 30, 0, 0, []int64{0, 8, 16, 24}},
		{"inside the first file", 0, 30, entryAt(5).PhysOffset, 5, []int64{0, 8, 16, 24}},
		{"between physical offsets", 0, 30, entryAt(5).PhysOffset - 30, 5, []int64{0, 8, 16, 24}},
		{"at a file boundary", 0, 30, entryAt(8).PhysOffset, 8, []int64{8, 16, 24}},
		{"inside a later file", 0, 30, entryAt(19).PhysOffset, 19, []int64{16, 24}},
		{"queue started mid file", 3, 30, entryAt(6).PhysOffset, 6, []int64{0, 8, 16, 24}},
		{"everything", 0, 30, 1 << 40, 30, []int64{24}},
		{"everything, ending at a boundary", 0, 32, 1 << 40, 32, []int64{24}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			buildQueue(t, dir, epf, tt.from, tt.to)
			s := openStore(t, dir, epf, 0)
			// Through the Store, on a queue not yet opened.
			if err := s.DeleteBefore(tt.minPhys); err != nil {
				t.Fatal(err)
			}
			q, _ := s.Lookup("t", 0)
			checkRange(t, q, tt.wantMin, tt.to)
			var want []string
			for _, b := range tt.wantFiles {
				want = append(want, fileName(b))
			}
			if got := filesOf(t, s, "t", 0); !slices.Equal(got, want) {
				t.Fatalf("files %v, want %v", got, want)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, dir, epf, 0)
			q = mustQueue(t, s, "t", 0)
			checkRange(t, q, tt.wantMin, tt.to)
			appendRange(t, q, tt.to, tt.to+3)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// What is left is what a rebuild from the retained log writes.
			fresh := t.TempDir()
			buildQueue(t, fresh, epf, tt.wantMin, tt.to+3)
			sameTree(t, readTree(t, dir), readTree(t, fresh))
		})
	}
}
