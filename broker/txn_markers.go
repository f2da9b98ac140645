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
