package controlplane

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// watchRevision is the newest revision a bucket's watch delivered. A
// watch may lag the bucket by far more than a lease (its consumer's
// server died, or it is just slow); catchUp is the read barrier for a
// decision that must not rest on an old copy.
type watchRevision struct {
	mu   sync.Mutex
	seen uint64
	// grew is closed when seen grows.
	grew chan struct{}
}

func newWatchRevision() *watchRevision {
	return &watchRevision{grew: make(chan struct{})}
}

// note records a revision the watch delivered, once applied.
func (w *watchRevision) note(rev uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rev <= w.seen {
		return
	}
	w.seen = rev
	close(w.grew)
	w.grew = make(chan struct{})
}

// watchStall is how long catchUp waits for the watch before it reads
// the bucket afresh: a watch delivers within milliseconds, but one whose
// consumer's server died stays quiet for 10 to 20 s (see the package
// doc), which would hold a failover that long. A leader's SIGKILL often
// takes that server along, and the take runs this barrier: at 1 s, 3 of
// 10 rounds of scripts/failover-example.sh took 2.4-2.6 s where the
// others took 1.3-1.5 s; a fresh read of the bucket costs milliseconds.
const watchStall = 200 * time.Millisecond

// catchUp asks kv's stream leader for the bucket's last revision (stream
// info is answered by the leader, where a direct get may come from a
// lagging replica) and waits for the watch, which must deliver every key
// of the bucket, to have applied it; if it stalls, apply gets every
// key's newest entry from a fresh watch, created after that revision.
func (w *watchRevision) catchUp(ctx context.Context, kv jetstream.KeyValue, apply func(jetstream.KeyValueEntry)) error {
	st, err := kv.Status(ctx)
	if err != nil {
		return fmt.Errorf("ha: bucket's last revision: %w", err)
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return fmt.Errorf("ha: bucket's last revision: status %T carries no stream info", st)
	}
	last := bs.StreamInfo().State.LastSeq
	stall := time.NewTimer(watchStall)
	defer stall.Stop()
	for {
		w.mu.Lock()
		seen, grew := w.seen, w.grew
		w.mu.Unlock()
		if seen >= last {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ha: %s watch at revision %d, bucket at %d: %w", st.Bucket(), seen, last, ctx.Err())
		case <-stall.C:
			return reload(ctx, kv, apply)
		case <-grew:
		}
	}
}

// reload applies every key's newest entry from a fresh watch.
func reload(ctx context.Context, kv jetstream.KeyValue, apply func(jetstream.KeyValueEntry)) error {
	fresh, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("ha: read bucket afresh: %w", err)
	}
	defer fresh.Stop()
	if err := loadInitial(ctx, fresh, apply); err != nil {
		return fmt.Errorf("ha: read bucket afresh: %w", err)
	}
	return nil
}

// CatchUp returns once the metadata copy holds every change the bucket
// had stored when CatchUp was called.
//
// A node that just took its group's lease calls it before taking writes
// (replication.Role's lead): a leader acting on an old copy would take
// produce for a partition whose move already fenced it, acknowledging
// records the move leaves behind (broker/move.go). Asked after the take,
// the bucket's last revision covers every move step stored before the
// lease was taken; a step stored later was written by a node that could
// see this lease, which the move's SourceEpoch check answers.
func (m *Metadata) CatchUp(ctx context.Context) error {
	return m.rev.catchUp(ctx, m.kv, m.applyEntry)
}

// CatchUp returns once the leases seen hold every lease the bucket had
// stored when CatchUp was called.
func (l *Leaders) CatchUp(ctx context.Context) error {
	return l.rev.catchUp(ctx, l.kv, l.apply)
}
