package store

import "github.com/unilog/unilog/consumequeue"

// PrefetchRun is the most offsets Prefetch warms at once: enough to keep
// the CPU's outstanding misses busy, few enough that a fetch whose budget
// ends sooner wastes little.
const PrefetchRun = 16

// Prefetch warms the records holding offsets [from, to) of the partition,
// at most PrefetchRun of them, for the ViewBatch calls that follow
// (commitlog.Log.Touch): at 10,000 partitions a partition's batches lie
// megabytes apart in the log, and the first load of each, one at a time,
// was the largest cost of a fetch in user space. Offsets the partition
// does not hold are skipped: ViewBatch reports them.
func (h *partition) Prefetch(from, to int64) {
	if h.q == nil {
		return
	}
	var (
		ebuf [PrefetchRun]consumequeue.Entry
		pbuf [PrefetchRun]int64
	)
	phys := pbuf[:0]
	for _, e := range h.q.GetRange(ebuf[:0], from, min(to, from+PrefetchRun)) {
		// The offsets of one batch share its record.
		if n := len(phys); n == 0 || phys[n-1] != e.PhysOffset {
			phys = append(phys, e.PhysOffset)
		}
	}
	h.s.log.Touch(phys)
}
