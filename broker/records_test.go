package broker

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/decompress"
)

var testCodecs = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

// encodeRecords encodes values as the records of a v2 batch.
func encodeRecords(values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Value = []byte(v)
		r.Length = int32(len(r.AppendTo(nil)) - kbin.VarintLen(r.Length))
		recs = r.AppendTo(recs)
	}
	return recs
}

// sealBatch encodes a v2 batch around records (already compressed with
// attrs' codec) that claims claimed records, with a valid CRC: what a
// client that lies about its count would send.
func sealBatch(records []byte, attrs int16, claimed int32) []byte {
	now := time.Now().UnixMilli()
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.Attributes = attrs
	rb.LastOffsetDelta = claimed - 1
	rb.FirstTimestamp, rb.MaxTimestamp = now, now
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = -1, -1, -1
	rb.NumRecords = claimed
	rb.Records = records
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-batchLengthSkew))
	resealCRC(b)
	return b
}

// compressedBatch compresses values' records with codec as franz-go does
// and claims claimed records.
func compressedBatch(t testing.TB, codec kgo.CompressionCodec, claimed int32, values ...string) []byte {
	t.Helper()
	c, err := kgo.DefaultCompressor(codec)
	if err != nil {
		t.Fatal(err)
	}
	compressed, typ := c.Compress(new(bytes.Buffer), encodeRecords(values...))
	return sealBatch(bytes.Clone(compressed), int16(typ), claimed)
}

func TestValidateBatchCountsRecords(t *testing.T) {
	for _, tc := range []struct {
		name    string
		claimed int32
		values  []string
		err     *kerr.Error
	}{
		{"honest", 3, []string{"a", "b", "c"}, nil},
		{"claims one more", 4, []string{"a", "b", "c"}, kerr.CorruptMessage},
		{"claims fewer", 2, []string{"a", "b", "c"}, kerr.CorruptMessage},
		{"claims 2^31-1", 0x7fffffff, []string{"a"}, kerr.CorruptMessage},
	} {
		t.Run("none/"+tc.name, func(t *testing.T) {
			_, berr := validateBatch(sealBatch(encodeRecords(tc.values...), 0, tc.claimed), 1<<20)
			if berr == nil && tc.err != nil || berr != nil && berr.err != tc.err {
				t.Fatalf("error %v, want %v", berr, tc.err)
			}
		})
		for _, c := range testCodecs {
			t.Run(c.name+"/"+tc.name, func(t *testing.T) {
				_, berr := validateBatch(compressedBatch(t, c.codec, tc.claimed, tc.values...), 1<<20)
				if berr == nil && tc.err != nil || berr != nil && berr.err != tc.err {
					t.Fatalf("error %v, want %v", berr, tc.err)
				}
			})
		}
	}
	// A record whose length runs past the records, or is too small to be one.
	recs := encodeRecords("abc")
	if _, berr := validateBatch(sealBatch(recs[:len(recs)-1], 0, 1), 1<<20); berr == nil || berr.err != kerr.CorruptMessage {
		t.Fatalf("truncated record: %v", berr)
	}
	if _, berr := validateBatch(sealBatch([]byte{2, 0}, 0, 1), 1<<20); berr == nil || berr.err != kerr.CorruptMessage {
		t.Fatalf("one-byte record: %v", berr)
	}
}

