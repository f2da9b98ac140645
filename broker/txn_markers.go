package broker

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// controlBatch is a transaction marker as Kafka writes it: a batch with
// the transactional and control attributes, the producer's id and epoch,
// and one record whose key is the control record key (version 0, type
// commit or abort) and whose value is the end-transaction marker
// (version 0, coordinator epoch 0: one coordinator per log).
func controlBatch(producerID int64, epoch int16, commit bool, ts int64) []byte {
	key := kmsg.NewControlRecordKey()
	key.Type = kmsg.ControlRecordKeyTypeAbort
	if commit {
		key.Type = kmsg.ControlRecordKeyTypeCommit
	}
	value := kmsg.NewEndTxnMarker()
	return encodeBatch(kmsg.RecordBatch{
		Attributes:     attrTransactional | attrControl,
		FirstTimestamp: ts,
		MaxTimestamp:   ts,
		ProducerID:     producerID,
		ProducerEpoch:  epoch,
	}, []kmsg.Record{{Key: key.AppendTo(nil), Value: value.AppendTo(nil)}})
}

// txnMarker is one producer's commit or abort marker in one partition.
type txnMarker struct {
	topic      string
	partition  int32
	producerID int64
	epoch      int16
	commit     bool
}

// markerFate is what appendMarkers did with a marker.
type markerFate uint8

const (
	// markerLeftOut: not this node's to write (see appendMarkers).
	markerLeftOut markerFate = iota
	markerStored
	// markerApplied: the producer has no transaction of the marker's
	// epoch open in the partition: the marker (a coordinator's retry) is
	// in effect already and not stored again (MarkerNeeded).
	markerApplied
	// markerStale: the producer wrote in the partition at a later epoch.
	markerStale
)

// appendMarkers appends head (the coordinator's state record; nil for
// none) and then the control batch of each marker in a partition this
// node leads, with one Storage.Append, under the locks a produce takes
// (appendMu, then each partition's), so that each marker's offset and its
// effect on the partition's producer state are in order with the
// partition's produced batches. Markers of a topic deleted since it joined
// the transaction, or of a partition this node does not lead, are left
// out, as are those of a partition a move is switching away
// (takesMarkers); so are those already in effect or of a stale epoch,
// which the partition's producer state tells under its lock. fates says
// what became of each. end is where the append ends, -1 when there was
// nothing to append.
func (b *Broker) appendMarkers(head *StorageBatch, markers []txnMarker) (end int64, fates []markerFate, err error) {
	now := b.now().UnixMilli()
	fates = make([]markerFate, len(markers))
	parts := make([]*partitionState, len(markers)) // nil: left out
	b.topicMu.RLock()
	defer b.topicMu.RUnlock()
	for i, m := range markers {
		if t, ok := b.meta.Topic(m.topic); ok && m.partition >= 0 && m.partition < t.Partitions && b.takesMarkers(m.topic, m.partition) {
			parts[i] = b.partition(m.topic, m.partition)
		}
	}
	// One partition may have several producers' markers (WriteTxnMarkers):
	// its lock is taken once.
	locked := make(map[*partitionState]bool, len(parts))
	b.appendMu.Lock()
	defer b.appendMu.Unlock()
	for _, p := range parts {
		if p != nil && !locked[p] {
			locked[p] = true
			p.mu.Lock()
			defer p.mu.Unlock()
		}
	}
	var batches []StorageBatch
	if head != nil {
		batches = append(batches, *head)
	}
	var appended []int // of markers, for batches[len(batches)-len(appended):]
	type producerIn struct {
		p  *partitionState
		id int64
	}
	// ending is the epoch whose transaction an earlier marker of this
	// request ends: the producer state does not show it until the append.
	ending := make(map[producerIn]int16)
	for i, m := range markers {
		p := parts[i]
		if p == nil {
			continue
		}
		if e, ok := ending[producerIn{p, m.producerID}]; ok && m.epoch <= e {
			fates[i] = markerApplied
			if m.epoch < e {
				fates[i] = markerStale
			}
			continue
		}
		switch needed, err := p.MarkerNeeded(m.producerID, m.epoch); {
		case err != nil:
			fates[i] = markerStale
			continue
		case !needed:
			fates[i] = markerApplied
			continue
		}
		ending[producerIn{p, m.producerID}] = m.epoch
		fates[i] = markerStored
		appended = append(appended, i)
		batches = append(batches, StorageBatch{Topic: m.topic, Partition: m.partition, Count: 1, MaxTimestamp: now,
			Records: controlBatch(m.producerID, m.epoch, m.commit, now)})
	}
	if len(batches) == 0 {
		return -1, fates, nil
	}
	out, err := b.st.Append(nil, batches)
	b.noteAppend(err)
	applied := out[min(len(batches)-len(appended), len(out)):]
	for j, a := range applied {
		m := markers[appended[j]]
		parts[appended[j]].EndTxn(m.producerID, m.epoch, m.commit, a.Base)
		b.producerChanges.Add(1)
	}
	if err != nil {
		return -1, fates, err
	}
	return out[len(out)-1].End, fates, nil
}

// markerCommits reads a stored control batch's marker: whether it commits,
// and false for ok when it is no commit or abort marker.
func markerCommits(batch []byte) (commit, ok bool) {
	var rb kmsg.RecordBatch
	if rb.ReadFrom(batch) != nil || rb.Attributes&attrControl == 0 || rb.Attributes&attrCompressionMask != 0 || rb.NumRecords != 1 {
		return false, false
	}
	var key kmsg.ControlRecordKey
	if eachRecord(&rb, func(r kmsg.Record) error { return key.ReadFrom(r.Key) }) != nil {
		return false, false
	}
	switch key.Type {
	case kmsg.ControlRecordKeyTypeCommit:
		return true, true
	case kmsg.ControlRecordKeyTypeAbort:
		return false, true
	}
	return false, false
}

// eachRecord calls fn with each record of an uncompressed batch (the
// broker's own: offsets, transaction state, markers), stopping at fn's
// first error; a record that does not decode is errBadRecord.
func eachRecord(rb *kmsg.RecordBatch, fn func(kmsg.Record) error) error {
	src := rb.Records
	for i := int32(0); i < rb.NumRecords; i++ {
		rd := kbin.Reader{Src: src}
		n := int(rd.Varint())
		size := len(src) - len(rd.Src) + n
		if !rd.Ok() || n < 0 || size > len(src) {
			return fmt.Errorf("%w: record %d of batch is truncated", errBadRecord, i)
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(src[:size]); err != nil {
			return fmt.Errorf("%w: record %d of batch: %v", errBadRecord, i, err)
		}
		src = src[size:]
		if err := fn(kr); err != nil {
			return err
		}
	}
	return nil
}

// errBadRecord marks a record of the broker's own batches that does not
// decode.
var errBadRecord = errors.New("broker: record does not decode")
