package producerstate

// AbortedTxn is an aborted transaction's span in one partition: its
// producer, the offset of its first batch there and of its abort marker.
// A read_committed fetch gets those overlapping what it reads (Kafka's
// aborted-transaction index), so the consumer can drop their records.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// BeginTxn notes a transactional batch stored at base: the first of its
// producer's transaction opens the transaction there.
func (p *Partition) BeginTxn(producerID, base int64) {
	if _, ok := p.Open[producerID]; ok {
		return
	}
	if p.Open == nil {
		p.Open = make(map[int64]int64)
	}
	p.Open[producerID] = base
	p.changed()
}

// EndTxn applies a commit or abort marker of the producer, written at
// epoch and stored at offset. A marker of a newer epoch than the
// producer's batches here fences the older epoch in this partition too
// (the coordinator bumps the epoch when it aborts for a new producer or a
// timeout). A marker for a producer with no open transaction here changes
// nothing else (a coordinator that crashed before recording the
// transaction's end writes its markers again), and replaying an abort
// already in the index adds it once.
func (p *Partition) EndTxn(producerID int64, epoch int16, commit bool, offset int64) {
	if ps := p.Producer(producerID); ps != nil && epoch > ps.Epoch {
		// The batches stay for the snapshot, which keeps at least one a
		// producer; a batch of a newer epoch still starts at sequence 0.
		ps.Epoch = epoch
		p.changed()
	}
	first, ok := p.Open[producerID]
	if !ok {
		return
	}
	delete(p.Open, producerID)
	p.changed()
	if commit {
		return
	}
	for _, a := range p.Aborted {
		if a.ProducerID == producerID && a.FirstOffset == first {
			return
		}
	}
	p.Aborted = append(p.Aborted, AbortedTxn{ProducerID: producerID, FirstOffset: first, LastOffset: offset})
}

// FirstUnstable is the first offset of the oldest open transaction, which
// the last stable offset may not pass; ok is false with none open.
func (p *Partition) FirstUnstable() (offset int64, ok bool) {
	for _, first := range p.Open {
		if !ok || first < offset {
			offset, ok = first, true
		}
	}
	return offset, ok
}

// AbortedIn appends to dst the aborted transactions that overlap the
// offsets [from, to).
func (p *Partition) AbortedIn(dst []AbortedTxn, from, to int64) []AbortedTxn {
	for _, a := range p.Aborted {
		if a.LastOffset >= from && a.FirstOffset < to {
			dst = append(dst, a)
		}
	}
	return dst
}

// DropAbortedBefore forgets aborted transactions that ended below the
// partition's log start: no fetch reads them any more.
func (p *Partition) DropAbortedBefore(start int64) {
	n := 0
	for _, a := range p.Aborted {
		if a.LastOffset >= start {
			p.Aborted[n] = a
			n++
		}
	}
	if n < len(p.Aborted) {
		clear(p.Aborted[n:])
		p.Aborted = p.Aborted[:n]
		p.changed()
	}
}

// TxnFrom reports whether the state holds a transaction opened, or
// aborted, at or after offset.
func (p *Partition) TxnFrom(offset int64) bool {
	for _, first := range p.Open {
		if first >= offset {
			return true
		}
	}
	for _, a := range p.Aborted {
		if a.LastOffset >= offset {
			return true
		}
	}
	return false
}

// Empty reports a partition with no state to keep: no producer, no open
// or aborted transaction.
func (p *Partition) Empty() bool {
	return len(p.Producers) == 0 && len(p.Open) == 0 && len(p.Aborted) == 0
}

// MarkerNeeded reports whether a commit or abort marker of the producer,
// written at epoch, has anything left to do here (EndTxn): end the
// producer's open transaction, or fence an older epoch of its. Neither is
// a marker already applied, which a coordinator sends again after a lost
// answer or a timed-out wait: appended again it would be a second control
// batch of one transaction. ErrInvalidEpoch: the producer has written here
// at a later epoch, whose transaction a stale coordinator's marker must
// not end.
func (p *Partition) MarkerNeeded(producerID int64, epoch int16) (bool, error) {
	ps := p.Producer(producerID)
	if ps != nil && epoch < ps.Epoch {
		return false, ErrInvalidEpoch
	}
	if _, open := p.Open[producerID]; open {
		return true, nil
	}
	return ps != nil && epoch > ps.Epoch, nil
}