// TestLyingCompressedBatchRefused is the ~70-byte Produce of issue 15: a
// compressed batch claiming far more records than it holds. It is refused
// before it reaches the log, in every codec, and the broker goes on
// serving the partition, honest compressed batches included, and leaves a
// healthy data directory.
func TestLyingCompressedBatchRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	b, err := Open(cfg, testStore())
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "lies", 1)
	rc := dialRaw(t, b.Addr())
	for _, c := range testCodecs {
		for _, claimed := range []int32{2, 1000, 0x7fffffff} {
			resp, ok := rc.roundTrip(produceReq("lies", 0, 1, 5*time.Second, compressedBatch(t, c.codec, claimed, "only one")))
			if !ok {
				t.Fatalf("%s claiming %d: connection closed", c.name, claimed)
			}
			if code, _ := produceCode(resp); code != kerr.CorruptMessage.Code {
				t.Fatalf("%s batch claiming %d records of 1: error %v, want CORRUPT_MESSAGE", c.name, claimed, kerr.ErrorForCode(code))
			}
		}
		resp, _ := rc.roundTrip(produceReq("lies", 0, 1, 5*time.Second, compressedBatch(t, c.codec, 2, "honest "+c.name, "batch")))
		if code, _ := produceCode(resp); code != 0 {
			t.Fatalf("honest %s batch: %v", c.name, kerr.ErrorForCode(code))
		}
	}
	for _, c := range testCodecs {
		pcl := newClient(t, b.Addr(), kgo.ProducerBatchCompression(c.codec), kgo.DefaultProduceTopic("lies"))
		if err := pcl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("franz-go " + c.name)}).FirstErr(); err != nil {
			t.Fatalf("franz-go producing %s: %v", c.name, err)
		}
	}
	recs := consumeN(t, b.Addr(), "lies", 2*len(testCodecs)+len(testCodecs))
	if got := string(recs[0].Value); got != "honest gzip" {
		t.Fatalf("first record %q", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	verifyDir(t, dir)
}

// zeros is an endless reader of zero bytes, to compress bombs without
// holding them.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// bombSize is what every bomb expands to.
const bombSize = 512 << 20

// bombPayload compresses prefix and then bombSize zero bytes with codec (1
// gzip, 2 snappy, 3 lz4, 4 zstd). Snappy cannot compress 512 MiB below
// max.message.bytes, so its bomb is a block that claims that length, which
// a decoder trusting it allocates before decoding.
func bombPayload(t testing.TB, codec int, prefix []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch codec {
	case 1:
		return gzipZeros(prefix, bombSize)
	case 2:
		b := binary.AppendUvarint(nil, bombSize)
		return append(b, 0xfc, 0xff, 0xff, 0xff, 0xff) // a literal tag claiming 4 GiB
	case 3:
		lw := lz4.NewWriter(&buf)
		if err := lw.Apply(lz4.BlockSizeOption(lz4.Block4Mb), lz4.CompressionLevelOption(lz4.Level9)); err != nil {
			t.Fatal(err)
		}
		w = lw
	case 4:
		zw, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest))
		if err != nil {
			t.Fatal(err)
		}
		w = zw
	}
	// Through Write only: lz4's ReadFrom leaves its writer unclosable.
	if _, err := io.Copy(struct{ io.Writer }{w}, io.MultiReader(bytes.NewReader(prefix), io.LimitReader(zeros{}, bombSize))); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gzipZeros is one gzip member holding prefix and then n zero bytes (n a
// multiple of 1 MiB), its deflate stream made of one compressed MiB of
// zeros repeated: each piece is flushed to a byte boundary and refers to
// nothing before it, so the pieces concatenate. Compressing 512 MiB whole
// took 32 s under the race detector, for each of two bombs.
func gzipZeros(prefix []byte, n int) []byte {
	piece := func(b []byte, final bool) []byte {
		var buf bytes.Buffer
		w, _ := flate.NewWriter(&buf, flate.BestCompression)
		w.Write(b)
		if final {
			w.Close()
		} else {
			w.Flush()
		}
		return buf.Bytes()
	}
	mib := make([]byte, 1<<20)
	zeroed := piece(mib, false)
	out := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff} // RFC 1952 header: deflate, no flags, no time, unknown OS
	out = append(out, piece(prefix, false)...)
	crc := crc32.ChecksumIEEE(prefix)
	for range n / len(mib) {
		out = append(out, zeroed...)
		crc = crc32.Update(crc, crc32.IEEETable, mib)
	}
	out = append(out, piece(nil, true)...)
	out = binary.LittleEndian.AppendUint32(out, crc)
	return binary.LittleEndian.AppendUint32(out, uint32(len(prefix)+n))
}

// TestGzipZeros: the repeated pieces make one gzip member (the standard
// library's reader, told to stop after one) that decodes to the prefix and
// the zeros, its CRC and size checked on the way.
func TestGzipZeros(t *testing.T) {
	prefix := []byte("prefix")
	for _, n := range []int{0, 1 << 20, 3 << 20} {
		r, err := gzip.NewReader(bytes.NewReader(gzipZeros(prefix, n)))
		if err != nil {
			t.Fatal(err)
		}
		r.Multistream(false)
		want := append(append([]byte(nil), prefix...), make([]byte, n)...)
		if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d zeros: %d bytes back (want %d), error %v", n, len(got), len(want), err)
		}
	}
}

