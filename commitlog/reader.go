package commitlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/edsrzf/mmap-go"
	"github.com/unilog/unilog/internal/fileops"
)

// Reader is a read-only view of the files of a log directory, for tools
// that inspect a data directory: see "Reading a directory without opening
// it" in the package doc. It is not safe for concurrent use.
type Reader struct {
	files []roFile
}

type roFile struct {
	FileInfo
	m mmap.MMap // nil for an empty file
}

// FileScan is what ScanFile found in one file.
type FileScan struct {
	// Used is the length of the run of valid records from the start of the
	// file; the scan stopped at Base+Used.
	Used    int64
	Records int64
	// Rolled reports that the records end at an end-of-file marker or in a
	// tail too short for one: the log goes on in the next file. Otherwise
	// the log ends in this file, at zero bytes or at Damage.
	Rolled bool
	// Damage says what is wrong at Base+Used when the scan stopped at bytes
	// that are neither zero nor a valid record or marker; it wraps
	// ErrCorrupt. Nil otherwise.
	Damage error
}

// OpenReader maps every file of the log in dir read-only, oldest first. It
// writes nothing and takes no lock. A file removed between listing and
// opening (retention of a running broker) is left out; files being
// allocated (*.tmp) are ignored.
func OpenReader(dir string) (*Reader, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("commitlog: open reader %s: %w", dir, err)
	}
	r := &Reader{}
	for _, e := range ents {
		base, ok := fileops.ParseOffsetName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("commitlog: open reader: %w", err)
		}
		rf := roFile{FileInfo: FileInfo{Name: e.Name(), Path: path, Base: base}}
		st, err := f.Stat()
		if err == nil && st.Size() > 0 {
			rf.Size = st.Size()
			rf.m, err = mmap.Map(f, mmap.RDONLY, 0)
		}
		f.Close()
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("commitlog: open reader: map %s: %w", path, err)
		}
		r.files = append(r.files, rf)
	}
	sort.Slice(r.files, func(i, j int) bool { return r.files[i].Base < r.files[j].Base })
	return r, nil
}

// Files lists the files, oldest first, with their sizes on disk. They need
// not form a chain: checking that is the caller's business.
func (r *Reader) Files() []FileInfo {
	out := make([]FileInfo, len(r.files))
	for i, f := range r.files {
		out[i] = f.FileInfo
	}
	return out
}

// ScanFile walks the records of file i (an index into Files) from its
// start, checking every CRC, and calls fn (if not nil) for each valid one.
// The *Record is reused and its slices alias the mapping: valid only during
// the call. An error from fn stops the scan and is returned.
func (r *Reader) ScanFile(i int, fn func(*Record) error) (FileScan, error) {
	f := &r.files[i]
	sc := scanner{fn: fn, intern: newInterner()}
	_, rolled, err := sc.scanFile(f.Base, f.m, 0)
	if err != nil {
		return FileScan{}, fmt.Errorf("commitlog: scan %s: %w", f.Path, err)
	}
	return FileScan{Used: sc.used, Records: sc.records, Rolled: rolled, Damage: sc.stop}, nil
}

// Read decodes and CRC-checks the record at phys. Its slices alias the
// mapping and stay valid until Close. Errors wrap ErrOutOfRange when no
// file holds phys and ErrCorrupt when phys is not the start of a valid
// record.
func (r *Reader) Read(phys int64) (*Record, error) {
	i := sort.Search(len(r.files), func(i int) bool { return r.files[i].Base+r.files[i].Size > phys })
	if i == len(r.files) || phys < r.files[i].Base {
		return nil, fmt.Errorf("commitlog: read %d: no file holds it: %w", phys, ErrOutOfRange)
	}
	f := &r.files[i]
	rec := new(Record)
	if err := decodeInto(f.m[phys-f.Base:], rec, nil, true); err != nil {
		return nil, fmt.Errorf("commitlog: read %d in %s: %w", phys, f.Name, err)
	}
	if rec.PhysOffset != phys {
		return nil, fmt.Errorf("commitlog: read %d in %s: record says it is at %d: %w", phys, f.Name, rec.PhysOffset, ErrCorrupt)
	}
	return rec, nil
}

// Close unmaps the files. Records returned by Read are invalid after it.
func (r *Reader) Close() error {
	var errs []error
	for _, f := range r.files {
		if f.m != nil {
			if err := f.m.Unmap(); err != nil {
				errs = append(errs, fmt.Errorf("commitlog: unmap %s: %w", f.Path, err))
			}
		}
	}
	r.files = nil
	return errors.Join(errs...)
}
