package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/fileops"
)

// The producer-state snapshot (format in the package doc) lets a restart
// rebuild idempotence exactly without reading the whole log: state as of a
// log position, plus the records stored after it.

const (
	producerSnapshotFile     = "producer-state"
	producerSnapshotMagic    = 0x55505354 // "UPST"
	producerSnapshotVersion  = 2
	producerSnapshotInterval = 10 * time.Second
	producerSnapshotHeader   = 20 // magic, version, reserved, log offset, partition count
)

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
	b := binary.BigEndian.AppendUint32(nil, producerSnapshotMagic)
	b = binary.BigEndian.AppendUint16(b, producerSnapshotVersion)
	b = binary.BigEndian.AppendUint16(b, 0)
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
	return appendCRC(b)
}

// appendCRC appends the CRC32C of b, the snapshot's last field.
func appendCRC(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// snapReader decodes big-endian fields and remembers the first shortfall.
type snapReader struct {
	b   []byte
	bad bool
}

func (r *snapReader) take(n int) []byte {
	if r.bad || len(r.b) < n {
		r.bad = true
		return make([]byte, n)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *snapReader) u8() uint8   { return r.take(1)[0] }
func (r *snapReader) u16() uint16 { return binary.BigEndian.Uint16(r.take(2)) }
func (r *snapReader) u32() uint32 { return binary.BigEndian.Uint32(r.take(4)) }
func (r *snapReader) u64() uint64 { return binary.BigEndian.Uint64(r.take(8)) }

func decodeProducerSnapshot(b []byte) (producerSnapshot, error) {
	if len(b) < producerSnapshotHeader+4 {
		return producerSnapshot{}, fmt.Errorf("%w: %d bytes", errProducerSnapshot, len(b))
	}
	body := b[:len(b)-4]
	if want, got := binary.BigEndian.Uint32(b[len(b)-4:]), crc32.Checksum(body, castagnoli); want != got {
		return producerSnapshot{}, fmt.Errorf("%w: CRC %08x, computed %08x", errProducerSnapshot, want, got)
	}
	r := &snapReader{b: body}
	if m := r.u32(); m != producerSnapshotMagic {
		return producerSnapshot{}, fmt.Errorf("%w: magic %08x", errProducerSnapshot, m)
	}
	v := r.u16()
	if v < 1 || v > producerSnapshotVersion {
		return producerSnapshot{}, fmt.Errorf("%w: version %d, this broker reads 1 to %d", errProducerSnapshot, v, producerSnapshotVersion)
	}
	r.u16()
	s := producerSnapshot{version: v, logOffset: int64(r.u64())}
	nparts := r.u32()
	for i := uint32(0); i < nparts && !r.bad; i++ {
		var p partitionSnapshot
		p.tp.topic = string(r.take(int(r.u16())))
		if v >= 2 {
			copy(p.id[:], r.take(commitlog.TopicIDSize))
		}
		p.tp.partition = int32(r.u32())
		nprod := r.u32()
		p.producers = make(map[int64]*producerSeq, min(nprod, uint32(len(r.b)/11)))
		for j := uint32(0); j < nprod && !r.bad; j++ {
			id := int64(r.u64())
			ps := &producerSeq{epoch: int16(r.u16())}
			n := r.u8()
			if n == 0 || n > dedupWindow {
				return producerSnapshot{}, fmt.Errorf("%w: producer %d of %s/%d has %d batches", errProducerSnapshot, id, p.tp.topic, p.tp.partition, n)
			}
			for range n {
				ps.batches = append(ps.batches, seqBatch{
					firstSeq:   int32(r.u32()),
					lastSeq:    int32(r.u32()),
					baseOffset: int64(r.u64()),
					end:        int64(r.u64()),
				})
			}
			p.producers[id] = ps
		}
		s.parts = append(s.parts, p)
	}
	if r.bad || len(r.b) != 0 {
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
