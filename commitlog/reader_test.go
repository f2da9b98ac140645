package commitlog

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReaderScansLikeRecover reads a closed log of several files with
// OpenReader and finds every record where it was appended, each file
// ending in a roll, without changing a byte.
func TestReaderScansLikeRecover(t *testing.T) {
	const fileSize = 16 << 10
	p := writePristine(t, fileSize, 150)
	// An interrupted allocation must be ignored, not removed.
	tmp := filepath.Join(p.dir, segmentName(99*fileSize)+tmpSuffix)
	if err := os.WriteFile(tmp, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := readFiles(t, p.dir)
	r, err := OpenReader(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	files := r.Files()
	if want := int((p.end-1)/fileSize + 1); len(files) != want {
		t.Fatalf("%d files, want %d", len(files), want)
	}
	var got []Position
	for i, f := range files {
		scan, err := r.ScanFile(i, func(rec *Record) error {
			if d := sameMessage(rec, &p.msgs[len(got)]); d != "" {
				t.Fatalf("record %d: %s", len(got), d)
			}
			got = append(got, rec.Position())
			return nil
		})
		if err != nil || scan.Damage != nil {
			t.Fatalf("file %s: %+v, %v", f.Name, scan, err)
		}
		last := i == len(files)-1
		if scan.Rolled == last {
			t.Fatalf("file %s: rolled %v, want %v", f.Name, scan.Rolled, !last)
		}
		if last && f.Base+scan.Used != p.end {
			t.Fatalf("last file used to %d, log ends at %d", f.Base+scan.Used, p.end)
		}
	}
	if len(got) != len(p.pos) {
		t.Fatalf("scanned %d records, appended %d", len(got), len(p.pos))
	}
	for i, pos := range p.pos {
		if got[i] != pos {
			t.Fatalf("record %d at %+v, appended at %+v", i, got[i], pos)
		}
		rec, err := r.Read(pos.PhysOffset)
		if err != nil || sameMessage(rec, &p.msgs[i]) != "" {
			t.Fatalf("Read(%d): %v", pos.PhysOffset, err)
		}
	}
	if _, err := r.Read(p.pos[3].PhysOffset + 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Read inside a record: %v, want ErrCorrupt", err)
	}
	if _, err := r.Read(p.end + 100*fileSize); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Read past the files: %v, want ErrOutOfRange", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !sameFiles(before, readFiles(t, p.dir)) || len(readFiles(t, p.dir)) != len(before) {
		t.Fatal("OpenReader changed the directory")
	}
}

// TestReaderReportsDamage flips a byte inside a record: the scan of that
// file stops at the record and says what is wrong.
func TestReaderReportsDamage(t *testing.T) {
	const fileSize = 16 << 10
	p := writePristine(t, fileSize, 40)
	dir := p.copyTo(t)
	victim := p.pos[len(p.pos)-5]
	flipByte(t, dir, fileSize, victim.PhysOffset+30, 0x10)
	r, err := OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	i := int(victim.PhysOffset / fileSize)
	scan, err := r.ScanFile(i, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(scan.Damage, ErrCorrupt) || scan.Rolled || r.Files()[i].Base+scan.Used != victim.PhysOffset {
		t.Fatalf("scan of the damaged file: %+v, want ErrCorrupt at %d", scan, victim.PhysOffset)
	}
}

// TestReaderBesideLiveLog opens a reader on the directory of an open log
// that keeps appending: it sees a prefix of the records and takes nothing
// from the writer.
func TestReaderBesideLiveLog(t *testing.T) {
	opts := testOptions(t, "", 16<<10)
	l := openLog(t, opts)
	defer l.Close()
	for i := range 30 {
		m := testMessage(i, 100)
		if _, err := l.Append(&m); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(opts.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var n int64
	for i := range r.Files() {
		scan, err := r.ScanFile(i, nil)
		if err != nil {
			t.Fatal(err)
		}
		n += scan.Records
	}
	if n < 30 {
		t.Fatalf("reader saw %d records of a live log holding 30", n)
	}
	m := testMessage(31, 100)
	if _, err := l.Append(&m); err != nil {
		t.Fatalf("append beside a reader: %v", err)
	}
}
