package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/framed"
)

// The producer-state snapshot (format in the package doc) lets a restart
// rebuild idempotence exactly without reading the whole log: state as of a
// log position, plus the records stored after it.

const (
	producerSnapshotFile     = "producer-state"
	producerSnapshotVersion  = 2
	producerSnapshotInterval = 10 * time.Second
)

// producerSnapshotFormat frames the snapshot (layout in the package doc);
// version 1 named no topic incarnations.
var producerSnapshotFormat = framed.Format{Name: "producer-state snapshot", Magic: "UPST", Version: producerSnapshotVersion, Oldest: 1, Shape: framed.Sealed}

// errProducerSnapshot marks a snapshot file that fails a check; the broker
// then rebuilds from the whole log.
var errProducerSnapshot = errors.New("broker: producer-state snapshot corrupt")

type producerSnapshot struct {
	version   uint16
	logOffset int64
	parts     []partitionSnapshot
}

type partitionSnapshot struct {
	tp topicPartition
	// id is the incarnation the state belongs to (TopicMeta.RecordID); a
	// version 1 snapshot has none and decodes to the zero id.
	id        commitlog.TopicID
	producers map[int64]*producerSeq
}

func encodeProducerSnapshot(s producerSnapshot) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0) // reserved
	b = binary.BigEndian.AppendUint64(b, uint64(s.logOffset))
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.parts)))
	for _, p := range s.parts {
		b = binary.BigEndian.AppendUint16(b, uint16(len(p.tp.topic)))
		b = append(b, p.tp.topic...)
		b = append(b, p.id[:]...)
		b = binary.BigEndian.AppendUint32(b, uint32(p.tp.partition))
		b = binary.BigEndian.AppendUint32(b, uint32(len(p.producers)))
		for id, ps := range p.producers {
			b = binary.BigEndian.AppendUint64(b, uint64(id))
			b = binary.BigEndian.AppendUint16(b, uint16(ps.epoch))
			b = append(b, byte(len(ps.batches)))
			for _, sb := range ps.batches {
				b = binary.BigEndian.AppendUint32(b, uint32(sb.firstSeq))
				b = binary.BigEndian.AppendUint32(b, uint32(sb.lastSeq))
				b = binary.BigEndian.AppendUint64(b, uint64(sb.baseOffset))
				b = binary.BigEndian.AppendUint64(b, uint64(sb.end))
			}
		}
	}
	return producerSnapshotFormat.Append(nil, b)
}

func decodeProducerSnapshot(b []byte) (producerSnapshot, error) {
	v, payload, err := producerSnapshotFormat.Decode(b)
	if err != nil {
		return producerSnapshot{}, fmt.Errorf("%w: %w", errProducerSnapshot, err)
	}
	r := framed.NewReader(payload)
	r.U16() // reserved
	s := producerSnapshot{version: v, logOffset: int64(r.U64())}
	nparts := r.U32()
	for i := uint32(0); i < nparts && r.Err() == nil; i++ {
		var p partitionSnapshot
		p.tp.topic = string(r.Bytes(int(r.U16())))
		if v >= 2 {
			copy(p.id[:], r.Bytes(commitlog.TopicIDSize))
		}
		p.tp.partition = int32(r.U32())
		nprod := r.U32()
		p.producers = make(map[int64]*producerSeq, min(nprod, uint32(r.Len()/11)))
		for j := uint32(0); j < nprod && r.Err() == nil; j++ {
			id := int64(r.U64())
			ps := &producerSeq{epoch: int16(r.U16())}
			n := r.U8()
			if n == 0 || n > dedupWindow {
				return producerSnapshot{}, fmt.Errorf("%w: producer %d of %s/%d has %d batches", errProducerSnapshot, id, p.tp.topic, p.tp.partition, n)
			}
			for range n {
				ps.batches = append(ps.batches, seqBatch{
					firstSeq:   int32(r.U32()),
					lastSeq:    int32(r.U32()),
					baseOffset: int64(r.U64()),
					end:        int64(r.U64()),
				})
			}
			p.producers[id] = ps
		}
		s.parts = append(s.parts, p)
	}
	if r.Done() != nil {
		return producerSnapshot{}, fmt.Errorf("%w: its length does not match its counts", errProducerSnapshot)
	}
	return s, nil
}

// snapshotProducers writes the producer state of every partition. A
// leader's is its live state: the log offset is read before any partition
// is copied, so every batch stored below it is in the copy; batches
// appended while copying may be too, which loading drops (through). A
// follower's is the state it rebuilt from the log it replicates, caught up
// first, at the offset it reached (producer_replica.go).
func (b *Broker) snapshotProducers() error {
	b.snapMu.Lock() // one writer of producer-state.tmp
	defer b.snapMu.Unlock()
	s, following, err := b.copyReplicaProducers()
	if err != nil {
		return err
	}
	if !following {
		logOffset := b.st.WriteOffset()
		b.partsMu.Lock()
		parts := maps.Clone(b.parts)
		b.partsMu.Unlock()
		s = b.copyProducers(logOffset, parts)
	}
	return fileops.ReplaceFile(fileops.OS{}, filepath.Join(b.cfg.DataDir, producerSnapshotFile), encodeProducerSnapshot(s), 0o644)
}

