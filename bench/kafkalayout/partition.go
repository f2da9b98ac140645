package kafkalayout

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/unilog/unilog/commitlog"
)

// partition is one <topic>-<n> directory: Kafka's UnifiedLog for one replica.
type partition struct {
	topic string
	id    int32
	dir   string
	opts  *Options
	l     *Log

	mu       sync.Mutex // the append lock
	segments []*segment // by base offset; the last is active
	next     int64      // log end offset
	dirty    bool       // written since the flusher last took it
	buf      []byte
	pending  []pendingRecord
}

type pendingRecord struct {
	pos, lastOffset int64
	size            int
	storeTS         int64
}

func (p *partition) active() *segment { return p.segments[len(p.segments)-1] }

// append writes ms as one batch: offsets and timestamp assigned under the
// lock, one pwrite into the active segment. It returns the first offset.
func (p *partition) append(ms []commitlog.Message) (int64, error) {
	p.mu.Lock()
	first, seg, err := p.appendLocked(ms)
	p.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if p.opts.Flush == FlushSync {
		if err := seg.flush(); err != nil {
			return 0, err
		}
	}
	return first, nil
}

func (p *partition) appendLocked(ms []commitlog.Message) (int64, *segment, error) {
	var n, count int64
	for i := range ms {
		n += int64(commitlog.EncodedSize(&ms[i]))
		count += int64(max(ms[i].Count, 1))
	}
	if !p.active().fits(n, p.next+count-1, p.opts.SegmentBytes) {
		if err := p.roll(); err != nil {
			return 0, nil, err
		}
	}
	seg := p.active()
	storeTS := time.Now().UnixMilli()
	buf := p.buf[:0]
	pending := p.pending[:0]
	off := p.next
	for i := range ms {
		pos := seg.size + int64(len(buf))
		buf = commitlog.Encode(buf, &ms[i], pos, off, storeTS)
		c := int64(max(ms[i].Count, 1))
		pending = append(pending, pendingRecord{pos: pos, lastOffset: off + c - 1, size: int(seg.size + int64(len(buf)) - pos), storeTS: storeTS})
		off += c
	}
	p.buf, p.pending = buf, pending
	if _, err := seg.log.WriteAt(buf, seg.size); err != nil {
		// Cut whatever part of the batch reached the file so that the next
		// append and a reopen see the log end where the offsets say.
		terr := seg.log.Truncate(seg.size)
		return 0, nil, errors.Join(fmt.Errorf("kafkalayout: append %s: %w", seg.log.Name(), err), terr)
	}
	for _, r := range pending {
		seg.noteRecord(r.pos, r.lastOffset, r.size, r.storeTS, p.opts.IndexIntervalBytes)
	}
	first := p.next
	seg.size += int64(len(buf))
	p.next = off
	p.dirty = true
	return first, seg, nil
}

// roll starts a new active segment at the log end offset. The old one is
// trimmed now and fsynced in the background, as UnifiedLog.roll does.
func (p *partition) roll() error {
	old := p.active()
	seg, err := createSegment(p.dir, p.next, p.opts)
	if err != nil {
		return err
	}
	if err := old.deactivate(); err != nil {
		seg.close()
		return err
	}
	p.segments = append(p.segments, seg)
	p.l.background(old.flush)
	return nil
}

// takeDirty returns the active segment if the partition was written since
// the last call, for the interval flusher.
func (p *partition) takeDirty() *segment {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.dirty {
		return nil
	}
	p.dirty = false
	return p.active()
}

func (p *partition) flush() error {
	p.mu.Lock()
	seg := p.active()
	p.dirty = false
	p.mu.Unlock()
	return seg.flush()
}

// readStart finds where a scan for offset begins: the segment holding it and
// the index position, plus a snapshot of the sizes the scan may cover.
func (p *partition) readStart(offset int64) (segs []*segment, ends []int64, pos int64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if offset < p.segments[0].base || offset > p.next {
		return nil, nil, 0, fmt.Errorf("kafkalayout: %s-%d offset %d outside [%d, %d]: %w",
			p.topic, p.id, offset, p.segments[0].base, p.next, ErrOutOfRange)
	}
	i := sort.Search(len(p.segments), func(i int) bool { return p.segments[i].base > offset }) - 1
	segs = p.segments[i:]
	ends = make([]int64, len(segs))
	for j, s := range segs {
		ends[j] = s.size
	}
	return segs, ends, int64(segs[0].index.lookup(int32(offset - segs[0].base))), nil
}

// read calls fn with whole records from offset on until maxBytes of records
// were delivered (at least one record when any exists), like a fetch.
func (p *partition) read(offset int64, maxBytes int, fn func(*commitlog.Record) error) (int64, error) {
	segs, ends, pos, err := p.readStart(offset)
	if err != nil {
		return offset, err
	}
	next, delivered := offset, 0
	for i, seg := range segs {
		sc := newScanner(seg.log, pos, ends[i], min(max(maxBytes, 4096), 1<<20))
		for {
			rec, n, err := sc.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return next, err
			}
			if rec.QueueOffset+int64(max(rec.Count, 1)) <= next {
				continue
			}
			if err := fn(rec); err != nil {
				return next, err
			}
			next = rec.QueueOffset + int64(max(rec.Count, 1))
			if delivered += n; delivered >= maxBytes {
				return next, nil
			}
		}
		pos = 0
	}
	return next, nil
}

func (p *partition) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	act := p.active()
	errs = append(errs, act.deactivate(), act.flush())
	for _, s := range p.segments {
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}
