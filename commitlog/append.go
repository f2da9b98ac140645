package commitlog

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
	"unsafe"

	"github.com/sirupsen/logrus"
)

// Append appends one message. See AppendBatch.
func (l *Log) Append(m *Message) (Position, error) {
	var out [1]Position
	_, err := l.AppendBatchTo(out[:0], unsafe.Slice(m, 1))
	return out[0], err
}

// AppendBatch appends ms under one acquisition of the writer lock and
// returns their positions. The batch is all or nothing: an invalid or too
// large message, a file that cannot be allocated (ErrDiskFull) or a log
// whose flush has failed (ErrFlushFailed) fails it before any byte is
// written. The records are readable when it returns; they are
// durable once FlushedOffset reaches the last Position's End (WaitDurable).
func (l *Log) AppendBatch(ms []Message) ([]Position, error) {
	return l.AppendBatchTo(make([]Position, 0, len(ms)), ms)
}

// AppendBatchTo is AppendBatch appending the positions to dst, so a caller
// reusing dst appends without allocating. Calls that arrive while another
// is writing are written together by the next writer (see group.go); each
// stays all or nothing and its records stay contiguous.
func (l *Log) AppendBatchTo(dst []Position, ms []Message) ([]Position, error) {
	var batch, inline int64
	for i := range ms {
		n, err := validate(&ms[i])
		if err != nil {
			return dst, fmt.Errorf("commitlog: append message %d: %w", i, err)
		}
		if n > l.opts.MaxRecordSize {
			return dst, fmt.Errorf("commitlog: append message %d: %d bytes, limit %d: %w", i, n, l.opts.MaxRecordSize, ErrTooLarge)
		}
		batch += int64(n)
		inline += int64(n - externalBody(&ms[i]))
	}
	if len(ms) == 0 {
		return dst, nil
	}
	return l.appendQueued(dst, ms, batch, inline)
}

// writeGroup writes the batches of group as one, or each alone if that
// fails, so that a batch fails alone as it did before coalescing; wmu
// held. It reports whether anything was written.
func (l *Log) writeGroup(group []*appendReq) bool {
	if err := l.writeBatches(group); err == nil || len(group) == 1 {
		group[0].err = err
		return err == nil
	}
	wrote := false
	for i, r := range group {
		r.err = l.writeBatches(group[i : i+1])
		wrote = wrote || r.err == nil
	}
	return wrote
}

// writeBatches writes group all or nothing, appending each batch's
// positions to its dst; wmu held.
func (l *Log) writeBatches(group []*appendReq) error {
	if l.closed.Load() {
		return ErrClosed
	}
	if !l.recovered {
		return ErrNotRecovered
	}
	if err := l.failure(); err != nil {
		return fmt.Errorf("commitlog: append: %w", err)
	}
	var size int64
	for _, r := range group {
		size += r.size
	}
	if l.wpos+size > l.cur.size {
		if err := l.reserve(l.rollsNeeded(group)); err != nil {
			return fmt.Errorf("commitlog: append: %w", err)
		}
	}
	at := l.cur.base + l.wpos
	if err := l.encodeBatch(group, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("commitlog: append at %d: %w", at, err)
	}
	l.writeOff.Store(l.cur.base + l.wpos)
	l.stats.writes.Add(1)
	return nil
}

// maxKeptWriteBuf bounds the encoding buffer the writer keeps between
// batches; a larger batch gets a buffer of its own. A group is at most
// maxGroupBytes unless its first batch alone is larger, and one produce
// request is one batch here: a client writing to 10,000 partitions sends
// requests of about 5 MB, each of which made and cleared a buffer of its
// own under a 4 MiB bound.
const maxKeptWriteBuf = 16 << 20

// queueUndo is a queue-offset counter's value before a batch moved it.
type queueUndo struct {
	next *int64
	was  int64
}

