package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/producerstate"
	"github.com/unilog/unilog/store"
)

// A follower keeps the idempotent-producer state of the log it replicates
// current as the records arrive, so that Promote reads only the records
// since the last catch-up instead of the whole log (months of data on a
// real node): failover time does not grow with the log. The state lives
// apart from the partitions' own (Broker.parts), which a produce still in
// flight at Demote may write into; Promote swaps it in.
//
// The state is exact as of replayed: every idempotent batch stored before
// it is applied, none after. Only the log's own changes can invalidate
// that, and they all come through TruncateLog and RestartLog: a cut below
// replayed reloads the state from the snapshot file if that was taken at
// or below the cut (from the start of the log otherwise), and deletes a
// snapshot taken past the cut, which would name records the log no longer
// holds; a restart empties it. A follower writes the snapshot of this
// state (at replayed) as a leader writes its own, so a restart of the
// follower process does not replay the whole log either.

// replicaCatchUpInterval is how often a follower applies the records it
// replicated to its producer state: about this much of the log is left for
// Promote to read. Without a snapshot the first catch-up reads the whole
// log once, in the background (a truncation waits for it meanwhile).
const replicaCatchUpInterval = 500 * time.Millisecond

// replicaProducers is the producer state a follower rebuilds. parts is
// nil while the node is not a follower: Demote sets it, Promote takes it.
type replicaProducers struct {
	mu       sync.Mutex
	parts    partitionStates
	replayed int64
}

// followProducers starts the follower's state from the snapshot file.
// snapMu held.
func (b *Broker) followProducers() {
	parts, at := b.readProducerSnapshot()
	b.replica.mu.Lock()
	b.replica.parts, b.replica.replayed = parts, at
	b.replica.mu.Unlock()
}

// catchUpLocked applies the batches stored since replayed. replica.mu held.
func (b *Broker) catchUpLocked() error {
	batches, end, err := b.replayProducers(b.replica.parts, b.replica.replayed)
	if err != nil {
		// Replaying is idempotent: the next attempt starts from replayed again.
		return fmt.Errorf("broker: follower producer state from %d: %w", b.replica.replayed, err)
	}
	b.replica.replayed = end
	if batches > 0 {
		b.producerChanges.Add(int64(batches))
	}
	return nil
}

// encodeReplicaProducers catches a follower's state up and lays it out
// as a snapshot; it reports false on a node that is not following. snapMu
// held.
func (b *Broker) encodeReplicaProducers(room []byte) ([]byte, bool, error) {
	b.replica.mu.Lock()
	defer b.replica.mu.Unlock()
	if b.replica.parts == nil {
		return nil, false, nil
	}
	if err := b.catchUpLocked(); err != nil {
		return nil, true, err
	}
	return b.encodeProducers(b.replica.replayed, b.replica.parts, room), true, nil
}

// takeReplicaProducers catches a follower's state up and makes it the
// partitions' own, returning where the catch-up started and ended. snapMu
// is held throughout, so no snapshot is taken of the partitions' state
// before it is the caught-up one.
func (b *Broker) takeReplicaProducers() (from, to int64, err error) {
	b.snapMu.Lock()
	defer b.snapMu.Unlock()
	b.replica.mu.Lock()
	defer b.replica.mu.Unlock()
	from = b.replica.replayed
	if b.replica.parts == nil {
		// Taken by a Promote that failed after it: the partitions' already.
		return from, from, nil
	}
	if err := b.catchUpLocked(); err != nil {
		return from, from, err
	}
	b.partsMu.Lock()
	b.parts = b.replica.parts
	b.partsMu.Unlock()
	b.replica.parts = nil
	return from, b.replica.replayed, nil
}

// catchUpReplica keeps a follower's producer state caught up.
func (b *Broker) catchUpReplica() {
	var err error
	b.replica.mu.Lock()
	if b.replica.parts != nil {
		err = b.catchUpLocked()
	}
	b.replica.mu.Unlock()
	if err != nil {
		b.log.WithError(err).Warn("follower producer state not caught up; retrying")
	}
}

// TruncateLog cuts the log back to the record boundary to (the
// store's Truncate: the hook of a replication follower whose new
// leader never had the tail) and takes back the producer state of the
// records cut.
func (b *Broker) TruncateLog(to int64) error {
	return b.changeLog("truncate", func() error {
		if err := b.st.Truncate(to); err != nil {
			return err
		}
		if err := b.dropSnapshotPast(to); err != nil {
			return err
		}
		if to < b.replica.replayed {
			parts, at := b.readProducerSnapshot()
			b.replica.parts, b.replica.replayed = parts, at
			b.log.WithFields(logrus.Fields{"to": to, "replay_from": at}).Info("log truncated: follower producer state reloaded")
		}
		return nil
	})
}

// RestartLog empties the log and starts it again at at with the
// partitions' next offsets (the store's Restart: the hook of a
// follower its leader's retention left behind); the producer state starts
// empty there.
func (b *Broker) RestartLog(at int64, next []store.PartitionOffset) error {
	return b.changeLog("restart", func() error {
		if err := b.st.Restart(at, next); err != nil {
			return err
		}
		if err := b.dropSnapshotPast(-1); err != nil {
			return err
		}
		b.replica.parts, b.replica.replayed = make(partitionStates), at
		return nil
	})
}

// changeLog runs change, a follower's change to its data directory, with
// snapMu and replica.mu held.
func (b *Broker) changeLog(op string, change func() error) error {
	b.snapMu.Lock()
	defer b.snapMu.Unlock()
	b.replica.mu.Lock()
	defer b.replica.mu.Unlock()
	if err := change(); err != nil {
		return fmt.Errorf("broker: %s: %w", op, err)
	}
	return nil
}

// dropSnapshotPast deletes the producer-state snapshot if it was taken
// past the log offset to. snapMu held.
func (b *Broker) dropSnapshotPast(to int64) error {
	path := filepath.Join(b.cfg.DataDir, producerstate.FileName)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		var s producerstate.Snapshot
		if s, err = producerstate.Decode(raw); err == nil && s.LogOffset <= to {
			return nil
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("broker: remove %s past the log's end %d: %w", path, to, err)
	}
	return nil
}
