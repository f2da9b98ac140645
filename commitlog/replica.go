package commitlog

import (
	"fmt"
	"sort"
	"time"
)

// ReadRaw appends to dst the stored bytes of the log from phys on, exactly
// as they lie in the file, for a replication leader to stream: whole
// records (at least one, then more while the chunk stays within max
// bytes), never past WriteOffset and never past the end of phys's file.
// When the chunk reaches the end of the file, it ends with the file's
// end-of-file marker (nothing for a tail shorter than BlankSize) and next
// is the next file's base; otherwise next is the end of the last record.
// phys must be a record boundary, an end-of-file marker or a file's zero
// tail, as a follower's own end always is. At WriteOffset it appends
// nothing and returns next = phys. It returns ErrOutOfRange below
// MinOffset or past WriteOffset.
//
// The bytes were CRC-checked by recovery or written by this process (see
// Cursor), so ReadRaw only walks record sizes; the follower verifies every
// record's CRC in AppendRaw.
func (l *Log) ReadRaw(dst []byte, phys int64, max int) (out []byte, next int64, err error) {
	if l.closed.Load() {
		return dst, phys, ErrClosed
	}
	w := l.writeOff.Load()
	if phys == w {
		return dst, phys, nil
	}
	segs := l.chain()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].end() > phys })
	if phys < 0 || phys > w || i == len(segs) || phys < segs[i].base || !segs[i].tryAcquire() {
		return dst, phys, fmt.Errorf("commitlog: read raw %d: min offset %d, write offset %d: %w", phys, l.MinOffset(), w, ErrOutOfRange)
	}
	s := segs[i]
	defer s.release()
	n := len(dst)
	if fault := guard(func() { dst, next, err = rawChunk(dst, s, phys, w, max) }); fault != nil {
		return dst[:n], phys, fmt.Errorf("commitlog: read raw at %d in %s: %w", phys, s.path, fault)
	}
	return dst, next, err
}

// rawChunk is ReadRaw's walk over s's read-only mapping, run under guard.
func rawChunk(dst []byte, s *segment, phys, w int64, max int) ([]byte, int64, error) {
	m := s.ro
	limit := min(s.size, w-s.base)
	start := phys - s.base
	pos := start
	for pos < limit {
		rem := s.size - pos
		if rem < BlankSize {
			return append(dst, m[start:pos]...), s.end(), nil
		}
		if isBlank(m[pos:], rem) {
			return append(dst, m[start:pos+BlankSize]...), s.end(), nil
		}
		size := int64(be.Uint32(m[pos:]))
		if size < MinRecordSize || pos+size > limit || m[pos+offMagic] != RecordMagic {
			return dst, phys, fmt.Errorf("commitlog: read raw at %d: size %d, magic %#x: %w", s.base+pos, size, m[pos+offMagic], ErrCorrupt)
		}
		if pos > start && pos+size-start > int64(max) {
			break
		}
		pos += size
	}
	return append(dst, m[start:pos]...), s.base + pos, nil
}

// rawItem is one element of a replicated chunk: a record, or a roll to the
// next file (by an end-of-file marker, or by position in a short tail).
type rawItem struct {
	at        int    // offset in the chunk
	size      int    // bytes of the chunk it takes (0 for a roll by position)
	roll      bool   // the writer moves to the next file after it
	topic     string // record only
	id        TopicID
	partition int32
	next      int64 // record only: the partition's next queue offset after it
}

