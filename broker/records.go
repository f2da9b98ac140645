package broker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/decompress"
)

// A v2 batch's record count decides how many offsets, and so how many
// consume-queue entries, the batch takes; it must never be taken on trust.
// checkRecords walks the records themselves (decompressing a compressed
// batch as a stream, holding no more than the codec's state and a read
// buffer) and refuses a batch whose records are not exactly as many as it
// claims, as Kafka's broker does when it validates a batch.

// minRecordLength is the smallest record after its length varint:
// attributes, then one byte each for the timestamp and offset deltas, the
// key and value lengths and the header count.
const minRecordLength = 6

// recordSource is the records' bytes as the walk reads them: in place for
// an uncompressed batch, through br for a decompressed one. A concrete type,
// not an io.ByteReader, so that a batch's source stays on the stack.
type recordSource struct {
	b  []byte
	br *bufio.Reader
}

// errVarintOverflow is binary.ReadVarint's overflow, for the bytes in place.
var errVarintOverflow = errors.New("varint overflows a 64-bit integer")

// varint reads a record length as binary.ReadVarint does: io.EOF before
// the first byte, io.ErrUnexpectedEOF inside one.
func (s *recordSource) varint() (int64, error) {
	if s.br != nil {
		return binary.ReadVarint(s.br)
	}
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	v, n := binary.Varint(s.b)
	switch {
	case n == 0:
		s.b = nil
		return 0, io.ErrUnexpectedEOF
	case n < 0:
		return 0, errVarintOverflow
	}
	s.b = s.b[n:]
	return v, nil
}

// discard skips n bytes, io.ErrUnexpectedEOF if fewer are left.
func (s *recordSource) discard(n int) error {
	if s.br != nil {
		_, err := s.br.Discard(n)
		return err
	}
	if n > len(s.b) {
		s.b = nil
		return io.ErrUnexpectedEOF
	}
	s.b = s.b[n:]
	return nil
}

var bufioPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// streamInflation bounds how far a compressed batch may decompress: to
// this many times max.message.bytes. Kafka's max.message.bytes is the
// size of the batch as sent, compressed, and clients make batches that
// decompress well past it (franz-go's TestConsumeMaxDecompressBatchBytes
// sends 3 MiB of records as 3 KiB of zstd). Every codec is read as a
// stream holding only its bounded state, so the bound is on the CPU a
// batch may cost, not memory. The memory is decompress.Memory of
// max.message.bytes, what decompressionReserve reserves: a snappy block is
// decoded whole, so a raw snappy batch (franz-go's, librdkafka's: one
// block) decompresses to at most that, 8 MiB more than max.message.bytes,
// while xerial framing (the Java client's 32 KiB blocks) gets the 64x.
const streamInflation = 64

// checkRecords verifies that rb's records are rb.NumRecords well-framed
// records, decompressing at most streamInflation times limit bytes and
// holding at most decompress.Memory(limit).
func checkRecords(rb *kmsg.RecordBatch, limit int64) *batchError {
	codec := decompress.Codec(rb.Attributes & attrCompressionMask)
	if codec == decompress.None {
		return walkRecords(&recordSource{b: rb.Records}, rb.NumRecords, codec)
	}
	r, err := decompress.NewReader(codec, rb.Records, limit*streamInflation, decompress.Memory(limit))
	if err != nil {
		return badBatch(kerr.CorruptMessage, "record batch: %v", err)
	}
	defer r.Close()
	br := bufioPool.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() {
		br.Reset(nil)
		bufioPool.Put(br)
	}()
	return walkRecords(&recordSource{br: br}, rb.NumRecords, codec)
}

// walkRecords reads the length of each record and skips its body, checking
// that exactly want records end exactly at the end of src.
func walkRecords(src *recordSource, want int32, codec decompress.Codec) *batchError {
	var n int32
	for {
		length, err := src.varint()
		if err == io.EOF {
			break
		}
		if err != nil {
			return recordsError(err, codec, "record %d length: %v", n, err)
		}
		if n == want {
			return badBatch(kerr.CorruptMessage, "record batch claims %d records but holds more (%s)", want, codec)
		}
		if length < minRecordLength || length > 1<<31-1 {
			return badBatch(kerr.CorruptMessage, "record %d of the batch has length %d", n, length)
		}
		if err := src.discard(int(length)); err != nil {
			return recordsError(err, codec, "record %d of %d bytes: %v", n, length, err)
		}
		n++
	}
	if n != want {
		return badBatch(kerr.CorruptMessage, "record batch claims %d records but holds %d (%s)", want, n, codec)
	}
	return nil
}

// recordsError maps a failed read of the records: past the decompression
// limit it is MESSAGE_TOO_LARGE, otherwise the batch is corrupt.
func recordsError(err error, codec decompress.Codec, format string, args ...any) *batchError {
	if errors.Is(err, decompress.ErrTooLarge) {
		return badBatch(kerr.MessageTooLarge, "record batch (%s) decompresses to more than its limit (%dx max.message.bytes, a snappy block %d MiB more than max.message.bytes)", codec, streamInflation, decompress.Memory(0)>>20)
	}
	return badBatch(kerr.CorruptMessage, format, args...)
}
