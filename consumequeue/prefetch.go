package consumequeue

// Prefetch loads what AppendRange reads first of q, the queue's bounds and
// its small-queue state, and returns a value of no meaning that the
// caller must keep somewhere, or the compiler drops the loads. An
// appender about to append to many queues, each one's memory out of the
// cache (the dispatcher at 10,000 partitions), prefetches the next few
// first: their cache misses then overlap instead of following one another.
// It reads only what no writer changes after the queue is published (sq and
// its qid) or atomics, so it may run beside any reader or writer.
func (q *Queue) Prefetch() int64 {
	v := q.min.Load() + q.max.Load()
	if q.sq != nil {
		v += int64(q.sq.qid)
	}
	return v
}
