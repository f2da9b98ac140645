package commitlog

import "sync"

// Group commit of appends. The writer's cost per call is mostly fixed (a
// pwrite system call and the ext4 write path around the copy: about 1.5 us,
// as much as copying 16 KiB), so callers that arrive while a write is in
// flight are written by the next one together: each call queues its batch
// and then takes the writer lock; whoever gets the lock writes every batch
// queued by then in arrival order, and a caller whose batch was written
// meanwhile finds it done and returns. Nothing waits for anything but the
// writer lock it waited for before, so a lone appender pays only the
// queue's lock. The bytes written are those of the same batches written one
// after the other: the format, the offsets (contiguous per batch) and what
// a crash can leave (a torn tail after the flushed mark, cut by Recover)
// do not change, and WriteOffset is published once the whole group is
// written, so no reader sees part of it.

// maxGroupBytes bounds the encoded bytes of one group write; the batches
// behind it are written by their owners.
const maxGroupBytes = 4 << 20

// appendReq is one AppendBatchTo call waiting for the writer. The fields
// after ms are written under wmu by whoever writes the batch.
type appendReq struct {
	ms     []Message
	size   int64 // encoded bytes
	inline int64 // of size, those encoded into the writer's buffer (writev.go)
	dst    []Position
	kept   int // len(dst) before the batch, to give its positions back
	err    error
	done   bool
}

var appendReqPool = sync.Pool{New: func() any { return new(appendReq) }}

// appendQueued queues ms (size encoded bytes, inline of them into the
// writer's buffer, validated) and takes the writer lock; it writes what is
// queued unless another writer has already written ms.
func (l *Log) appendQueued(dst []Position, ms []Message, size, inline int64) ([]Position, error) {
	r := appendReqPool.Get().(*appendReq)
	r.ms, r.size, r.inline, r.dst = ms, size, inline, dst
	l.qmu.Lock()
	l.queue = append(l.queue, r)
	l.qmu.Unlock()

	l.wmu.Lock()
	wrote := false
	for !r.done {
		wrote = l.writeQueued() || wrote
	}
	dst, err := r.dst, r.err
	l.wmu.Unlock()
	*r = appendReq{}
	appendReqPool.Put(r)

	if wrote {
		l.notifyAppended()
		if l.opts.FlushMode == FlushSync && l.flushHolds.Load() == 0 {
			l.kickFlush()
		}
	}
	return dst, err
}

// writeQueued writes the queued batches from the oldest on, up to
// maxGroupBytes (at least one batch), and marks them done; wmu held. It
// reports whether anything was written.
func (l *Log) writeQueued() bool {
	l.qmu.Lock()
	n, size := 0, int64(0)
	for n < len(l.queue) && (n == 0 || size+l.queue[n].size <= maxGroupBytes) {
		size += l.queue[n].size
		n++
	}
	group := append(l.group[:0], l.queue[:n]...)
	rest := copy(l.queue, l.queue[n:])
	clear(l.queue[rest:])
	l.queue = l.queue[:rest]
	l.qmu.Unlock()

	wrote := l.writeGroup(group)
	for _, r := range group {
		r.done = true
	}
	clear(group)
	l.group = group[:0]
	return wrote
}
