// Package decompress opens the compressed payloads Kafka clients send (the
// records of a v2 batch, the inner message set of a magic 0/1 wrapper) as
// a stream with a hard bound on what it yields.
//
// A few kilobytes of gzip, lz4, snappy or zstd can claim gigabytes, so no
// codec is asked to produce its whole output at once: a Reader hands out
// the decompressed bytes as they are decoded and fails with ErrTooLarge as
// soon as more than its limit would come out, having decoded at most the
// limit. What a Reader holds is the codec's state, bounded apart from the
// limit: gzip's 32 KiB window, an lz4 frame's block (at most 4 MiB), a
// zstd window (at most MaxWindow), a snappy block (decoded whole: its
// decoded length is checked against the memory the caller allows before it
// is decoded). So the limit bounds the CPU a payload may cost and memory
// what it may hold. The codecs' readers are pooled, so a batch costs no
// decoder allocation.
//
// Snappy comes in two framings: Kafka's Java clients write xerial's
// (a magic header, then length-prefixed raw snappy blocks, 32 KiB each),
// others (franz-go, librdkafka) a single raw snappy block; both are read.
// A raw block's copies may reach back to its first byte, so it cannot be
// decoded in less memory than its decoded length. Lz4 is the frame format, as Kafka writes
// it for magic 1 and 2.
package decompress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is Kafka's compression codec number (a batch's attributes & 7).
type Codec int8

const (
	None   Codec = 0
	Gzip   Codec = 1
	Snappy Codec = 2
	Lz4    Codec = 3
	Zstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case Lz4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("codec %d", int8(c))
}

// MaxWindow is the largest zstd window a frame may ask for: zstd's levels
// up to 19 stay within it whatever the input; a frame asking for more is
// refused rather than allowed to allocate its window.
const MaxWindow = 8 << 20

// stateBound is the most a Reader holds for its codec apart from a
// snappy block: an lz4 frame's 4 MiB block with its compressed copy, or a
// zstd window of at most MaxWindow.
const stateBound = MaxWindow

// Memory is the memory to allow a Reader (NewReader's memory) that
// must decode a snappy block of up to block bytes: at least the other
// codecs' state, so a snappy block of up to stateBound + block bytes is
// read in what any codec may hold. Callers that account for memory
// reserve it before decompressing.
func Memory(block int64) int64 { return stateBound + block }

var (
	// ErrTooLarge is returned once the output would exceed the limit.
	ErrTooLarge = errors.New("decompress: output exceeds its limit")
	// ErrCodec is returned for a codec this package does not know.
	ErrCodec = errors.New("decompress: unknown compression codec")
)

// Reader streams the decompressed bytes of one payload. It is not safe
// for concurrent use; Close returns its decoder to the pool.
type Reader struct {
	codec Codec
	dec   io.Reader // the codec's stream, nil once closed
	left  int64     // bytes the limit still allows
	src   bytes.Reader

	gz   *gzip.Reader
	lz   *lz4.Reader
	zs   *zstd.Decoder
	snap *snappyReader
}

var (
	gzipPool   sync.Pool
	lz4Pool    = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	zstdPool   = sync.Pool{New: newZstd}
	snappyPool = sync.Pool{New: func() any { return new(snappyReader) }}
	readerPool = sync.Pool{New: func() any { return new(Reader) }}
)

func newZstd() any {
	// One goroutine-free decoder per Reader: concurrency 1 decodes in the
	// caller's Read, and low memory grows buffers as the frame needs them.
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(MaxWindow),
	)
	if err != nil {
		panic(fmt.Sprintf("decompress: zstd options: %v", err))
	}
	return d
}

// NewReader returns a Reader of src decompressed with codec that yields at
// most limit bytes and holds at most memory (a snappy block that would
// decode to more is ErrTooLarge). src must stay unchanged until Close.
func NewReader(codec Codec, src []byte, limit, memory int64) (*Reader, error) {
	r := readerPool.Get().(*Reader)
	r.codec, r.left = codec, limit
	r.src.Reset(src)
	var err error
	switch codec {
	case Gzip:
		if gz, ok := gzipPool.Get().(*gzip.Reader); ok {
			r.gz, err = gz, gz.Reset(&r.src)
		} else {
			r.gz, err = gzip.NewReader(&r.src)
		}
		r.dec = r.gz
	case Lz4:
		r.lz = lz4Pool.Get().(*lz4.Reader)
		r.lz.Reset(&r.src)
		r.dec = r.lz
	case Zstd:
		r.zs = zstdPool.Get().(*zstd.Decoder)
		err = r.zs.Reset(&r.src)
		r.dec = r.zs
	case Snappy:
		r.snap = snappyPool.Get().(*snappyReader)
		err = r.snap.reset(src, limit, memory)
		r.dec = r.snap
	default:
		err = fmt.Errorf("%w %d", ErrCodec, codec)
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("decompress: %s: %w", codec, err)
	}
	return r, nil
}