// encodeBatch assigns each message of the group its offsets and encodes
// the group into l.wbuf, then writes it with one pwrite per file it enters (the
// end-of-file marker of a file it leaves goes with that file's write), and
// only then rolls into the files reserve made and moves the write
// position; wmu held. If a write fails nothing of the batch stays: the
// counters go back and the bytes written are cleared, so that no record
// of it can turn up behind a later, shorter append. A full disk
// (ErrDiskFull: a file system that needs space to write into allocated
// blocks, or RLIMIT_FSIZE) then fails the batch alone; any other failure,
// or one to clear, stops the log as a failed flush does.
func (l *Log) encodeBatch(group []*appendReq, now int64) error {
	// The buffer grows once to the group's size: grown record by record,
	// a group of thousands of one-record batches (a client writing to
	// 10,000 partitions) was copied again at every doubling, 9% of the
	// broker's CPU there (docs/BENCHMARKS.md, "Produce at 1,000 to 10,000
	// partitions"), and Encode grows a full buffer by one record only.
	// Each file the group leaves takes an end-of-file marker, and reserve
	// has made every file it enters.
	need := BlankSize * len(l.ready)
	for _, r := range group {
		need += int(r.inline)
	}
	buf := l.wbuf[:0]
	if cap(buf) < need {
		// Not slices.Grow, which copies the old buffer's whole capacity.
		buf = make([]byte, 0, need)
	}
	ends, undo, exts, hand := l.wends[:0], l.wundo[:0], l.wexts[:0], l.whand[:0]
	handing := l.handoff.on.Load()
	defer func() {
		if cap(buf) <= maxKeptWriteBuf {
			l.wbuf = buf
		}
		clear(undo) // the counters of deleted topics must not stay reachable
		clear(exts) // nor the callers' bodies
		clear(hand) // nor their topic names
		l.wends, l.wundo, l.wexts, l.whand = ends, undo[:0], exts[:0], hand[:0]
	}()
	file, pos := l.cur, l.wpos
	external := 0 // bytes of exts: ends count them, buf does not
	for _, r := range group {
		r.kept = len(r.dst)
		for i := range r.ms {
			m := &r.ms[i]
			n := int64(EncodedSize(m))
			if pos+n > file.size {
				buf = appendBlank(buf, file.size-pos)
				ends = append(ends, len(buf)+external)
				file, pos = l.ready[len(ends)-1], 0
			}
			next := l.queueNext(m.Topic, m.TopicID, m.Partition)
			undo = append(undo, queueUndo{next, *next})
			q := *next
			count := m.Count
			if count == 0 {
				count = 1
			}
			*next = q + int64(count)
			phys := file.base + pos
			if ext := externalBody(m); ext > 0 {
				head := int(n) - ext
				buf = slices.Grow(buf, head)[:len(buf)+head]
				encodeInto(buf[len(buf)-head:], int(n), m, phys, q, now)
				exts = append(exts, extBody{at: len(buf), b: m.Body[len(m.Body)-ext:]})
				external += ext
			} else {
				buf = Encode(buf, m, phys, q, now)
			}
			pos += n
			p := Position{PhysOffset: phys, Size: int32(n), QueueOffset: q, Count: count, StoreTimestamp: now}
			r.dst = append(r.dst, p)
			if handing {
				hand = append(hand, handed{
					Position: p, ProducerTimestamp: m.ProducerTimestamp, Partition: m.Partition,
					Flags: m.Flags, Topic: m.Topic, TopicID: m.TopicID,
				})
			}
		}
	}
	ends = append(ends, len(buf)+external)
	if err := l.writeParts(buf, exts, ends); err != nil {
		for k := len(undo) - 1; k >= 0; k-- {
			*undo[k].next = undo[k].was
		}
		for _, r := range group {
			r.dst = r.dst[:r.kept]
		}
		return err
	}
	l.handoff.put(hand)
	for range len(ends) - 1 {
		l.roll(now)
	}
	l.wpos = pos
	return nil
}

