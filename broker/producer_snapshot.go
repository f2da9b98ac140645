package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/producerstate"
	"github.com/unilog/unilog/store"
)

// The producer-state snapshot (format in package producerstate) lets a
// restart rebuild idempotence exactly without reading the whole log: state
// as of a log position, plus the records stored after it. It is rewritten
// every producerSnapshotInterval while the state changes and at Close,
// after the last request, so a clean start replays nothing.

const producerSnapshotInterval = 10 * time.Second

// snapshotProducers writes the producer state of every partition. A
// leader's is its live state as of the log's end (encodeLeaderProducers).
// A follower's is the state it rebuilt from the log it replicates, caught
// up first, at the offset it reached (producer_replica.go).
func (b *Broker) snapshotProducers() error {
	b.snapMu.Lock() // one writer of producer-state.tmp
	defer b.snapMu.Unlock()
	room := b.snapshotRoom()
	raw, following, err := b.encodeReplicaProducers(room)
	if err != nil {
		return err
	}
	if !following {
		var copiedThrough int64
		raw, copiedThrough = b.encodeLeaderProducers(room)
		// What the copy holds past its offset must not be lost in a crash
		// that keeps the snapshot (see encodeLeaderProducers).
		ctx, cancel := context.WithTimeout(context.Background(), producerSnapshotInterval)
		defer cancel()
		if err := b.st.WaitDurable(ctx, copiedThrough); err != nil {
			return fmt.Errorf("broker: producer-state snapshot: flush the log through %d: %w", copiedThrough, err)
		}
	}
	err = fileops.ReplaceFile(b.cfg.FS, filepath.Join(b.cfg.DataDir, producerstate.FileName), raw, 0o644)
	b.snapLen, b.snapRoom = len(raw), nil
	if cap(raw) <= maxKeptSnapshot {
		b.snapRoom = raw
	}
	return err
}

// maxKeptSnapshot bounds the snapshot buffer kept for the next snapshot
// between periods. Larger ones (hundreds of thousands of partitions) are
// left to the collector rather than pinned in the heap, where they would
// also raise its growth target.
const maxKeptSnapshot = 64 << 20

// snapshotRoom is the storage the next snapshot is laid out in: the last
// one's bytes, or room for its length and a little more. snapMu held.
func (b *Broker) snapshotRoom() []byte {
	if b.snapRoom != nil {
		return b.snapRoom
	}
	return make([]byte, 0, b.snapLen+b.snapLen/16)
}

// encodeProducers lays out the state of parts as a snapshot at logOffset
// in room (snapshotRoom). topicMu is held shared
// meanwhile so that no topic is deleted and created again between reading
// a partition's state and the incarnation it is filed under.
func (b *Broker) encodeProducers(logOffset int64, parts partitionStates, room []byte) []byte {
	b.topicMu.RLock()
	defer b.topicMu.RUnlock()
	raw, _ := b.encodeParts(logOffset, parts, room)
	return raw
}

// encodeLeaderProducers lays out a leader's live state as of logOffset,
// the log's end when it starts, without stopping appends: every partition
// is read under its own lock only, so a snapshot of a million partitions
// does not hold up every produce meanwhile. The snapshot may then hold
// batches appended after logOffset, which Through takes back at load and
// the replay adds again. A transaction opened or aborted after logOffset
// cannot be taken back that way (its marker replayed against the newer
// opening would file a wrong aborted range), so a snapshot holding one is
// taken again exactly (encodeLeaderProducersExact). It also returns the
// log's end after the copy: the caller makes the log durable through it
// before writing the snapshot, so that no crash loses a record whose
// effect the snapshot holds.
func (b *Broker) encodeLeaderProducers(room []byte) (raw []byte, copiedThrough int64) {
	logOffset := b.st.WriteOffset()
	// Every partition appended to below logOffset is in parts: its state
	// is made before its first append.
	b.partsMu.Lock()
	parts := b.parts.clone()
	b.partsMu.Unlock()
	b.topicMu.RLock()
	raw, txnPast := b.encodeParts(logOffset, parts, room)
	b.topicMu.RUnlock()
	if txnPast {
		raw = b.encodeLeaderProducersExact(room)
	}
	return raw, b.st.WriteOffset()
}

// encodeLeaderProducersExact lays out a leader's live state as of the
// log's end exactly: topicMu shared, then appendMu (the order a produce
// takes them), so that no append changes producer state between reading
// the end and encoding. Appends wait for it.
func (b *Broker) encodeLeaderProducersExact(room []byte) []byte {
	b.topicMu.RLock()
	defer b.topicMu.RUnlock()
	b.appendMu.Lock()
	defer b.appendMu.Unlock()
	logOffset := b.st.WriteOffset()
	b.partsMu.Lock()
	parts := b.parts.clone()
	b.partsMu.Unlock()
	raw, _ := b.encodeParts(logOffset, parts, room)
	return raw
}

// encodeParts is encodeProducers with topicMu held; txnPast reports a
// transaction opened or aborted at or after logOffset in the state. Each
// topic's incarnation is looked up once; a partition's state is encoded
// again only if it changed since the last snapshot (producerstate.Encoder).
func (b *Broker) encodeParts(logOffset int64, parts partitionStates, room []byte) (raw []byte, txnPast bool) {
	e := producerstate.NewEncoder(logOffset, room)
	for topic, t := range parts {
		m, live := b.meta.Topic(topic)
		if !live {
			continue
		}
		id := m.RecordID()
		for i, p := range t {
			if p == nil {
				continue
			}
			partition := int32(i)
			p.mu.Lock()
			if len(p.Aborted) > 0 {
				// Aborted transactions below the log start are never fetched.
				lo, _ := b.logBounds(m, partition)
				p.DropAbortedBefore(lo)
			}
			if !p.Empty() {
				e.Add(topic, id, partition, &p.Partition)
				txnPast = txnPast || p.TxnFrom(logOffset)
			}
			p.mu.Unlock()
		}
	}
	return e.Finish(), txnPast
}

