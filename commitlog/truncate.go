package commitlog

import (
	"fmt"
	"os"
	"sort"

	"github.com/sirupsen/logrus"
)

// Truncate removes every record at or after to while the log runs: a
// follower whose leader changed cuts the tail the new leader never had
// (from the epoch file), and a deposed leader does the same before it
// follows. to must be a record boundary (or an end-of-file marker or zero
// tail) between MinOffset and WriteOffset. The rest of to's file is zeroed
// as recovery zeroes a torn tail, later files are deleted, the change is
// made durable, the flushed mark (see "Flushed mark") goes back to to, and
// the queue-offset counters of the partitions that lose records go back to
// the first offset removed, so the next append (or AppendRaw) reuses them.
// A caller that records its own flushed mark (the dispatcher's checkpoint)
// must lower it too.
//
// Truncate is for the replicated tail above the high watermark, which no
// consumer has been served: a View or Cursor positioned past to sees its
// bytes zeroed under it, and a tailing reader (the dispatcher) must be
// repositioned by its owner.
func (l *Log) Truncate(to int64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.writable("truncate"); err != nil {
		return err
	}
	w := l.cur.base + l.wpos
	if to == w {
		return nil
	}
	// No flush may record a mark past the cut while it is made.
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.segMu.Lock()
	defer l.segMu.Unlock()
	segs := l.chain()
	if to > w || to < segs[0].base {
		return fmt.Errorf("commitlog: truncate to %d: min offset %d, write offset %d: %w", to, segs[0].base, w, ErrOutOfRange)
	}
	j := sort.Search(len(segs), func(i int) bool { return segs[i].end() > to })
	s := segs[j]
	var next map[queueKey]int64
	var err error
	if fault := guard(func() {
		if err = l.isBoundary(s, to, w); err == nil {
			next, err = l.firstOffsetsFrom(segs[j:], to, w)
		}
	}); fault != nil {
		return fmt.Errorf("commitlog: truncate to %d: %w", to, fault)
	}
	if err != nil {
		return err
	}

	removed := segs[j+1 : len(segs) : len(segs)]
	if len(removed) > 0 {
		// The files allocated ahead follow the old last file.
		ahead, err := l.dropPending()
		for _, r := range ahead {
			r.release()
		}
		if err != nil {
			return fmt.Errorf("commitlog: truncate to %d: %w", to, err)
		}
	}
	for _, r := range removed {
		if err := os.Remove(r.path); err != nil {
			return fmt.Errorf("commitlog: truncate to %d: remove %s: %w", to, r.path, err)
		}
	}
	l.setChain(append([]*segment(nil), segs[:j+1]...))
	for _, r := range removed {
		r.release()
	}
	var zeroed int64
	if fault := guard(func() { zeroed, err = s.zeroFrom(to - s.base) }); fault != nil {
		err = fault
	}
	if err != nil {
		return l.fail(fmt.Errorf("commitlog: truncate to %d: %w", to, err), l.flushed.Load(), w)
	}
	if err := l.opts.FS.Fdatasync(s.f); err != nil {
		return fmt.Errorf("commitlog: truncate to %d: sync %s: %w", to, s.path, err)
	}
	if len(removed) > 0 {
		if err := l.opts.FS.SyncDir(l.opts.Dir); err != nil {
			return fmt.Errorf("commitlog: truncate to %d: %w", to, err)
		}
	}

	for k, v := range next {
		*l.queueNext(k.topic, k.id, k.partition) = v
	}
	l.cur, l.wpos = s, to-s.base
	l.handoff.reset()
	l.writeOff.Store(to)
	// The bytes written again from to on are cached afresh; the next
	// drops must reach them, from the whole zero chunk they start in.
	l.droppedTo = min(l.droppedTo, chunkFloor(l.chain(), to))
	if l.flushed.Load() > to {
		l.flushed.Store(to)
		if err := l.lowerMark(to); err != nil {
			return l.fail(err, to, to)
		}
	}
	l.requestNext()
	l.log.WithFields(logrus.Fields{"to": to, "from": w, "removed_files": len(removed), "zeroed_bytes": zeroed}).Warn("commit log truncated")
	return nil
}

