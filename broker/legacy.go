package broker

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/decompress"
)

// Legacy message sets (magic 0 and 1, see kmsg.MessageV0 and
// kmsg.MessageV1) share their first bytes with a v2 record batch: offset
// (8), size (4), CRC (4), then the magic at byte 16, where a batch has its
// magic too. That byte alone tells the formats apart.
const (
	legacyMagicAt     = 16
	legacyLogOverhead = 12                // offset and size before each message
	legacyV0MinBody   = 4 + 1 + 1 + 4 + 4 // crc, magic, attributes, key and value lengths
	legacyV1MinBody   = legacyV0MinBody + 8

	legacyAttrCodecMask     = 0x07
	legacyAttrLogAppendTime = 0x08
	legacyCodecZstd         = 4 // defined for magic 2 only
)

// noTimestamp is what a magic 0 message up-converts to, as in Kafka.
const noTimestamp = -1

// isLegacyMessageSet reports whether a produce partition's records are a
// magic 0/1 message set rather than a v2 record batch.
func isLegacyMessageSet(records []byte) bool {
	return len(records) > legacyMagicAt && records[legacyMagicAt] < 2
}

type legacyRecord struct {
	key, value []byte
	timestamp  int64
}

// upConvertMessageSet turns a magic 0/1 message set into one uncompressed v2
// record batch, as a Kafka broker does for old producers, so that storage,
// fetch and idempotence only ever see v2 batches. Each message's CRC32 (IEEE)
// is checked; compressed wrapper messages (gzip, snappy, lz4) are opened and
// their inner messages become records of the same batch. Producer offsets
// are ignored (the log assigns them); magic 0 messages get no timestamp
// (-1). The batch is written uncompressed: recompressing would spend CPU on
// the produce path for clients old enough to be rare, and fetchers read
// either form. maxBytes bounds what the set's wrappers decompress to, all
// of them together: each is decompressed as a stream that stops there.
func upConvertMessageSet(set []byte, maxBytes int32) ([]byte, *batchError) {
	left := int64(maxBytes)
	recs, berr := readMessageSet(set, false, &left, nil)
	if berr != nil {
		return nil, berr
	}
	if len(recs) == 0 {
		return nil, badBatch(kerr.CorruptMessage, "empty message set")
	}
	first, maxTS := recs[0].timestamp, recs[0].timestamp
	for _, r := range recs[1:] {
		maxTS = max(maxTS, r.timestamp)
	}
	krecs := make([]kmsg.Record, len(recs))
	for i, r := range recs {
		krecs[i] = kmsg.Record{TimestampDelta64: r.timestamp - first, Key: r.key, Value: r.value}
	}
	return newBatch(krecs, first, maxTS), nil
}

// readMessageSet appends the records of a message set to recs; inner is true
// inside a compressed wrapper, where another wrapper is invalid. left is
// what the wrappers may still decompress to.
func readMessageSet(set []byte, inner bool, left *int64, recs []legacyRecord) ([]legacyRecord, *batchError) {
	for len(set) > 0 {
		if len(set) < legacyLogOverhead {
			return nil, badBatch(kerr.CorruptMessage, "message set ends with %d bytes, short of a message header", len(set))
		}
		size := int(int32(binary.BigEndian.Uint32(set[8:])))
		if size < legacyV0MinBody || size > len(set)-legacyLogOverhead {
			return nil, badBatch(kerr.CorruptMessage, "message size %d with %d bytes left", size, len(set)-legacyLogOverhead)
		}
		msg := set[:legacyLogOverhead+size]
		set = set[len(msg):]
		if crc := crc32.ChecksumIEEE(msg[legacyMagicAt:]); crc != binary.BigEndian.Uint32(msg[12:]) {
			return nil, badBatch(kerr.CorruptMessage, "message CRC %08x, computed %08x", binary.BigEndian.Uint32(msg[12:]), crc)
		}
		var (
			attrs      int8
			timestamp  int64 = noTimestamp
			key, value []byte
		)
		switch magic := msg[legacyMagicAt]; magic {
		case 0:
			var m kmsg.MessageV0
			if err := m.ReadFrom(msg); err != nil {
				return nil, badBatch(kerr.CorruptMessage, "magic 0 message: %v", err)
			}
			attrs, key, value = m.Attributes, m.Key, m.Value
		case 1:
			var m kmsg.MessageV1
			if size < legacyV1MinBody {
				return nil, badBatch(kerr.CorruptMessage, "magic 1 message of %d bytes", size)
			}
			if err := m.ReadFrom(msg); err != nil {
				return nil, badBatch(kerr.CorruptMessage, "magic 1 message: %v", err)
			}
			attrs, timestamp, key, value = m.Attributes, m.Timestamp, m.Key, m.Value
		default:
			return nil, badBatch(kerr.InvalidRecord, "message magic %d inside a magic 0/1 message set", magic)
		}
		codec := attrs & legacyAttrCodecMask
		if codec == 0 {
			recs = append(recs, legacyRecord{key: key, value: value, timestamp: timestamp})
			continue
		}
		switch {
		case inner:
			return nil, badBatch(kerr.CorruptMessage, "compressed message inside a compressed message")
		case codec >= legacyCodecZstd:
			return nil, badBatch(kerr.UnsupportedCompressionType, "message compression codec %d", codec)
		case value == nil:
			return nil, badBatch(kerr.CorruptMessage, "compressed message without a value")
		}
		plain, err := decompress.Append(nil, value, decompress.Codec(codec), *left)
		switch {
		case errors.Is(err, decompress.ErrTooLarge):
			return nil, badBatch(kerr.MessageTooLarge, "compressed messages decompress to more than max.message.bytes")
		case err != nil:
			return nil, badBatch(kerr.CorruptMessage, "decompress message (codec %d): %v", codec, err)
		}
		*left -= int64(len(plain))
		from := len(recs)
		var berr *batchError
		if recs, berr = readMessageSet(plain, true, left, recs); berr != nil {
			return nil, berr
		}
		if attrs&legacyAttrLogAppendTime != 0 {
			// The wrapper's time stands for all of its inner messages.
			for i := from; i < len(recs); i++ {
				recs[i].timestamp = timestamp
			}
		}
	}
	return recs, nil
}