// snapshotSpacing bounds the share of the time the periodic producer
// snapshot takes: after one that took d, the next waits at least
// snapshotSpacing*d. A snapshot reads every partition's state and writes
// the whole file; at 1,000,000 partitions, taken every 10 s with appends
// held off, it was half the broker's CPU during a first produce and
// stalled every produce while it copied.
const snapshotSpacing = 20

// snapshotProducersIfChanged returns what rewrites the snapshot each
// period while idempotent appends change the state, so a restart after a
// crash replays at most a period of log (longer where a snapshot is slow,
// see snapshotSpacing).
func (b *Broker) snapshotProducersIfChanged() func() {
	var written int64
	var next time.Time
	return func() {
		n := b.producerChanges.Load()
		if n == written || time.Now().Before(next) {
			return
		}
		start := time.Now()
		if err := b.snapshotProducers(); err != nil {
			b.log.WithError(err).Warn("producer-state snapshot failed; a restart reads more of the log")
			return
		}
		next = start.Add(snapshotSpacing * time.Since(start))
		written = n
	}
}

// loadProducers rebuilds idempotent-producer state at start: the snapshot,
// then every idempotent batch stored after its log offset.
func (b *Broker) loadProducers() error {
	start := time.Now()
	parts, from := b.readProducerSnapshot()
	batches, _, err := b.replayProducers(parts, from)
	if err != nil {
		return fmt.Errorf("broker: rebuild producer state from log offset %d: %w", from, err)
	}
	b.partsMu.Lock()
	b.parts = parts
	b.partsMu.Unlock()
	b.log.WithFields(logrus.Fields{"from": from, "to": b.st.WriteOffset(), "idempotent_batches": batches, "elapsed": time.Since(start)}).Info("producer state loaded")
	return nil
}

// readProducerSnapshot returns the state the snapshot file holds and the
// log offset it is the state at, or no state and 0. Only the live
// incarnation of each topic counts: snapshot entries of a topic deleted
// since (another TopicID under the same name) are skipped, so a re-created
// topic starts with no producers. A missing, corrupt or stale snapshot
// (one that names data the log no longer holds, after a crash lost an
// unflushed tail), or a version 1 snapshot, which cannot tell incarnations
// apart, is not trusted: the whole log is replayed instead, which is
// slower but exact.
func (b *Broker) readProducerSnapshot() (partitionStates, int64) {
	pre := b.takePreload()
	if pre == nil {
		pre = PreloadProducers(b.cfg.DataDir, b.meta)
	}
	parts, from, err := pre.wait(b.meta, b.st.WriteOffset())
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		return make(partitionStates), 0
	default:
		b.log.WithFields(logrus.Fields{"file": filepath.Join(b.cfg.DataDir, producerstate.FileName), "error": err}).Warn("producer-state snapshot not used; rebuilding idempotence from the whole log")
		return make(partitionStates), 0
	}
	return parts, from
}

// takePreload returns Config.Producers the first time, for the start it
// was read for, and nil after: a later read (a follower's) reads the file
// as it is then.
func (b *Broker) takePreload() *ProducerPreload {
	b.partsMu.Lock()
	defer b.partsMu.Unlock()
	pre := b.cfg.Producers
	b.cfg.Producers = nil
	return pre
}

// replayProducers applies every idempotent batch stored from the log
// offset from on to parts and returns how many it read and the end of the
// last record it scanned (from if none).
func (b *Broker) replayProducers(parts partitionStates, from int64) (batches int, end int64, err error) {
	end = from
	err = b.st.ScanRecords(from, func(topic string, id store.TopicID, partition int32, base, recEnd int64, batch []byte) {
		end = recEnd
		bi, ok := storedBatchProducer(batch)
		if !ok || bi.producerID < 0 || !b.liveIncarnation(topic, id) {
			return
		}
		batches++
		parts.at(topic, partition).applyStored(bi, batch, base, recEnd)
	})
	return batches, end, err
}

// applyStored brings the producer state up to a producer's batch stored
// at [base, end): a transaction marker ends its producer's transaction
// there, any other batch is the producer's next and a transactional one
// opens its transaction. Recovery replays the log so, and a partition
// move's target the records it copies, as Kafka's new replica rebuilds
// its producer state from the log it fetched: a transaction open at the
// move stays open on the target, aborted ones stay in its index.
func (p *partitionState) applyStored(bi batchInfo, batch []byte, base, end int64) {
	if bi.control() {
		if commit, ok := markerCommits(batch); ok {
			p.EndTxn(bi.producerID, bi.producerEpoch, commit, base)
		}
		return
	}
	p.Replay(bi.producerBatch(), base, end)
	if bi.transactional() {
		p.BeginTxn(bi.producerID, base)
	}
}

// liveIncarnation reports whether id is the incarnation of topic in metadata.
func (b *Broker) liveIncarnation(topic string, id store.TopicID) bool {
	return liveIncarnation(b.meta, topic, id)
}

// liveIncarnation reports whether id is the incarnation of topic in meta.
func liveIncarnation(meta MetadataStore, topic string, id store.TopicID) bool {
	m, ok := meta.Topic(topic)
	return ok && m.RecordID() == id
}
