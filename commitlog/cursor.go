package commitlog

import (
	"fmt"
	"sort"
)

// Cursor reads the log sequentially from a physical offset, for a tailing
// reader such as the dispatcher. Unlike Read it allocates nothing per
// record: it holds one reference on the file it is in until it leaves it,
// finds the next record by position instead of searching the chain, and
// reuses one Record. A Cursor is not safe for concurrent use.
//
// It skips the CRC check for records at or after the offset Recover
// started from: Recover verified every record from there to the end of the
// log in this run, and every record after that was encoded into the
// mapping by this process (and published by WriteOffset only once
// complete). The check would then only catch a bug of this process or a
// medium that went bad under a page evicted since recovery, and it costs
// about a third of the dispatcher's time per record. The structural checks
// (size, magic, version, field lengths, PhysOffset) remain, which is all
// the dispatcher's index entries depend on, and Read, which serves
// consumers, still verifies every CRC. Records before that offset are
// verified as Read would.
type Cursor struct {
	l   *Log
	seg *segment // file holding pos, with a reference; nil if not acquired
	pos int64
	rec Record
	// headers is set for the header cursor, which takes records from the
	// writer's hand-off: handed, from next on (handoff.go).
	headers bool
	handed  []handed
	next    int
}

// Cursor returns a Cursor positioned at phys, which must be a record
// boundary, an end-of-file marker or a file's zero tail.
func (l *Log) Cursor(phys int64) *Cursor { return &Cursor{l: l, pos: phys} }

// Offset is where the next record is read: the end of the last record
// returned (or the position given to Cursor or Reset).
func (c *Cursor) Offset() int64 { return c.pos }

// Reset moves the cursor to phys, as Cursor does.
func (c *Cursor) Reset(phys int64) {
	if c.seg != nil && (phys < c.seg.base || phys >= c.seg.end()) {
		c.drop()
	}
	c.pos = phys
	c.next = len(c.handed) // the log may have been cut under them
}

// Next returns the record at Offset and moves past it, rolling over
// end-of-file markers and zero tails. It returns nil and no error when
// nothing is written at Offset yet, ErrOutOfRange if Offset is no longer
// in the log, and an error wrapping ErrCorrupt if no valid record starts
// there, or ErrIO if the mapping faults. The Record and its slices (in the
// read-only mapping) are valid until the next call of Next, Reset or Close.
func (c *Cursor) Next() (*Record, error) {
	l := c.l
	for {
		if l.closed.Load() {
			return nil, ErrClosed
		}
		w := l.writeOff.Load()
		if c.pos >= w {
			return nil, nil
		}
		if c.headers && c.fromHandoff() {
			return &c.rec, nil
		}
		if c.seg == nil {
			if err := c.acquire(w); err != nil {
				return nil, err
			}
		}
		s := c.seg
		verify := c.pos < l.trustedFrom.Load()
		var blank bool
		var err error
		if ferr := guard(func() { blank, err = s.decodeAt(c.pos, w, &c.rec, l.intern, verify) }); ferr != nil {
			err = ferr
		}
		if blank {
			c.drop()
			c.pos = s.end()
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("commitlog: cursor at %d in %s: %w", c.pos, s.path, err)
		}
		c.pos += int64(c.rec.TotalSize)
		return &c.rec, nil
	}
}

// acquire takes a reference on the file holding pos; w is the write offset.
func (c *Cursor) acquire(w int64) error {
	segs := c.l.chain()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].end() > c.pos })
	if c.pos < 0 || i == len(segs) || c.pos < segs[i].base || !segs[i].tryAcquire() {
		return fmt.Errorf("commitlog: cursor at %d: min offset %d, write offset %d: %w", c.pos, c.l.MinOffset(), w, ErrOutOfRange)
	}
	c.seg = segs[i]
	return nil
}

func (c *Cursor) drop() {
	c.seg.release()
	c.seg = nil
}

// Close releases the cursor's file reference. The cursor may be used
// again (it re-acquires on Next); Close only makes it hold nothing.
func (c *Cursor) Close() {
	if c.seg != nil {
		c.drop()
	}
}
