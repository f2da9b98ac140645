package dispatcher

import "github.com/unilog/unilog/commitlog"

// readAhead is how many records a pass reads before it indexes them. At
// 1,000 and 10,000 partitions every record goes to another queue, whose
// memory and tail page are out of the cache and the TLB: touching the
// queues of a window of records first and prefetching the slots they are
// about to write (warm) lets those misses overlap, where indexing one
// record after the other waited for each in turn.
const readAhead = 16

// readWindow reads up to readAhead records that start before limit into
// d.window, keeping what Index needs of each. It returns them, and the
// error that stopped it, if any, after the records read before it.
func (d *Dispatcher) readWindow(limit int64) ([]commitlog.Record, error) {
	w := d.window[:0]
	for len(w) < readAhead && d.cursor.Offset() < limit {
		r, err := d.cursor.Next()
		if err != nil {
			return w, err
		}
		if r == nil {
			break
		}
		w = append(w, *r)
		// The cursor reuses these for its next record.
		last := &w[len(w)-1]
		last.Key, last.Headers, last.Body = nil, nil, nil
	}
	d.window = w
	return w, nil
}

// warm touches the queue r will be indexed into, if the cache holds it
// already, and nothing else: no lookup that could change what Index does.
func (d *Dispatcher) warm(r *commitlog.Record) {
	tq := d.cache.peek(r.Topic, r.TopicID)
	if tq == nil {
		return
	}
	if q := tq.queues.Get(r.Partition).q; q != nil {
		d.warmed += q.Prefetch()
	}
}
