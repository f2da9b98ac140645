package controlplane

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// CatchUp returns once the local copy holds every change the bucket had
// stored when CatchUp was called: it asks the bucket's stream leader for
// its last revision and waits for the watch to deliver that far.
//
// A node that just took its group's lease calls it before taking writes
// (replication.Role's lead): its watch may lag the bucket by far more
// than a lease, and a leader acting on an old copy would take produce
// for a partition whose move already fenced it, acknowledging records
// the move leaves behind (broker/move.go). Asked after the take, the
// stream leader's last revision covers every move step stored before the
// lease was taken; a step stored later was written by a node that saw
// this lease, or by the old leader after its lease lapsed, which the
// move's SourceEpoch check answers.
func (m *Metadata) CatchUp(ctx context.Context) error {
	st, err := m.kv.Status(ctx)
	if err != nil {
		return fmt.Errorf("ha: metadata revision: %w", err)
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return fmt.Errorf("ha: metadata revision: bucket status %T carries no stream info", st)
	}
	last := bs.StreamInfo().State.LastSeq
	for {
		m.mu.RLock()
		seen, ch := m.seen, m.seenCh
		m.mu.RUnlock()
		if seen >= last {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ha: metadata watch at revision %d, bucket at %d: %w", seen, last, ctx.Err())
		case <-ch:
		}
	}
}

// noteSeen records a revision the watch delivered and wakes CatchUp.
func (m *Metadata) noteSeen(rev uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rev <= m.seen {
		return
	}
	m.seen = rev
	close(m.seenCh)
	m.seenCh = make(chan struct{})
}