// isBoundary checks that to starts a valid record, an end-of-file marker
// or a zero tail in s. w is the write offset.
func (l *Log) isBoundary(s *segment, to, w int64) error {
	pos := to - s.base
	if rem := s.size - pos; rem < BlankSize || isBlank(s.ro[pos:], rem) {
		return nil
	}
	var rec Record
	if err := decodeInto(s.ro[pos:min(s.size, w-s.base)], &rec, l.intern, true); err != nil {
		return fmt.Errorf("commitlog: truncate to %d: not a record boundary: %w", to, err)
	}
	if rec.PhysOffset != to {
		return fmt.Errorf("commitlog: truncate to %d: record there says it is at %d: %w", to, rec.PhysOffset, ErrCorrupt)
	}
	return nil
}

// firstOffsetsFrom returns, for every partition with a record in [to, w),
// the queue offset of its first record there: its counter after the cut.
func (l *Log) firstOffsetsFrom(segs []*segment, to, w int64) (map[queueKey]int64, error) {
	next := make(map[queueKey]int64)
	sc := scanner{intern: l.intern, fn: func(r *Record) error {
		k := queueKey{topic: r.Topic, id: r.TopicID, partition: r.Partition}
		if _, seen := next[k]; !seen {
			next[k] = r.QueueOffset
		}
		return nil
	}}
	end, err := sc.scan(segs, to)
	if err != nil {
		return nil, err
	}
	if end < w {
		return nil, fmt.Errorf("commitlog: truncate to %d: the log between it and the write offset %d ends at %d (%v): %w", to, w, end, sc.stop, ErrCorrupt)
	}
	return next, nil
}

// Restart empties the log and starts it again at at, keeping the queue
// counters: a follower too far behind its leader, whose files retention
// has deleted, starts again at the leader's MinOffset (a file base there,
// so both logs roll at the same places). Every file is deleted.
func (l *Log) Restart(at int64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.writable("restart"); err != nil {
		return err
	}
	if at < 0 {
		return fmt.Errorf("commitlog: restart at %d: %w", at, ErrOutOfRange)
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.segMu.Lock()
	defer l.segMu.Unlock()
	ahead, err := l.dropPending()
	for _, s := range ahead {
		s.release()
	}
	if err != nil {
		return fmt.Errorf("commitlog: restart at %d: %w", at, err)
	}
	old := l.chain()
	for _, s := range old {
		if err := os.Remove(s.path); err != nil {
			return fmt.Errorf("commitlog: restart at %d: remove %s: %w", at, s.path, err)
		}
	}
	l.setChain(nil)
	for _, s := range old {
		s.release()
	}
	s, err := createSegment(l.opts.FS, l.opts.Dir, at, l.opts.FileSize, &l.mapped)
	if err != nil {
		return fmt.Errorf("commitlog: restart at %d: %w", at, err)
	}
	// The removals must not come back after a crash beside the new file;
	// the new file's allocation is made durable by the first flush.
	if err := l.opts.FS.SyncDir(l.opts.Dir); err != nil {
		return fmt.Errorf("commitlog: restart at %d: %w", at, err)
	}
	l.setChain([]*segment{s})
	l.cur, l.wpos = s, 0
	l.handoff.reset()
	l.writeOff.Store(at)
	l.flushed.Store(at)
	if err := l.lowerMark(at); err != nil {
		return l.fail(err, at, at)
	}
	l.requestNext()
	l.log.WithFields(logrus.Fields{"at": at, "removed_files": len(old)}).Warn("commit log restarted empty")
	return nil
}

// writable reports why the writer may not change the log: closed, not
// recovered yet, or stopped by a failed write. wmu held.
func (l *Log) writable(op string) error {
	switch {
	case l.closed.Load():
		return ErrClosed
	case !l.recovered:
		return ErrNotRecovered
	}
	if err := l.failure(); err != nil {
		return fmt.Errorf("commitlog: %s: %w", op, err)
	}
	return nil
}