// AppendRaw writes data, a chunk of another log's bytes as ReadRaw
// returned them, at phys, which must be this log's WriteOffset (or, when
// that is in a tail shorter than BlankSize, the next file's base): a follower
// replicating its leader stores every record at the same physical offset,
// so the two logs stay byte-identical (both must use the same FileSize,
// which fixes where files roll). Every record's CRC, its PhysOffset and its
// placement are checked first; the chunk is all or nothing. Queue offsets
// are taken from the records, so the follower's counters match the
// leader's. It returns the new WriteOffset; durability follows the log's
// FlushMode and WaitDurable as for Append.
func (l *Log) AppendRaw(phys int64, data []byte) (int64, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.writable("append raw"); err != nil {
		return 0, err
	}
	w := l.cur.base + l.wpos
	// After a file's short tail the leader's next offset is the next file's
	// base while this writer still stands in the tail: the same place.
	inTail := l.cur.size-l.wpos < BlankSize && phys == l.cur.end()
	if phys != w && !inTail {
		return 0, fmt.Errorf("commitlog: append raw at %d: write offset is %d: %w", phys, w, ErrOutOfRange)
	}
	if inTail {
		if err := l.reserve(1); err != nil {
			return 0, fmt.Errorf("commitlog: append raw: %w", err)
		}
		l.roll(time.Now().UnixMilli())
		w = l.cur.base
		l.writeOff.Store(w)
	}
	items, rolls, err := l.planRaw(w, data)
	if err != nil {
		return 0, err
	}
	if err := l.reserve(rolls); err != nil {
		return 0, fmt.Errorf("commitlog: append raw: %w", err)
	}
	now := time.Now().UnixMilli()
	if err := l.writeRaw(items, data, now); err != nil {
		// As in AppendBatch: nothing more is published; the log stops.
		return 0, l.fail(fmt.Errorf("commitlog: append raw at %d: %w", w, err), l.flushed.Load(), l.writeOff.Load())
	}
	end := l.cur.base + l.wpos
	l.writeOff.Store(end)
	l.notifyAppended()
	if l.opts.FlushMode == FlushSync {
		l.kickFlush()
	}
	return end, nil
}

// writeRaw writes planned items to the files, one pwrite per file the
// chunk enters (the chunk's items are contiguous, end-of-file markers
// included), each after the zeros ahead of it that an append writes
// (zeroahead.go): a follower writes the leader's bytes at the leader's
// rate, in chunks as small as its batches at the tail; wmu held.
func (l *Log) writeRaw(items []rawItem, data []byte, now int64) error {
	from, start := 0, l.wpos
	write := func(to int) error {
		l.zeroAhead(l.cur, start, start+int64(to-from))
		_, err := l.cur.writeAt(data[from:to], start)
		return err
	}
	for _, it := range items {
		if it.size > 0 && !it.roll {
			*l.queueNext(it.topic, it.id, it.partition) = it.next
		}
		l.wpos += int64(it.size)
		if it.roll {
			if err := write(it.at + it.size); err != nil {
				return err
			}
			l.roll(now)
			from, start = it.at+it.size, 0
		}
	}
	if len(items) == 0 {
		return nil
	}
	last := items[len(items)-1]
	return write(last.at + last.size)
}

// planRaw checks a replicated chunk against where this log would place it
// and returns its items and the number of files it enters. wmu held.
func (l *Log) planRaw(phys int64, data []byte) ([]rawItem, int, error) {
	var (
		items []rawItem
		rolls int
		rec   Record
		pos   = phys
		end   = l.cur.end() // end of the file pos is in
		size  = l.opts.FileSize
	)
	fail := func(d int, format string, args ...any) ([]rawItem, int, error) {
		return nil, 0, fmt.Errorf("commitlog: append raw at %d (chunk byte %d): %s: %w", pos, d, fmt.Sprintf(format, args...), ErrCorrupt)
	}
	rollTo := func() {
		rolls++
		if rolls <= len(l.ready) {
			size = l.ready[rolls-1].size
		}
		pos, end = end, end+size
	}
	for d := 0; d < len(data); {
		rem := end - pos
		if rem < BlankSize {
			items = append(items, rawItem{at: d, roll: true})
			rollTo()
			continue
		}
		if len(data)-d >= BlankSize && data[d+offMagic] == BlankMagic {
			if !isBlank(data[d:], rem) {
				return fail(d, "end-of-file marker for %d bytes, %d left in the file", be.Uint32(data[d:]), rem)
			}
			items = append(items, rawItem{at: d, size: BlankSize, roll: true})
			d += BlankSize
			rollTo()
			continue
		}
		if err := decodeInto(data[d:], &rec, l.intern, true); err != nil {
			return fail(d, "%v", err)
		}
		if rec.PhysOffset != pos {
			return fail(d, "record says it is at %d", rec.PhysOffset)
		}
		if rec.End() > end {
			return fail(d, "record of %d bytes crosses the end of the file at %d", rec.TotalSize, end)
		}
		items = append(items, rawItem{at: d, size: int(rec.TotalSize), topic: rec.Topic, id: rec.TopicID, partition: rec.Partition, next: rec.QueueOffset + int64(rec.Count)})
		d += int(rec.TotalSize)
		pos += int64(rec.TotalSize)
	}
	return items, rolls, nil
}