// Read reads decompressed bytes. Past the limit it returns ErrTooLarge,
// having decoded at most one byte more than the limit.
func (r *Reader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		// One more byte tells a payload of exactly the limit from a
		// larger one.
		var one [1]byte
		if n, err := io.ReadFull(r.dec, one[:]); n > 0 {
			return 0, ErrTooLarge
		} else if err == io.ErrUnexpectedEOF || err == io.EOF {
			return 0, io.EOF
		} else {
			return 0, r.wrap(err)
		}
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.dec.Read(p)
	r.left -= int64(n)
	if err != nil && err != io.EOF {
		err = r.wrap(err)
	}
	return n, err
}

func (r *Reader) wrap(err error) error {
	if errors.Is(err, ErrTooLarge) {
		return err
	}
	return fmt.Errorf("decompress: %s: %w", r.codec, err)
}

// Close returns the Reader and its decoder to their pools.
func (r *Reader) Close() {
	if r.gz != nil {
		gzipPool.Put(r.gz)
	}
	if r.lz != nil {
		r.lz.Reset(nil)
		lz4Pool.Put(r.lz)
	}
	if r.zs != nil {
		// Reset(nil) drops the reference to src and the frame state.
		_ = r.zs.Reset(nil)
		zstdPool.Put(r.zs)
	}
	if r.snap != nil {
		r.snap.reset(nil, 0, 0)
		snappyPool.Put(r.snap)
	}
	r.src.Reset(nil)
	*r = Reader{}
	readerPool.Put(r)
}

// Append decompresses all of src onto dst, refusing with ErrTooLarge an
// output over limit bytes; it holds at most limit bytes of output.
func Append(dst, src []byte, codec Codec, limit int64) ([]byte, error) {
	r, err := NewReader(codec, src, limit, limit)
	if err != nil {
		return dst, err
	}
	defer r.Close()
	buf := bytes.NewBuffer(dst)
	_, err = buf.ReadFrom(r)
	return buf.Bytes(), err
}

// xerialMagic starts Kafka's xerial-framed snappy: the magic, then two
// big-endian int32 versions.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// snappyReader decodes xerial framing block by block, or a raw snappy
// block whole; every block's decoded length is checked against what the
// limit leaves and against the memory allowed before it is decoded.
type snappyReader struct {
	src    []byte // blocks not yet decoded
	xerial bool
	left   int64  // limit left for blocks not yet decoded
	memory int64  // the largest block to decode
	block  []byte // decoded bytes not yet read
	buf    []byte
}

func (s *snappyReader) reset(src []byte, limit, memory int64) error {
	s.src, s.left, s.memory, s.block = src, limit, memory, nil
	s.xerial = len(src) >= xerialHeaderSize && bytes.HasPrefix(src, xerialMagic)
	if s.xerial {
		s.src = src[xerialHeaderSize:]
	}
	if cap(s.buf) > 1<<20 {
		s.buf = nil // keep a bomb's block out of the pool
	}
	return nil
}

func (s *snappyReader) Read(p []byte) (int, error) {
	for len(s.block) == 0 {
		if len(s.src) == 0 {
			return 0, io.EOF
		}
		if err := s.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.block)
	s.block = s.block[n:]
	return n, nil
}

// next decodes the next block into s.block.
func (s *snappyReader) next() error {
	enc := s.src
	if s.xerial {
		if len(s.src) < 4 {
			return errors.New("xerial snappy block length truncated")
		}
		n := binary.BigEndian.Uint32(s.src)
		if int64(n) > int64(len(s.src)-4) {
			return fmt.Errorf("xerial snappy block of %d bytes with %d left", n, len(s.src)-4)
		}
		enc, s.src = s.src[4:4+n], s.src[4+n:]
	} else {
		s.src = nil
	}
	n, err := s2.DecodedLen(enc)
	if err != nil {
		return err
	}
	if int64(n) > s.left || int64(n) > s.memory {
		return ErrTooLarge
	}
	s.left -= int64(n)
	if cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	s.block, err = s2.Decode(s.buf[:n], enc)
	return err
}
