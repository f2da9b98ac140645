package dispatcher

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/edsrzf/mmap-go"
	"github.com/unilog/unilog/commitlog"
)

// logFile is one commit-log file mapped read-only for inspection.
type logFile struct {
	name string
	base int64
	data mmap.MMap // nil for an empty file
}

// logReader reads commit-log files directly, without commitlog.Open, so
// that inspecting a directory neither recovers nor allocates anything.
type logReader struct {
	files []logFile
}

func openLogReader(dir string) (*logReader, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("dispatcher: inspect: %w", err)
	}
	lr := &logReader{}
	for _, e := range ents {
		if e.IsDir() || len(e.Name()) != 20 {
			continue
		}
		base, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			lr.close()
			return nil, fmt.Errorf("dispatcher: inspect: %w", err)
		}
		lf := logFile{name: e.Name(), base: base}
		st, err := f.Stat()
		if err == nil && st.Size() > 0 {
			lf.data, err = mmap.Map(f, mmap.RDONLY, 0)
		}
		f.Close()
		if err != nil {
			lr.close()
			return nil, fmt.Errorf("dispatcher: inspect: map %s: %w", e.Name(), err)
		}
		lr.files = append(lr.files, lf)
	}
	sort.Slice(lr.files, func(i, j int) bool { return lr.files[i].base < lr.files[j].base })
	return lr, nil
}

func (lr *logReader) close() {
	for _, f := range lr.files {
		if f.data != nil {
			f.data.Unmap()
		}
	}
	lr.files = nil
}

// file returns the file holding phys.
func (lr *logReader) file(phys int64) (*logFile, bool) {
	i := sort.Search(len(lr.files), func(i int) bool { return lr.files[i].base > phys }) - 1
	if i < 0 {
		return nil, false
	}
	f := &lr.files[i]
	if phys-f.base >= int64(len(f.data)) {
		return nil, false
	}
	return f, true
}

// record decodes (and CRC-checks) the record at phys.
func (lr *logReader) record(phys int64) (*commitlog.Record, error) {
	f, ok := lr.file(phys)
	if !ok {
		return nil, fmt.Errorf("%w: no commit-log file holds offset %d", ErrCorrupt, phys)
	}
	b := f.data[phys-f.base:]
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: offset %d is in the tail of file %s", ErrCorrupt, phys, f.name)
	}
	size := int64(binary.BigEndian.Uint32(b))
	if size < commitlog.MinRecordSize || size > int64(len(b)) {
		return nil, fmt.Errorf("%w: offset %d: record size %d", ErrCorrupt, phys, size)
	}
	r, err := commitlog.Decode(b[:size])
	if err != nil {
		return nil, fmt.Errorf("offset %d: %w", phys, err)
	}
	if r.PhysOffset != phys {
		return nil, fmt.Errorf("%w: record at %d says it is at %d", ErrCorrupt, phys, r.PhysOffset)
	}
	return r, nil
}

// scanFile walks one file's records. fn gets each valid record; the scan
// stops at the end-of-file marker, a zero region or the first bad record,
// and returns the used length and the error that stopped it, if any.
func scanFile(f *logFile, fn func(r *commitlog.Record)) (used int64, err error) {
	b := f.data
	pos := int64(0)
	for pos+8 <= int64(len(b)) {
		size := int64(binary.BigEndian.Uint32(b[pos:]))
		if size == 0 {
			return pos, nil
		}
		if b[pos+4] == commitlog.BlankMagic {
			if pos+size != int64(len(b)) {
				return pos, fmt.Errorf("%w: file %s: end-of-file marker at %d covers %d of %d remaining bytes",
					ErrCorrupt, f.name, pos, size, int64(len(b))-pos)
			}
			return pos, nil
		}
		if size < commitlog.MinRecordSize || pos+size > int64(len(b)) {
			return pos, fmt.Errorf("%w: file %s at %d (offset %d): record size %d", ErrCorrupt, f.name, pos, f.base+pos, size)
		}
		r, err := commitlog.Decode(b[pos : pos+size])
		if err != nil {
			return pos, fmt.Errorf("file %s at %d (offset %d): %w", f.name, pos, f.base+pos, err)
		}
		if r.PhysOffset != f.base+pos {
			return pos, fmt.Errorf("%w: file %s at %d: record says it is at offset %d", ErrCorrupt, f.name, pos, r.PhysOffset)
		}
		fn(r)
		pos += size
	}
	return pos, nil
}
