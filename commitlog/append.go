package commitlog

import (
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
// reusing dst appends without allocating.
func (l *Log) AppendBatchTo(dst []Position, ms []Message) ([]Position, error) {
	var batch int64
	for i := range ms {
		n, err := validate(&ms[i])
		if err != nil {
			return dst, fmt.Errorf("commitlog: append message %d: %w", i, err)
		}
		if n > l.opts.MaxRecordSize {
			return dst, fmt.Errorf("commitlog: append message %d: %d bytes, limit %d: %w", i, n, l.opts.MaxRecordSize, ErrTooLarge)
		}
		batch += int64(n)
	}
	if len(ms) == 0 {
		return dst, nil
	}

	l.wmu.Lock()
	if l.closed.Load() {
		l.wmu.Unlock()
		return dst, ErrClosed
	}
	if !l.recovered {
		l.wmu.Unlock()
		return dst, ErrNotRecovered
	}
	if err := l.failure(); err != nil {
		l.wmu.Unlock()
		return dst, fmt.Errorf("commitlog: append: %w", err)
	}
	if l.wpos+batch > l.cur.size {
		if err := l.reserve(l.rollsNeeded(ms)); err != nil {
			l.wmu.Unlock()
			return dst, fmt.Errorf("commitlog: append: %w", err)
		}
	}
	now := time.Now().UnixMilli()
	n0, at := len(dst), l.cur.base+l.wpos
	dst, err := l.encodeBatch(dst, ms, now)
	if err != nil {
		// The write failed (the disk, or the file cut under the log).
		// Nothing of the batch is published; like a failed flush, it stops
		// the log until a restart, whose recovery reads back what the file
		// holds.
		err = l.fail(fmt.Errorf("commitlog: append at %d: %w", at, err), l.flushed.Load(), l.writeOff.Load())
		l.wmu.Unlock()
		return dst[:n0], err
	}
	l.writeOff.Store(l.cur.base + l.wpos)
	l.wmu.Unlock()

	l.notifyAppended()
	if l.opts.FlushMode == FlushSync {
		l.kickFlush()
	}
	return dst, nil
}

// maxKeptWriteBuf bounds the encoding buffer the writer keeps between
// batches; a larger batch gets a buffer of its own.
const maxKeptWriteBuf = 4 << 20

// encodeBatch assigns each message its offsets and encodes the batch into
// l.wbuf, then writes it to the file with one pwrite per file it enters
// (the end-of-file marker of a file it leaves goes with that file's
// write), rolling into the files reserve made; wmu held.
func (l *Log) encodeBatch(dst []Position, ms []Message, now int64) ([]Position, error) {
	buf, start := l.wbuf[:0], l.wpos
	defer func() {
		if cap(buf) <= maxKeptWriteBuf {
			l.wbuf = buf
		}
	}()
	for i := range ms {
		m := &ms[i]
		n := int64(EncodedSize(m))
		if l.wpos+n > l.cur.size {
			buf = appendBlank(buf, l.cur.size-l.wpos)
			if err := l.cur.writeAt(buf, start); err != nil {
				return dst, err
			}
			l.roll(now)
			buf, start = buf[:0], 0
		}
		next := l.queueNext(m.Topic, m.TopicID, m.Partition)
		q := *next
		count := m.Count
		if count == 0 {
			count = 1
		}
		*next = q + int64(count)
		phys := l.cur.base + l.wpos
		buf = Encode(slices.Grow(buf, int(n)), m, phys, q, now)
		l.wpos += n
		dst = append(dst, Position{PhysOffset: phys, Size: int32(n), QueueOffset: q, Count: count, StoreTimestamp: now})
	}
	return dst, l.cur.writeAt(buf, start)
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

// rollsNeeded simulates the placement of ms to count the files it enters.
func (l *Log) rollsNeeded(ms []Message) int {
	rolls, pos, size := 0, l.wpos, l.cur.size
	for i := range ms {
		n := int64(EncodedSize(&ms[i]))
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
// Consecutive messages usually share a partition, so the last one is cached.
func (l *Log) queueNext(topic string, id TopicID, partition int32) *int64 {
	if l.lastNext != nil && l.lastKey.partition == partition && l.lastKey.id == id && l.lastKey.topic == topic {
		return l.lastNext
	}
	k := queueKey{topic: topic, id: id, partition: partition}
	next := l.offsets[k]
	if next == nil {
		next = new(int64)
		l.offsets[k] = next
	}
	l.lastKey, l.lastNext = k, next
	return next
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
	if next := l.offsets[queueKey{topic: topic, id: id, partition: partition}]; next != nil {
		return *next
	}
	return 0
}

// DeleteQueue forgets the next offsets of every partition of one
// incarnation of a topic.
func (l *Log) DeleteQueue(topic string, id TopicID) {
	l.wmu.Lock()
	for k := range l.offsets {
		if k.topic == topic && k.id == id {
			delete(l.offsets, k)
		}
	}
	l.lastKey, l.lastNext = queueKey{}, nil
	l.wmu.Unlock()
}