// TestDecompressionBombs sends decompression bombs of 512 MiB, v2 batches
// in each codec and legacy wrappers in each codec magic 1 allows, four at a
// time against one broker: each is answered MESSAGE_TOO_LARGE, and the
// heap in use (broker and test share the process) grows by far less than
// one bomb.
func TestDecompressionBombs(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.MaxMessageBytes = 4 << 20 // room for an lz4 bomb, whose ratio is at most ~250
	b := startBroker(t, cfg)
	createTopic(t, newClient(t, b.Addr()), "bombs", 1)

	type bomb struct {
		name   string
		legacy bool
		set    []byte
	}
	// The v2 bombs are one well-formed record whose value is the zeros; the
	// legacy ones, zeros where an inner message set should be.
	record := binary.AppendVarint(nil, 6+int64(kbin.VarintLen(bombSize))+bombSize)
	record = append(record, 0, 0, 0, 1) // attributes, timestamp and offset deltas, null key
	record = binary.AppendVarint(record, bombSize)
	var bombs []bomb
	for codec := 1; codec <= 4; codec++ {
		name := []string{"", "gzip", "snappy", "lz4", "zstd"}[codec]
		bombs = append(bombs, bomb{"v2 " + name, false, sealBatch(bombPayload(t, codec, record), int16(codec), 1)})
		if codec < legacyCodecZstd {
			bombs = append(bombs, bomb{"legacy " + name, true, messageV1(0, int8(codec), legacyMsg{value: bombPayload(t, codec, nil), ts: 1})})
		}
	}

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	const concurrent = 4
	var wg sync.WaitGroup
	errs := make(chan error, concurrent*len(bombs))
	for w := range concurrent {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := dialRaw(t, b.Addr())
			for i := range bombs {
				bm := bombs[(i+w)%len(bombs)]
				req := produceReq("bombs", 0, 1, 10*time.Second, bm.set)
				if bm.legacy {
					req.SetVersion(2)
				}
				resp, ok := rc.roundTrip(req)
				if !ok {
					errs <- fmt.Errorf("%s: connection closed", bm.name)
					return
				}
				if code, _ := produceCode(resp); code != kerr.MessageTooLarge.Code {
					errs <- fmt.Errorf("%s: error %v, want MESSAGE_TOO_LARGE", bm.name, kerr.ErrorForCode(code))
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	grew := int64(peak.Load()) - int64(base)
	t.Logf("%d bombs of %d MiB, %d at a time: heap in use grew by %.1f MiB at its peak", len(bombs), bombSize>>20, concurrent, float64(grew)/(1<<20))
	// Four bombs expanded would take 2 GiB; what is left is the requests'
	// frames, one max.message.bytes of output each, and garbage not yet
	// collected.
	if limit := int64(bombSize / 2); grew > limit {
		t.Fatalf("heap in use grew by %d MiB, over %d MiB", grew>>20, limit>>20)
	}
}

// TestCompressedBatchBeyondMaxMessageBytes: max.message.bytes is the size
// of a batch as sent, so a batch under it whose records decompress well
// past it is taken, as Kafka takes it (franz-go's
// TestConsumeMaxDecompressBatchBytes produces one); one past
// streamInflation times the limit is MESSAGE_TOO_LARGE. Snappy too: a
// franz-go snappy batch is one raw block, decoded whole, and is taken up
// to decompress.Memory of the limit (internal/decompress tests xerial's
// smaller blocks).
func TestCompressedBatchBeyondMaxMessageBytes(t *testing.T) {
	const limit = 64 << 10
	big := string(make([]byte, 3*limit))
	for _, c := range testCodecs {
		t.Run(c.name, func(t *testing.T) {
			batch := compressedBatch(t, c.codec, 1, big)
			if len(batch) > limit {
				t.Fatalf("%d bytes compressed, want a batch under the limit", len(batch))
			}
			if _, berr := validateBatch(batch, limit); berr != nil {
				t.Fatalf("%s: %v, want the batch taken", c.name, berr)
			}
			huge := string(make([]byte, streamInflation*limit+1))
			if _, berr := validateBatch(compressedBatch(t, c.codec, 1, huge), limit); berr == nil || berr.err != kerr.MessageTooLarge {
				t.Fatalf("%s past %dx the limit: %v, want MESSAGE_TOO_LARGE", c.name, streamInflation, berr)
			}
		})
	}
	// With a limit whose 64x is more than a snappy block may hold, a raw
	// block between the two is refused before it is decoded.
	const large = 1 << 20
	block := string(make([]byte, decompress.Memory(large)+1))
	if _, berr := validateBatch(compressedBatch(t, kgo.SnappyCompression(), 1, block), large); berr == nil || berr.err != kerr.MessageTooLarge {
		t.Fatalf("a raw snappy block past decompress.Memory of the limit: %v, want MESSAGE_TOO_LARGE", berr)
	}
}

// TestValidateBatchAllocs: checking an uncompressed batch allocates
// nothing, its records walked in place (a source per batch on the heap was
// one allocation per partition of every produce).
func TestValidateBatchAllocs(t *testing.T) {
	batch := sealBatch(encodeRecords("a", "b", "c"), 0, 3)
	if n := testing.AllocsPerRun(100, func() {
		if _, berr := validateBatch(batch, 1<<20); berr != nil {
			t.Fatal(berr)
		}
	}); n != 0 {
		t.Errorf("validateBatch of an uncompressed batch: %v allocations", n)
	}
}
