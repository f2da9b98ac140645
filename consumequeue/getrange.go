package consumequeue

// GetRange appends to dst the entries at offsets [from, to) that one file
// (or the journal, for a queue not yet promoted) holds, stopping at the
// first it cannot read: for a reader of a run of entries (a fetch warming
// a partition's next batches) it takes a file's lock and fault guard once
// instead of once per entry, as Get does. Entries it does not append,
// past a file's end, outside the queue's range, damaged or not mapped at
// the moment, are for Get to read or report.
func (q *Queue) GetRange(dst []Entry, from, to int64) []Entry {
	if q.closed.Load() || from < q.min.Load() {
		return dst
	}
	to = min(to, q.max.Load())
	if from >= to {
		return dst
	}
	if q.small.Load() {
		return q.sq.getRange(dst, from, to)
	}
	f := fileFor(q.snapshot(), from, q.epf)
	if f == nil {
		return dst
	}
	return f.readRange(dst, from, min(to, f.base+q.epf))
}

// readRange appends the entries at offsets [from, to) of the file, which
// holds them all, up to the first that does not decode, if it is mapped.
func (f *file) readRange(dst []Entry, from, to int64) []Entry {
	f.mu.RLock()
	if f.m == nil {
		f.mu.RUnlock()
		return dst
	}
	// A fault ends the run: Get reports it.
	_ = guard(f.path, func() {
		for off := from; off < to; off++ {
			e, ok := decodeEntry(f.slotBytes(int(off-f.base)), off)
			if !ok {
				return
			}
			dst = append(dst, e)
		}
	})
	f.mu.RUnlock()
	f.lru.use(f) // after the unlock, as read: the LRU may close the file
	return dst
}
