package broker

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type legacyMsg struct {
	key, value []byte
	ts         int64
}

// messageV1 encodes one magic 1 message with kmsg, filling in size and CRC
// as a producer does.
func messageV1(offset int64, attrs int8, m legacyMsg) []byte {
	msg := kmsg.MessageV1{Offset: offset, Magic: 1, Attributes: attrs, Timestamp: m.ts, Key: m.key, Value: m.value}
	b := msg.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[16:]))
	return b
}

func messageV0(offset int64, attrs int8, m legacyMsg) []byte {
	msg := kmsg.MessageV0{Offset: offset, Magic: 0, Attributes: attrs, Key: m.key, Value: m.value}
	b := msg.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[16:]))
	return b
}

func gzipped(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// produceV2 sends a Produce v2 request, whose records are a message set.
func produceV2(t *testing.T, addr, topic string, set []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(2)
	req.Acks = 1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = set
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, ok := dialRaw(t, addr).roundTrip(req)
	if !ok {
		t.Fatal("Produce v2: connection closed")
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// TestProduceV2MessageSet produces magic 0 and 1 message sets, plain and
// gzip-wrapped, with a hand-built Produce v2 request and reads them back
// with franz-go: keys, values and timestamps survive the up-conversion.
func TestProduceV2MessageSet(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	const topic = "legacy"
	createTopic(t, newClient(t, b.Addr()), topic, 1)

	now := time.Now().UnixMilli()
	ms := []legacyMsg{
		{key: []byte("a"), value: []byte("one"), ts: now - 2000},
		{key: nil, value: []byte("two"), ts: now - 1000},
		{key: []byte("c"), value: nil, ts: now},
	}
	var plain, inner []byte
	for i, m := range ms {
		plain = append(plain, messageV1(int64(i), 0, m)...)
		inner = append(inner, messageV1(int64(i), 0, m)...)
	}
	wrapped := messageV1(2, 1, legacyMsg{value: gzipped(t, inner), ts: now})
	v0 := append(messageV0(0, 0, legacyMsg{key: []byte("z"), value: []byte("zero")}), messageV0(0, 0, legacyMsg{value: []byte("zero2")})...)

	type want struct {
		key, value string
		nilKey     bool
		ts         int64
	}
	var wants []want
	for _, set := range [][]byte{plain, wrapped} {
		rp := produceV2(t, b.Addr(), topic, set)
		if rp.ErrorCode != 0 || rp.BaseOffset != int64(len(wants)) {
			t.Fatalf("produce: error %v base %d, want base %d", kerr.ErrorForCode(rp.ErrorCode), rp.BaseOffset, len(wants))
		}
		for _, m := range ms {
			wants = append(wants, want{string(m.key), string(m.value), m.key == nil, m.ts})
		}
	}
	// A legacy set in a newer Produce version (franz-go sends its newest)
	// takes the same path.
	cl := newClient(t, b.Addr())
	if rp := rawProduce(t, cl, topic, 0, v0); rp.ErrorCode != 0 || rp.BaseOffset != int64(len(wants)) {
		t.Fatalf("produce magic 0: %v base %d", kerr.ErrorForCode(rp.ErrorCode), rp.BaseOffset)
	}
	wants = append(wants, want{"z", "zero", false, noTimestamp}, want{"", "zero2", true, noTimestamp})

	bad := bytes.Clone(plain)
	bad[len(bad)-1] ^= 1
	if rp := produceV2(t, b.Addr(), topic, bad); rp.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("bad CRC: %v, want CORRUPT_MESSAGE", kerr.ErrorForCode(rp.ErrorCode))
	}
	if rp := produceV2(t, b.Addr(), topic, messageV1(0, 0, legacyMsg{value: []byte("last"), ts: now})); rp.BaseOffset != int64(len(wants)) {
		t.Fatalf("after a refused set: base %d, want %d (nothing stored for it)", rp.BaseOffset, len(wants))
	}
	wants = append(wants, want{"", "last", true, now})

	recs := consumeN(t, b.Addr(), topic, len(wants))
	for i, r := range recs {
		w := wants[i]
		if r.Offset != int64(i) || string(r.Key) != w.key || (r.Key == nil) != w.nilKey || string(r.Value) != w.value || r.Timestamp.UnixMilli() != w.ts {
			t.Fatalf("record %d = offset %d key %q value %q at %d, want %+v", i, r.Offset, r.Key, r.Value, r.Timestamp.UnixMilli(), w)
		}
	}
}

// TestUpConvertErrors: damaged message sets are refused with the Kafka
// error a broker gives and nothing is stored.
func TestUpConvertErrors(t *testing.T) {
	good := messageV1(0, 0, legacyMsg{key: []byte("k"), value: []byte("v"), ts: 1})
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 1
	zstd := messageV1(0, 4, legacyMsg{value: []byte("x"), ts: 1})
	badGzip := messageV1(0, 1, legacyMsg{value: []byte("not gzip"), ts: 1})
	nested := messageV1(0, 1, legacyMsg{value: gzipped(t, messageV1(0, 1, legacyMsg{value: gzipped(t, good), ts: 1})), ts: 1})
	shortSize := bytes.Clone(good)
	binary.BigEndian.PutUint32(shortSize[8:], 3)
	for _, tc := range []struct {
		name string
		set  []byte
		err  *kerr.Error
	}{
		{"bad crc", badCRC, kerr.CorruptMessage},
		{"truncated", good[:len(good)-1], kerr.CorruptMessage},
		{"trailing bytes", append(bytes.Clone(good), 0, 0, 0), kerr.CorruptMessage},
		{"size too small", shortSize, kerr.CorruptMessage},
		{"zstd wrapper", zstd, kerr.UnsupportedCompressionType},
		{"bad gzip", badGzip, kerr.CorruptMessage},
		{"nested wrapper", nested, kerr.CorruptMessage},
		{"too large", messageV1(0, 1, legacyMsg{value: gzipped(t, bytes.Repeat(good, 100)), ts: 1}), kerr.MessageTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, berr := upConvertMessageSet(tc.set, 1000)
			if berr == nil || berr.err != tc.err {
				t.Fatalf("error %v, want %v", berr, tc.err)
			}
		})
	}
}

// TestUpConvertLogAppendTime: a wrapper saying LogAppendTime gives its
// timestamp to every inner message, as Kafka reads such sets.
func TestUpConvertLogAppendTime(t *testing.T) {
	inner := append(messageV1(0, 0, legacyMsg{value: []byte("a"), ts: 1}), messageV1(1, 0, legacyMsg{value: []byte("b"), ts: 2})...)
	out, berr := upConvertMessageSet(messageV1(1, 1|legacyAttrLogAppendTime, legacyMsg{value: gzipped(t, inner), ts: 777}), 1<<20)
	if berr != nil {
		t.Fatal(berr)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(out); err != nil {
		t.Fatal(err)
	}
	if rb.FirstTimestamp != 777 || rb.MaxTimestamp != 777 || rb.NumRecords != 2 || rb.Attributes != 0 {
		t.Fatalf("batch first %d max %d records %d attributes %d", rb.FirstTimestamp, rb.MaxTimestamp, rb.NumRecords, rb.Attributes)
	}
}

// TestUpConvertCodecs: wrappers of every legacy codec, compressed by
// franz-go's compressor (xerial snappy, lz4 frames), up-convert to one
// valid uncompressed batch.
func TestUpConvertCodecs(t *testing.T) {
	var inner []byte
	for i := range 10 {
		inner = append(inner, messageV1(int64(i), 0, legacyMsg{key: []byte{byte(i)}, value: bytes.Repeat([]byte{byte(i)}, 100), ts: int64(1000 + i)})...)
	}
	for _, codec := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression()} {
		c, err := kgo.DefaultCompressor(codec)
		if err != nil {
			t.Fatal(err)
		}
		compressed, typ := c.Compress(new(bytes.Buffer), inner)
		set := messageV1(0, int8(typ), legacyMsg{value: compressed, ts: 5})
		out, berr := upConvertMessageSet(set, 1<<20)
		if berr != nil {
			t.Fatalf("codec %d: %v", typ, berr)
		}
		bi, berr := validateBatch(out, 1<<20)
		if berr != nil || bi.numRecords != 10 || bi.maxTimestamp != 1009 || bi.producerID != -1 {
			t.Fatalf("codec %d: batch %+v, %v", typ, bi, berr)
		}
	}
}

// FuzzUpConvert: any input either is refused with a batch error or becomes
// a batch that passes the normal v2 validation.
func FuzzUpConvert(f *testing.F) {
	good := messageV1(0, 0, legacyMsg{key: []byte("k"), value: []byte("v"), ts: 1})
	f.Add(good)
	f.Add(messageV0(0, 0, legacyMsg{value: []byte("v")}))
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(good)
	w.Close()
	f.Add(messageV1(0, 1, legacyMsg{value: buf.Bytes(), ts: 1}))
	f.Fuzz(func(t *testing.T, set []byte) {
		out, berr := upConvertMessageSet(set, 1<<20)
		if berr != nil {
			return
		}
		if _, verr := validateBatch(out, 1<<30); verr != nil {
			t.Fatalf("up-converted batch invalid: %v", verr)
		}
	})
}
