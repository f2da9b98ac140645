package store

import (
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
)

// PrefetchRun is the most offsets Prefetch warms at once: enough to keep
// the CPU's outstanding misses busy, few enough that a fetch whose budget
// ends sooner wastes little.
const PrefetchRun = 16

// Run holds the consume-queue entries of a run of a partition's offsets
// that Prefetch read, for the ViewRun calls that follow: a fetch reads
// each entry once, under one lock for the run, instead of once more per
// batch. The zero Run is empty; a reader keeps one and reuses it.
type Run struct {
	ents [PrefetchRun]consumequeue.Entry
	from int64 // the offset of ents[0]
	n    int
}

// entry returns the run's entry for offset, if it holds it.
func (r *Run) entry(offset int64) (consumequeue.Entry, bool) {
	i := offset - r.from
	if i < 0 || i >= int64(r.n) {
		return consumequeue.Entry{}, false
	}
	return r.ents[i], true
}

// Prefetch reads into run the consume-queue entries of offsets [from, to),
// at most PrefetchRun of them, and warms their records
// (commitlog.Log.Touch) for the ViewRun calls that follow: at 10,000
// partitions a partition's batches lie megabytes apart in the log, and the
// first load of each, one at a time, was the largest cost of a fetch in
// user space. Offsets the partition does not hold are left out of the run:
// ViewRun reads them as ViewBatch does, and reports them.
func (h *partition) Prefetch(run *Run, from, to int64) {
	run.n = 0
	if h.q == nil {
		return
	}
	ents := h.q.GetRange(run.ents[:0], from, min(to, from+PrefetchRun))
	run.from, run.n = from, len(ents)
	var pbuf [PrefetchRun]int64
	phys := pbuf[:0]
	for _, e := range ents {
		// The offsets of one batch share its record.
		if n := len(phys); n == 0 || phys[n-1] != e.PhysOffset {
			phys = append(phys, e.PhysOffset)
		}
	}
	h.s.log.Touch(phys)
}

// ViewRun is ViewBatch with the entry of offset taken from run when
// Prefetch read it there. The record is checked as ViewBatch checks it: an
// entry gone stale since (the queue truncated under the run) reads as a
// record of another partition or offset, an error, never as data.
func (h *partition) ViewRun(run *Run, offset int64) (BatchView, error) {
	e, ok := run.entry(offset)
	if !ok {
		return h.ViewBatch(offset)
	}
	var v commitlog.View
	if err := h.readEntry(offset, e, &v); err != nil {
		return BatchView{}, err
	}
	return batchView(&v), nil
}
