package commitlog

import (
	"sync"
	"sync/atomic"
)

// The writer's hand-off to the header cursor.
//
// The dispatcher reads the header of every record right behind the writer.
// Read through the mapping, the first load from each page of the log costs
// a fault of the mapping's page table entry, which the writer's pwrite
// never made: on the 2-core virtual machine of docs/BENCHMARKS.md, whose
// host shadows every new entry, that first load was a tenth of the
// broker's CPU at 10,000 partitions, where records are about 1 KiB and
// every page holds headers (commitlog.isBlank, the first byte read, held
// most of it). The writer encoded those headers itself a moment before,
// so it hands a copy of each to the log's header cursor (HeaderCursor),
// which takes a record from the hand-off when the hand-off's next record
// starts exactly at the cursor's position, and reads the mapping as before
// otherwise: records recovered from the files or written by replication
// (AppendRaw), end-of-file markers, and records the hand-off dropped
// because the cursor had fallen maxHandoff records behind. A header cursor
// so never sees a record the log does not hold at that position: Truncate
// and Restart empty the hand-off, and the cursor's owner resets the cursor
// (Reset drops what it took) when the log is cut under it.

// maxHandoff bounds the records waiting in the hand-off; past it the
// writer drops them and the cursor reads them from the mapping.
const maxHandoff = 16384

// handed is what the hand-off keeps of a record: its header without the
// CRC, which the writer computes in the encoding. Position is what the
// append returned for it.
type handed struct {
	Position
	ProducerTimestamp int64
	Partition         int32
	Flags             uint16
	Topic             string
	TopicID           TopicID
}

type handoff struct {
	on   atomic.Bool // a header cursor exists
	mu   sync.Mutex
	recs []handed
}

// put hands over the headers of records the writer has written, before
// it publishes them (writeOff); wmu held.
func (h *handoff) put(recs []handed) {
	if len(recs) == 0 {
		return
	}
	h.mu.Lock()
	if len(h.recs)+len(recs) <= maxHandoff {
		h.recs = append(h.recs, recs...)
	}
	h.mu.Unlock()
}

// take returns what was handed over and keeps spare's array for more.
func (h *handoff) take(spare []handed) []handed {
	clear(spare) // the topic names of deleted topics must not stay reachable
	h.mu.Lock()
	recs := h.recs
	h.recs = spare[:0]
	h.mu.Unlock()
	return recs
}

// reset drops everything handed over: the log is cut back; wmu held.
func (h *handoff) reset() {
	h.mu.Lock()
	clear(h.recs)
	h.recs = h.recs[:0]
	h.mu.Unlock()
}

// HeaderCursor returns a Cursor positioned at phys, as Cursor does, that
// takes the records this process appends from the writer's hand-off
// instead of the mapping. Those come with Key, Headers, Body and CRC unset
// and Version the current one: it is for a reader of headers only, and a
// log has one (the dispatcher): a second would take records from the first.
func (l *Log) HeaderCursor(phys int64) *Cursor {
	l.handoff.on.Store(true)
	return &Cursor{l: l, pos: phys, headers: true}
}

// fromHandoff moves the cursor past the hand-off's record at its position
// into c.rec, if the hand-off has one.
func (c *Cursor) fromHandoff() bool {
	for range 2 {
		for c.next < len(c.handed) && c.handed[c.next].PhysOffset < c.pos {
			c.next++
		}
		if c.next < len(c.handed) {
			break
		}
		c.handed, c.next = c.l.handoff.take(c.handed), 0
	}
	if c.next == len(c.handed) || c.handed[c.next].PhysOffset != c.pos {
		return false
	}
	h := &c.handed[c.next]
	c.next++
	c.rec = Record{
		TotalSize:         h.Size,
		Version:           Version,
		Flags:             h.Flags,
		PhysOffset:        h.PhysOffset,
		QueueOffset:       h.QueueOffset,
		Count:             h.Count,
		Partition:         h.Partition,
		StoreTimestamp:    h.StoreTimestamp,
		ProducerTimestamp: h.ProducerTimestamp,
		Topic:             h.Topic,
		TopicID:           h.TopicID,
	}
	c.pos = h.End()
	if c.seg != nil && c.pos >= c.seg.end() {
		// A record that ends its file: the mapping path, which rolls by
		// the file it holds, must not find the cursor past that file.
		c.drop()
	}
	c.l.stats.handedOff.Add(1)
	return true
}
