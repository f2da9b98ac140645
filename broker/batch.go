package broker

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Offsets inside a Kafka v2 record batch (see kmsg.RecordBatch): the batch
// CRC covers everything from the attributes to the end, so stamping the
// base offset (bytes 0..8) on append keeps the CRC valid.
const (
	batchHeaderSize   = 61
	batchCRCAt        = 17 // the CRC32C of the bytes from batchAttributes on
	batchAttributes   = 21 // the int16 attributes, where the CRC starts
	batchAttributesAt = 22 // the low byte of the attributes
	batchLengthSkew   = 12 // Length counts the bytes after baseOffset and Length

	attrCompressionMask = 0x07
	attrLogAppendTime   = 0x08
	batchMaxTimestamp   = 35
	attrTransactional   = 0x10
	attrControl         = 0x20
)

// batchInfo is what the broker needs from a validated batch.
type batchInfo struct {
	numRecords    int32
	maxTimestamp  int64
	producerID    int64
	producerEpoch int16
	firstSequence int32
	attributes    int16
}

// transactional reports a batch of a transaction (a control batch is one).
func (bi batchInfo) transactional() bool { return bi.attributes&attrTransactional != 0 }

// control reports a control batch: a transaction's commit or abort marker.
func (bi batchInfo) control() bool { return bi.attributes&attrControl != 0 }

// batchError is a produce validation failure with the Kafka error it maps to.
type batchError struct {
	err *kerr.Error
	msg string
}

func (e *batchError) Error() string { return e.err.Message + ": " + e.msg }

func badBatch(err *kerr.Error, format string, args ...any) *batchError {
	return &batchError{err: err, msg: fmt.Sprintf(format, args...)}
}

// validateBatch checks one produce partition's records the way Kafka's log
// validator does for magic 2 before anything is stored: exactly one batch,
// its length matching the bytes sent, its CRC32C, its size, and a record
// count matching its records (see checkRecords: compressed batches are
// decompressed to count them, to at most maxBytes, and stored as sent).
func validateBatch(records []byte, maxBytes int32) (batchInfo, *batchError) {
	if len(records) < batchHeaderSize {
		return batchInfo{}, badBatch(kerr.CorruptMessage, "record batch of %d bytes is shorter than its %d byte header", len(records), batchHeaderSize)
	}
	if len(records) > int(maxBytes) {
		return batchInfo{}, badBatch(kerr.MessageTooLarge, "record batch of %d bytes exceeds max.message.bytes %d", len(records), maxBytes)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(records); err != nil {
		return batchInfo{}, badBatch(kerr.CorruptMessage, "record batch: %v", err)
	}
	if rb.Magic != 2 {
		return batchInfo{}, badBatch(kerr.InvalidRecord, "record batch magic %d, only magic 2 is supported", rb.Magic)
	}
	if int(rb.Length)+batchLengthSkew != len(records) {
		return batchInfo{}, badBatch(kerr.InvalidRecord, "record batch length %d does not match the %d bytes sent (one batch per partition)", rb.Length, len(records)-batchLengthSkew)
	}
	if crc := crc32.Checksum(records[batchAttributes:], castagnoli); crc != uint32(rb.CRC) {
		return batchInfo{}, badBatch(kerr.CorruptMessage, "record batch CRC %08x, computed %08x", uint32(rb.CRC), crc)
	}
	if rb.NumRecords <= 0 || rb.LastOffsetDelta != rb.NumRecords-1 {
		return batchInfo{}, badBatch(kerr.InvalidRecord, "record batch claims %d records with last offset delta %d", rb.NumRecords, rb.LastOffsetDelta)
	}
	if codec := rb.Attributes & attrCompressionMask; codec > 4 {
		return batchInfo{}, badBatch(kerr.UnsupportedCompressionType, "record batch compression codec %d", codec)
	}
	if rb.Attributes&attrControl != 0 {
		return batchInfo{}, badBatch(kerr.InvalidRecord, "control batches are written by the transaction coordinator, not produced")
	}
	if rb.Attributes&attrTransactional != 0 && rb.ProducerID < 0 {
		return batchInfo{}, badBatch(kerr.InvalidRecord, "transactional record batch without a producer id")
	}
	if berr := checkRecords(&rb, int64(maxBytes)); berr != nil {
		return batchInfo{}, berr
	}
	return batchInfo{
		numRecords:    rb.NumRecords,
		maxTimestamp:  rb.MaxTimestamp,
		producerID:    rb.ProducerID,
		producerEpoch: rb.ProducerEpoch,
		firstSequence: rb.FirstSequence,
		attributes:    rb.Attributes,
	}, nil
}

// stampLogAppendTime marks a validated batch's timestamps as the log's
// (message.timestamp.type=LogAppendTime) with its max timestamp set to ts,
// as Kafka's validator does, and recomputes its CRC; the records are not
// touched, so a compressed batch is never decompressed. Consumers read ts
// as every record's timestamp.
func stampLogAppendTime(batch []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(batch[batchAttributes:])
	binary.BigEndian.PutUint16(batch[batchAttributes:], attrs|attrLogAppendTime)
	binary.BigEndian.PutUint64(batch[batchMaxTimestamp:], uint64(ts))
	resealCRC(batch)
}

// resealCRC rewrites a batch's CRC over what it covers.
func resealCRC(b []byte) {
	binary.BigEndian.PutUint32(b[batchCRCAt:], crc32.Checksum(b[batchAttributes:], castagnoli))
}

// storedBatchProducer reads the idempotence fields of a stored batch, used to
// rebuild sequence state after a restart.
func storedBatchProducer(batch []byte) (batchInfo, bool) {
	var rb kmsg.RecordBatch
	if len(batch) < batchHeaderSize || rb.ReadFrom(batch) != nil || rb.Magic != 2 {
		return batchInfo{}, false
	}
	return batchInfo{
		numRecords:    rb.NumRecords,
		maxTimestamp:  rb.MaxTimestamp,
		producerID:    rb.ProducerID,
		producerEpoch: rb.ProducerEpoch,
		firstSequence: rb.FirstSequence,
		attributes:    rb.Attributes,
	}, true
}

// newBatch encodes records as one uncompressed v2 batch without producer
// id, the form of the batches the broker writes itself (up-converted
// message sets, committed offsets).
func newBatch(recs []kmsg.Record, firstTimestamp, maxTimestamp int64) []byte {
	return encodeBatch(kmsg.RecordBatch{
		FirstTimestamp: firstTimestamp,
		MaxTimestamp:   maxTimestamp,
		ProducerID:     -1,
		ProducerEpoch:  -1,
	}, recs)
}

// encodeBatch encodes recs, uncompressed, in a v2 batch with rb's
// attributes, timestamps and producer fields. It sets each record's offset
// delta and length, and the batch's counts, length and CRC.
func encodeBatch(rb kmsg.RecordBatch, recs []kmsg.Record) []byte {
	var body []byte
	for i := range recs {
		r := &recs[i]
		r.OffsetDelta = int32(i)
		// The length varint precedes what it counts: encode once to learn it.
		r.Length = 0
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		body = r.AppendTo(body)
	}
	rb.PartitionLeaderEpoch = -1
	rb.Magic = 2
	rb.LastOffsetDelta = int32(len(recs) - 1)
	rb.FirstSequence = -1
	rb.NumRecords = int32(len(recs))
	rb.Records = body
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-batchLengthSkew))
	resealCRC(out)
	return out
}