// copyProducers copies the state of parts as a snapshot at logOffset.
// topicMu is held shared while copying so that no topic is deleted and
// created again between reading a partition's state and the incarnation
// it is filed under.
func (b *Broker) copyProducers(logOffset int64, parts map[topicPartition]*partitionState) producerSnapshot {
	s := producerSnapshot{version: producerSnapshotVersion, logOffset: logOffset}
	b.topicMu.RLock()
	defer b.topicMu.RUnlock()
	for tp, p := range parts {
		m, live := b.meta.Topic(tp.topic)
		p.mu.Lock()
		if live && len(p.producers) > 0 {
			cp := make(map[int64]*producerSeq, len(p.producers))
			for id, ps := range p.producers {
				cp[id] = &producerSeq{epoch: ps.epoch, batches: append([]seqBatch(nil), ps.batches...)}
			}
			s.parts = append(s.parts, partitionSnapshot{tp: tp, id: m.RecordID(), producers: cp})
		}
		p.mu.Unlock()
	}
	return s
}

// snapshotLoop rewrites the snapshot while idempotent appends change the
// state, so a restart after a crash replays at most an interval of log.
func (b *Broker) snapshotLoop() {
	defer b.loopWG.Done()
	tick := time.NewTicker(producerSnapshotInterval)
	defer tick.Stop()
	var written int64
	for {
		select {
		case <-b.closing:
			return
		case <-tick.C:
		}
		n := b.producerChanges.Load()
		if n == written {
			continue
		}
		if err := b.snapshotProducers(); err != nil {
			b.log.WithError(err).Warn("producer-state snapshot failed; a restart reads more of the log")
			continue
		}
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
func (b *Broker) readProducerSnapshot() (map[topicPartition]*partitionState, int64) {
	parts := make(map[topicPartition]*partitionState)
	path := filepath.Join(b.cfg.DataDir, producerSnapshotFile)
	raw, err := os.ReadFile(path)
	var s producerSnapshot
	if err == nil {
		s, err = decodeProducerSnapshot(raw)
	}
	if err == nil {
		err = s.within(b.st.WriteOffset())
	}
	if err == nil {
		err = s.tellsIncarnations(b.meta)
	}
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		return parts, 0
	default:
		b.log.WithFields(logrus.Fields{"file": path, "error": err}).Warn("producer-state snapshot not used; rebuilding idempotence from the whole log")
		return parts, 0
	}
	for _, p := range s.parts {
		if !b.liveIncarnation(p.tp.topic, p.id) {
			continue
		}
		if producers := through(p.producers, s.logOffset); len(producers) > 0 {
			parts[p.tp] = &partitionState{producers: producers}
		}
	}
	return parts, s.logOffset
}

// through drops the batches stored past logOffset (a leader's snapshot
// may hold some appended while it was copied): replaying from logOffset
// adds them back if the log still holds them, and only then.
func through(producers map[int64]*producerSeq, logOffset int64) map[int64]*producerSeq {
	for id, ps := range producers {
		n := len(ps.batches)
		for n > 0 && ps.batches[n-1].end > logOffset {
			n--
		}
		if ps.batches = ps.batches[:n]; n == 0 {
			delete(producers, id)
		}
	}
	return producers
}

// replayProducers applies every idempotent batch stored from the log
// offset from on to parts and returns how many it read and the end of the
// last record it scanned (from if none).
func (b *Broker) replayProducers(parts map[topicPartition]*partitionState, from int64) (batches int, end int64, err error) {
	end = from
	err = b.st.ScanRecords(from, func(topic string, id commitlog.TopicID, partition int32, base, recEnd int64, batch []byte) {
		end = recEnd
		bi, ok := storedBatchProducer(batch)
		if !ok || bi.producerID < 0 || !b.liveIncarnation(topic, id) {
			return
		}
		tp := topicPartition{topic, partition}
		p := parts[tp]
		if p == nil {
			p = &partitionState{}
			parts[tp] = p
		}
		p.replay(bi, base, recEnd)
		batches++
	})
	return batches, end, err
}

// liveIncarnation reports whether id is the incarnation of topic in metadata.
func (b *Broker) liveIncarnation(topic string, id commitlog.TopicID) bool {
	m, ok := b.meta.Topic(topic)
	return ok && m.RecordID() == id
}

// tellsIncarnations refuses a version 1 snapshot holding state of a topic
// whose records carry ids: its entries name no incarnation, so they may be
// a deleted one's. Entries of topics with untagged records, or of topics
// gone, are unambiguous.
func (s producerSnapshot) tellsIncarnations(meta MetadataStore) error {
	if s.version >= 2 {
		return nil
	}
	for _, p := range s.parts {
		if m, ok := meta.Topic(p.tp.topic); ok && !m.UntaggedRecords {
			return fmt.Errorf("%w: version 1 names no incarnation of topic %s", errProducerSnapshot, p.tp.topic)
		}
	}
	return nil
}

// within checks that the snapshot describes only data the log holds.
func (s producerSnapshot) within(writeOffset int64) error {
	if s.logOffset > writeOffset {
		return fmt.Errorf("%w: taken at log offset %d, the log ends at %d", errProducerSnapshot, s.logOffset, writeOffset)
	}
	for _, p := range s.parts {
		for id, ps := range p.producers {
			if end := ps.batches[len(ps.batches)-1].end; end > writeOffset || end < 0 {
				return fmt.Errorf("%w: producer %d of %s/%d ends at log offset %d, the log ends at %d", errProducerSnapshot, id, p.tp.topic, p.tp.partition, end, writeOffset)
			}
		}
	}
	return nil
}
