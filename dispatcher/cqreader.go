package dispatcher

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/unilog/unilog/consumequeue"
)

// Consume-queue file layout, version 1, as documented by the consumequeue
// package. inspect reads it itself because consumequeue.Open repairs what
// it finds (removes damaged files), and inspecting must change nothing.
const (
	cqHeaderSize = 32
	cqEntrySize  = 32
	cqMagic      = 0x55435146 // "UCQF"
	cqVersion    = 1
)

// cqEntry is one decoded consume-queue slot.
type cqEntry struct {
	Offset int64
	consumequeue.Entry
}

// cqQueue is one partition's consume queue read from disk.
type cqQueue struct {
	ID      consumequeue.ID
	Files   []string
	Entries []cqEntry // in offset order
	Min     int64     // first offset held (== Max when empty)
	Max     int64     // one past the last offset held
	Damage  []string  // problems found while reading
}

// listQueues finds every <dir>/<topic>/<partition> directory.
func listQueues(dir string) ([]consumequeue.ID, error) {
	topics, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dispatcher: inspect: %w", err)
	}
	var ids []consumequeue.ID
	for _, t := range topics {
		if !t.IsDir() {
			continue
		}
		parts, err := os.ReadDir(filepath.Join(dir, t.Name()))
		if err != nil {
			return nil, fmt.Errorf("dispatcher: inspect: %w", err)
		}
		for _, p := range parts {
			n, err := strconv.ParseInt(p.Name(), 10, 32)
			if !p.IsDir() || err != nil || n < 0 {
				continue
			}
			ids = append(ids, consumequeue.ID{Topic: t.Name(), Partition: int32(n)})
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].Topic != ids[j].Topic {
			return ids[i].Topic < ids[j].Topic
		}
		return ids[i].Partition < ids[j].Partition
	})
	return ids, nil
}

// readQueue reads every file of one queue. Damage is reported in Damage,
// not as an error, so one bad file does not hide the rest.
func readQueue(dir string, id consumequeue.ID) (*cqQueue, error) {
	qdir := filepath.Join(dir, id.Topic, strconv.Itoa(int(id.Partition)))
	ents, err := os.ReadDir(qdir)
	if err != nil {
		return nil, fmt.Errorf("dispatcher: inspect: %w", err)
	}
	q := &cqQueue{ID: id, Min: -1}
	for _, e := range ents {
		if e.IsDir() || len(e.Name()) != 20 {
			continue
		}
		if _, err := strconv.ParseInt(e.Name(), 10, 64); err != nil {
			continue
		}
		q.Files = append(q.Files, e.Name())
	}
	sort.Strings(q.Files)
	next := int64(-1)
	for _, name := range q.Files {
		b, err := os.ReadFile(filepath.Join(qdir, name))
		if err != nil {
			return nil, fmt.Errorf("dispatcher: inspect: %w", err)
		}
		base, _ := strconv.ParseInt(name, 10, 64)
		entries, problem := decodeCQFile(b, base)
		if problem != "" {
			q.Damage = append(q.Damage, fmt.Sprintf("file %s: %s", name, problem))
		}
		for _, en := range entries {
			if next >= 0 && en.Offset != next {
				q.Damage = append(q.Damage, fmt.Sprintf("file %s: offset %d follows %d", name, en.Offset, next-1))
			}
			if q.Min < 0 {
				q.Min = en.Offset
			}
			next = en.Offset + 1
			q.Entries = append(q.Entries, en)
		}
	}
	if q.Min < 0 {
		q.Min, q.Max = 0, 0
	} else {
		q.Max = next
	}
	return q, nil
}

// decodeCQFile returns the written entries of one file and, if something is
// wrong with it, a description.
func decodeCQFile(b []byte, base int64) ([]cqEntry, string) {
	if len(b) < cqHeaderSize {
		return nil, fmt.Sprintf("%d bytes, shorter than the header", len(b))
	}
	if binary.BigEndian.Uint32(b[28:]) != crc32.Checksum(b[:28], castagnoli) {
		return nil, "header crc mismatch"
	}
	if m := binary.BigEndian.Uint32(b[0:]); m != cqMagic {
		return nil, fmt.Sprintf("header magic %#x", m)
	}
	if v := binary.BigEndian.Uint16(b[4:]); v != cqVersion {
		return nil, fmt.Sprintf("header version %d", v)
	}
	if es := binary.BigEndian.Uint16(b[6:]); es != cqEntrySize {
		return nil, fmt.Sprintf("header entry size %d", es)
	}
	hbase := int64(binary.BigEndian.Uint64(b[8:]))
	start := int64(binary.BigEndian.Uint64(b[16:]))
	epf := int64(binary.BigEndian.Uint32(b[24:]))
	if hbase != base || epf < 1 || start < base || start-base > epf {
		return nil, fmt.Sprintf("header base %d start %d entries per file %d", hbase, start, epf)
	}
	if int64(len(b)) > cqHeaderSize+epf*cqEntrySize {
		return nil, fmt.Sprintf("%d bytes, larger than %d entries", len(b), epf)
	}
	var out []cqEntry
	ended := false
	for slot := start - base; cqHeaderSize+(slot+1)*cqEntrySize <= int64(len(b)); slot++ {
		s := b[cqHeaderSize+slot*cqEntrySize:][:cqEntrySize]
		off := base + slot
		e, ok := decodeCQEntry(s, off)
		if !ok {
			ended = true
			continue
		}
		if ended {
			return out, fmt.Sprintf("entry for offset %d after an unwritten or damaged slot", off)
		}
		out = append(out, cqEntry{Offset: off, Entry: e})
	}
	return out, ""
}

func decodeCQEntry(s []byte, off int64) (consumequeue.Entry, bool) {
	if binary.BigEndian.Uint32(s[28:]) != crc32.Checksum(s[:28], castagnoli) {
		return consumequeue.Entry{}, false
	}
	if int64(binary.BigEndian.Uint64(s[0:])) != off {
		return consumequeue.Entry{}, false
	}
	e := consumequeue.Entry{
		PhysOffset:     int64(binary.BigEndian.Uint64(s[8:])),
		StoreTimestamp: int64(binary.BigEndian.Uint64(s[16:])),
		Size:           int32(binary.BigEndian.Uint32(s[24:])),
	}
	return e, e.Size > 0 && e.PhysOffset >= 0
}