// writeParts writes bytes [ends[k-1], ends[k]) of the batch (buf with
// the bodies exts inserted) to the k-th file of the batch (see partFile).
// On failure it clears what it wrote and returns the error, which is
// sticky (see fail) unless the disk is full and the clearing worked. wmu
// held.
func (l *Log) writeParts(buf []byte, exts []extBody, ends []int) error {
	from := 0
	v := vector{buf: buf, exts: exts, iov: l.wiov[:0]}
	defer func() {
		clear(v.iov)
		l.wiov = v.iov[:0]
	}()
	for k, end := range ends {
		s, at := l.partFile(k)
		l.zeroAhead(s, at, at+int64(end-from))
		var n int64
		var err error
		if len(exts) == 0 {
			n, err = s.writeAt(buf[from:end], at)
		} else {
			n, err = s.writevAt(v.next(end-from), at)
		}
		if err == nil {
			from = end
			continue
		}
		cerr := s.clear(at, n)
		start := 0
		for j := range k {
			sj, atj := l.partFile(j)
			cerr = errors.Join(cerr, sj.clear(atj, int64(ends[j]-start)))
			start = ends[j]
		}
		if cerr == nil && errors.Is(err, ErrDiskFull) {
			return err
		}
		return l.fail(errors.Join(err, cerr), l.flushed.Load(), l.writeOff.Load())
	}
	return nil
}

// partFile is where the k-th part of a batch goes: the current file from
// the write position, then the ready files from their start. wmu held.
func (l *Log) partFile(k int) (*segment, int64) {
	if k == 0 {
		return l.cur, l.wpos
	}
	return l.ready[k-1], 0
}

// appendBlank appends the end-of-file marker for the rem bytes left in a
// file, or nothing when fewer than BlankSize are left (readers roll by
// position alone there).
func appendBlank(buf []byte, rem int64) []byte {
	if rem < BlankSize {
		return buf
	}
	var b [BlankSize]byte
	be.PutUint32(b[:], uint32(rem))
	b[offMagic] = BlankMagic
	b[offVersion] = blankVersion
	return append(buf, b[:]...)
}

// rollsNeeded simulates the placement of the group to count the files it
// enters.
func (l *Log) rollsNeeded(group []*appendReq) int {
	rolls, pos, size := 0, l.wpos, l.cur.size
	for _, r := range group {
		for i := range r.ms {
			n := int64(EncodedSize(&r.ms[i]))
			if pos+n > size {
				rolls++
				pos = 0
				if rolls <= len(l.ready) {
					size = l.ready[rolls-1].size
				} else {
					size = l.opts.FileSize
				}
			}
			pos += n
		}
	}
	return rolls
}

// roll seals cur, whose end-of-file marker the caller has written, and
// moves the writer to the first ready file. reserve must have made it. wmu
// held.
func (l *Log) roll(now int64) {
	old := l.cur
	old.sealedAt.Store(now)
	// The mtime survives a restart as the file's age for retention: make
	// it the newest record's store time, which the time of the last pwrite
	// only approximates.
	t := time.UnixMilli(now)
	if err := os.Chtimes(old.path, t, t); err != nil {
		l.log.WithError(err).WithField("file", old.path).Warn("setting file mtime failed; retention age may be early")
	}

	next := l.ready[0]
	l.ready = l.ready[1:]
	l.segMu.Lock()
	segs := l.chain()
	grown := make([]*segment, len(segs), len(segs)+1)
	copy(grown, segs)
	l.setChain(append(grown, next))
	l.segMu.Unlock()

	l.cur = next
	l.wpos = 0
	l.stats.rolls.Add(1)
	l.requestNext()
	l.log.WithFields(logrus.Fields{"sealed": old.path, "next": next.path}).Debug("rolled to next file")
}

// queueNext returns the counter of the next queue offset of a partition.
func (l *Log) queueNext(topic string, id TopicID, partition int32) *int64 {
	return l.offsets.counter(topic, id, partition)
}

// SetQueueOffset sets the next logical offset Append assigns in a
// partition of one incarnation of a topic (the dispatcher restores them
// from the consume queues).
func (l *Log) SetQueueOffset(topic string, id TopicID, partition int32, next int64) {
	l.wmu.Lock()
	*l.queueNext(topic, id, partition) = next
	l.wmu.Unlock()
}

// NextQueueOffset returns the next logical offset Append would assign in a
// partition of one incarnation of a topic (0 for one never seen).
func (l *Log) NextQueueOffset(topic string, id TopicID, partition int32) int64 {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.offsets.get(topic, id, partition)
}

// DeleteQueue forgets the next offsets of every partition of one
// incarnation of a topic.
func (l *Log) DeleteQueue(topic string, id TopicID) {
	l.wmu.Lock()
	l.offsets.remove(topic, id)
	l.wmu.Unlock()
}
