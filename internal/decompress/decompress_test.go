package decompress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// compress encodes plain the way Kafka clients do for codec: gzip, the lz4
// frame format, zstd, and snappy raw or in xerial framing.
func compress(t testing.TB, codec Codec, xerial bool, plain []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch codec {
	case Gzip:
		w = gzip.NewWriter(&buf)
	case Lz4:
		w = lz4.NewWriter(&buf)
	case Zstd:
		zw, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w = zw
	case Snappy:
		if !xerial {
			return s2.EncodeSnappy(nil, plain)
		}
		buf.Write(xerialMagic)
		buf.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1})
		for len(plain) > 0 {
			n := min(len(plain), 32<<10)
			block := s2.EncodeSnappy(nil, plain[:n])
			buf.Write(binary.BigEndian.AppendUint32(nil, uint32(len(block))))
			buf.Write(block)
			plain = plain[n:]
		}
		return buf.Bytes()
	default:
		t.Fatalf("codec %v", codec)
	}
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type variant struct {
	codec  Codec
	xerial bool
}

func (v variant) String() string {
	if v.xerial {
		return "snappy-xerial"
	}
	return v.codec.String()
}

var variants = []variant{{Gzip, false}, {Snappy, false}, {Snappy, true}, {Lz4, false}, {Zstd, false}}

func TestAppend(t *testing.T) {
	plain := bytes.Repeat([]byte("unilog record payload "), 5000) // 110,000 bytes
	n := int64(len(plain))
	for _, v := range variants {
		src := compress(t, v.codec, v.xerial, plain)
		for _, tc := range []struct {
			name  string
			limit int64
			err   error
		}{
			{"under the limit", n + 1, nil},
			{"exactly the limit", n, nil},
			{"one byte over", n - 1, ErrTooLarge},
			{"far over", 1000, ErrTooLarge},
		} {
			t.Run(v.String()+"/"+tc.name, func(t *testing.T) {
				got, err := Append(nil, src, v.codec, tc.limit)
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				if err == nil && !bytes.Equal(got, plain) {
					t.Fatalf("decompressed %d bytes, want the %d compressed", len(got), len(plain))
				}
				if int64(len(got)) > tc.limit {
					t.Fatalf("returned %d bytes past the limit %d", len(got), tc.limit)
				}
			})
		}
	}
}

func TestCorruptInput(t *testing.T) {
	plain := bytes.Repeat([]byte("x"), 1000)
	for _, v := range variants {
		src := compress(t, v.codec, v.xerial, plain)
		bad := append([]byte(nil), src[:len(src)/2]...)
		t.Run(v.String(), func(t *testing.T) {
			if _, err := Append(nil, bad, v.codec, 1<<20); err == nil {
				t.Fatal("a truncated payload decompressed without error")
			}
			if _, err := Append(nil, []byte("not compressed at all"), v.codec, 1<<20); err == nil {
				t.Fatal("garbage decompressed without error")
			}
		})
	}
	if _, err := NewReader(7, nil, 1, 1); !errors.Is(err, ErrCodec) {
		t.Fatalf("codec 7: err = %v, want ErrCodec", err)
	}
}

// TestBombReadsAtMostTheLimit decompresses 64 MiB of zeros with a 1 MiB
// limit: the reader stops there, however much the payload claims.
func TestBombReadsAtMostTheLimit(t *testing.T) {
	plain := make([]byte, 64<<20)
	const limit = 1 << 20
	for _, v := range variants {
		src := compress(t, v.codec, v.xerial, plain)
		t.Run(v.String(), func(t *testing.T) {
			r, err := NewReader(v.codec, src, limit, Memory(limit))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			n, err := io.Copy(io.Discard, r)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v after %d bytes, want ErrTooLarge", err, n)
			}
			if n > limit {
				t.Fatalf("read %d bytes, past the limit %d", n, limit)
			}
		})
	}
}

// TestSnappyBlockMemory: a snappy payload may decompress to its limit
// however far past the memory allowed, a block at a time, as long as no
// block decodes to more than that memory: xerial framing's 32 KiB blocks
// pass, a raw block of the same bytes is ErrTooLarge before it is decoded.
func TestSnappyBlockMemory(t *testing.T) {
	plain := bytes.Repeat([]byte("unilog snappy "), 40<<10) // 560 KiB
	const memory = 64 << 10
	for _, tc := range []struct {
		xerial bool
		limit  int64
		err    error
	}{
		{true, 1 << 20, nil},
		{false, 1 << 20, ErrTooLarge},
		{true, 256 << 10, ErrTooLarge},
	} {
		src := compress(t, Snappy, tc.xerial, plain)
		r, err := NewReader(Snappy, src, tc.limit, memory)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		_, err = out.ReadFrom(r)
		r.Close()
		switch {
		case !errors.Is(err, tc.err) || tc.err == nil && err != nil:
			t.Errorf("xerial %v, limit %d: %v, want %v", tc.xerial, tc.limit, err, tc.err)
		case err == nil && !bytes.Equal(out.Bytes(), plain):
			t.Errorf("xerial %v: %d bytes decoded, not the %d compressed", tc.xerial, out.Len(), len(plain))
		case tc.err != nil && !tc.xerial && out.Len() != 0:
			t.Errorf("the raw block too large for the memory decoded %d bytes", out.Len())
		}
	}
}
