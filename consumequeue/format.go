package consumequeue

import (
	"encoding/binary"
	"fmt"

	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/framed"
)

// Sizes of the file header and entry slots, in bytes (versions 1 and 2).
const (
	HeaderSize = 32
	EntrySize  = 32
)

// fileFormat frames a file's header: entry size (uint16), Base (int64),
// Start (int64), EntriesPerFile (uint32). Version 1 files hold the log's
// store time in their entries and are still read (see "Timestamps" in the
// package doc); version 2 the records' own.
var fileFormat = framed.Format{Name: "header", Magic: "UCQF", Version: 2, Oldest: 1, Shape: framed.Sealed}

const (
	// minFileSize is the size a new file starts at; files double from here
	// up to their full size.
	minFileSize = 4096
)

// Entry locates one logical offset's record in the commit log.
type Entry struct {
	PhysOffset int64 // physical offset of the record in the commit log
	Size       int32 // record size in bytes
	// Timestamp (unix ms) is the largest record timestamp of the queue's
	// batches up to this one: AppendRange raises the batch's max
	// timestamp it is given to the previous entry's, so it never
	// decreases along a queue. Entries written by version 1 hold the
	// log's store time instead.
	Timestamp int64
}

// header is the decoded form of a file's first HeaderSize bytes.
type header struct {
	Base           int64 // offset of slot 0; a multiple of EntriesPerFile
	Start          int64 // first offset that may hold an entry, in [Base, Base+EntriesPerFile]
	EntriesPerFile int
}

func encodeHeader(b []byte, h header) {
	var p [HeaderSize - 10]byte
	binary.BigEndian.PutUint16(p[0:], EntrySize)
	binary.BigEndian.PutUint64(p[2:], uint64(h.Base))
	binary.BigEndian.PutUint64(p[10:], uint64(h.Start))
	binary.BigEndian.PutUint32(p[18:], uint32(h.EntriesPerFile))
	fileFormat.Append(b[:0:HeaderSize], p[:])
}

// decodeHeader checks everything the header can check by itself; whether
// Base matches the file name and EntriesPerFile the store is the caller's job.
func decodeHeader(b []byte) (header, error) {
	if len(b) < HeaderSize {
		return header{}, fmt.Errorf("header: %d bytes, need %d: %w", len(b), HeaderSize, ErrCorrupt)
	}
	_, p, err := fileFormat.Decode(b[:HeaderSize])
	if err != nil {
		return header{}, fmt.Errorf("%w: %w", err, ErrCorrupt)
	}
	r := framed.NewReader(p)
	if es := r.U16(); es != EntrySize {
		return header{}, fmt.Errorf("header: entry size %d, want %d: %w", es, EntrySize, ErrCorrupt)
	}
	h := header{
		Base:           int64(r.U64()),
		Start:          int64(r.U64()),
		EntriesPerFile: int(r.U32()),
	}
	if h.EntriesPerFile < 1 || h.EntriesPerFile > maxEntriesPerFile {
		return header{}, fmt.Errorf("header: entries per file %d: %w", h.EntriesPerFile, ErrCorrupt)
	}
	epf := int64(h.EntriesPerFile)
	if h.Base < 0 || h.Base%epf != 0 || h.Start < h.Base || h.Start-h.Base > epf {
		return header{}, fmt.Errorf("header: base %d start %d for %d entries per file: %w", h.Base, h.Start, epf, ErrCorrupt)
	}
	return h, nil
}

// encodeEntry writes e as the entry for logical offset off. The offset is
// part of the entry so that a stale or misplaced slot can never pass for
// another offset's entry.
func encodeEntry(b []byte, off int64, e Entry) {
	_ = b[EntrySize-1]
	binary.BigEndian.PutUint64(b[0:], uint64(off))
	binary.BigEndian.PutUint64(b[8:], uint64(e.PhysOffset))
	binary.BigEndian.PutUint64(b[16:], uint64(e.Timestamp))
	binary.BigEndian.PutUint32(b[24:], uint32(e.Size))
	binary.BigEndian.PutUint32(b[28:], framed.Checksum(b[:28]))
}

// decodeEntry returns the entry in b if b holds a written entry for offset
// off. An all-zero slot fails the CRC (the CRC32C of zeros is not zero), so
// unwritten, torn and garbage slots all read as "not written".
func decodeEntry(b []byte, off int64) (Entry, bool) {
	if len(b) < EntrySize {
		return Entry{}, false
	}
	if binary.BigEndian.Uint32(b[28:]) != framed.Checksum(b[:28]) {
		return Entry{}, false
	}
	if int64(binary.BigEndian.Uint64(b[0:])) != off {
		return Entry{}, false
	}
	e := Entry{
		PhysOffset: int64(binary.BigEndian.Uint64(b[8:])),
		Timestamp:  int64(binary.BigEndian.Uint64(b[16:])),
		Size:       int32(binary.BigEndian.Uint32(b[24:])),
	}
	if e.Size <= 0 || e.PhysOffset < 0 {
		return Entry{}, false
	}
	return e, true
}

// sizeFor is the file size for a file whose highest written slot is slot
// (-1 for none): 4 KiB doubled until the slot fits, capped at the full size.
// Being a function of the slot alone keeps rebuilt files byte-identical.
func sizeFor(slot, entriesPerFile int) int64 {
	full := int64(HeaderSize) + int64(entriesPerFile)*EntrySize
	need := int64(HeaderSize) + int64(slot+1)*EntrySize
	size := int64(minFileSize)
	for size < need {
		size *= 2
	}
	return min(size, full)
}

// fileName is the 20-digit name of the file whose slot 0 is offset base.
func fileName(base int64) string { return fileops.OffsetName(base) }

// FileEntry is one written slot of a consume-queue file.
type FileEntry struct {
	Offset int64
	Entry
}

// DecodeFile decodes the bytes of one consume-queue file, named for base,
// without changing anything: it is for tools that inspect a data directory,
// since opening a Store repairs what it finds. It returns the written
// entries in offset order and, if the file is damaged (header, size, or a
// written slot after an unwritten one), an error wrapping ErrCorrupt along
// with the entries before the damage.
func DecodeFile(b []byte, base int64) ([]FileEntry, error) {
	h, err := decodeHeader(b)
	if err != nil {
		return nil, err
	}
	if h.Base != base {
		return nil, fmt.Errorf("header base %d, file named %d: %w", h.Base, base, ErrCorrupt)
	}
	epf := int64(h.EntriesPerFile)
	if int64(len(b)) > HeaderSize+epf*EntrySize {
		return nil, fmt.Errorf("%d bytes, larger than %d entries: %w", len(b), epf, ErrCorrupt)
	}
	var out []FileEntry
	ended := false
	for slot := h.Start - base; HeaderSize+(slot+1)*EntrySize <= int64(len(b)); slot++ {
		off := base + slot
		e, ok := decodeEntry(b[HeaderSize+slot*EntrySize:], off)
		if !ok {
			ended = true
			continue
		}
		if ended {
			return out, fmt.Errorf("entry for offset %d after an unwritten or damaged slot: %w", off, ErrCorrupt)
		}
		out = append(out, FileEntry{Offset: off, Entry: e})
	}
	return out, nil
}
