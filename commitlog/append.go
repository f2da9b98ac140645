package commitlog

import (
	"fmt"
	"os"
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
	if fault := guard(func() { dst = l.encodeBatch(dst, ms, now) }); fault != nil {
		// A store into the mapping faulted: the file was truncated under
		// the log or the disk failed. Nothing of the batch is published;
		// like a failed flush, it stops the log until a restart.
		err := l.fail(fmt.Errorf("commitlog: append at %d: %w", at, fault), l.flushed.Load(), l.writeOff.Load())
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

// encodeBatch assigns each message its offsets and encodes it into the
// mapping, rolling into the files reserve made; wmu held, under guard.
func (l *Log) encodeBatch(dst []Position, ms []Message, now int64) []Position {
	for i := range ms {
		m := &ms[i]
		n := int64(EncodedSize(m))
		if l.wpos+n > l.cur.size {
			l.roll(now)
		}
		next := l.queueNext(m.Topic, m.TopicID, m.Partition)
		q := *next
		count := m.Count
		if count == 0 {
			count = 1
		}
		*next = q + int64(count)
		phys := l.cur.base + l.wpos
		encodeInto(l.cur.m[l.wpos:l.wpos+n:l.wpos+n], m, phys, q, now)
		l.wpos += n
		dst = append(dst, Position{PhysOffset: phys, Size: int32(n), QueueOffset: q, Count: count, StoreTimestamp: now})
	}
	return dst
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

// roll seals cur, filling its tail with the end-of-file marker, and moves
// the writer to the first ready file. reserve must have made it. wmu held.
func (l *Log) roll(now int64) {
	old := l.cur
	if rem := old.size - l.wpos; rem >= BlankSize {
		b := old.m[l.wpos : l.wpos+BlankSize]
		be.PutUint32(b, uint32(rem))
		b[offMagic] = BlankMagic
		b[offVersion] = blankVersion
		be.PutUint16(b[offFlags:], 0)
	}
	old.sealedAt.Store(now)
	// The mtime survives a restart as the file's age for retention; page
	// writes through a pre-faulted mapping do not update it.
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
