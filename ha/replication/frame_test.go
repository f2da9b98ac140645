package replication

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/unilog/unilog/commitlog"
)

func TestFrameRoundTrip(t *testing.T) {
	var stream []byte
	stream = append(stream, encodeHello(7, hello{end: 4096, lastEpoch: 6, node: "node-1", nonce: nonce{1, 2, 3}})...)
	stream = appendFrame(stream, frameData, 7, int64s(6, 100, 4096), []byte("raw bytes"))
	stream = appendFrame(stream, frameFenced, 9)
	fr := &frameReader{r: bytes.NewReader(stream), max: 1 << 16}

	f, err := fr.next()
	if err != nil || f.typ != frameHello || f.epoch != 7 {
		t.Fatalf("hello frame: %+v %v", f, err)
	}
	if h, err := decodeHello(f.payload); err != nil || h != (hello{end: 4096, lastEpoch: 6, node: "node-1", nonce: nonce{1, 2, 3}}) {
		t.Fatalf("hello: %+v %v", h, err)
	}
	f, err = fr.next()
	var rec, hw, phys int64
	if err != nil || f.typ != frameData || readInt64s(f.payload, &rec, &hw, &phys) != nil || rec != 6 || hw != 100 || phys != 4096 || string(f.payload[dataHeader:]) != "raw bytes" {
		t.Fatalf("data frame: %+v %v", f, err)
	}
	if f, err = fr.next(); err != nil || f.typ != frameFenced || f.epoch != 9 || len(f.payload) != 0 {
		t.Fatalf("fenced frame: %+v %v", f, err)
	}

	for i := 4; i < len(stream); i++ {
		bad := bytes.Clone(stream)
		bad[i] ^= 0x10
		fr := &frameReader{r: bytes.NewReader(bad), max: 1 << 16}
		if _, err := fr.next(); !errors.Is(err, ErrProtocol) && i < 4+int(be.Uint32(stream)) {
			t.Fatalf("byte %d flipped: %v, want ErrProtocol", i, err)
		}
	}
}

// TestOffsetsFrames: a snapshot larger than MaxChunk is split into frames
// that read back, in order, to the same entries, only the last one marked
// so; an empty snapshot is one frame; an entry that does not fit its
// frame, a bad flag or a negative offset is refused.
func TestOffsetsFrames(t *testing.T) {
	var parts []commitlog.PartitionOffset
	for i := range 3000 {
		parts = append(parts, commitlog.PartitionOffset{
			Topic: fmt.Sprintf("%0900d", i), TopicID: commitlog.TopicID{byte(i), 1}, Partition: int32(i % 17), Next: int64(i) << 20,
		})
	}
	for _, tc := range []struct {
		name   string
		parts  []commitlog.PartitionOffset
		frames int
	}{
		{"none", nil, 1},
		{"one", parts[:1], 1},
		{"three frames", parts, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr := &frameReader{r: bytes.NewReader(appendOffsets(nil, 4, 1<<30, tc.parts)), max: MaxChunk + 1<<20}
			var got []commitlog.PartitionOffset
			for i := 0; ; i++ {
				f, err := fr.next()
				if err != nil || f.typ != frameOffsets || f.epoch != 4 {
					t.Fatalf("frame %d: %+v %v", i, f.typ, err)
				}
				o, err := decodeOffsets(f.payload)
				if err != nil || o.at != 1<<30 {
					t.Fatalf("frame %d: at %d: %v", i, o.at, err)
				}
				got = append(got, o.parts...)
				if o.last {
					if i+1 != tc.frames {
						t.Fatalf("%d frames, want %d", i+1, tc.frames)
					}
					break
				}
			}
			if !slices.Equal(got, tc.parts) {
				t.Fatalf("read back %d entries, want %d, or they differ", len(got), len(tc.parts))
			}
		})
	}

	one := appendOffsetsFrame(nil, 1, offsets{at: 5, last: true, parts: parts[:1]})[headerSize : len(parts[0].Topic)+headerSize+offsetsHeader+offsetsFixed]
	for _, tc := range []struct {
		name    string
		payload []byte
	}{
		{"short header", one[:offsetsHeader-1]},
		{"entry cut short", one[:len(one)-1]},
		{"trailing bytes", append(bytes.Clone(one), 0)},
		{"bad last flag", func() []byte { b := bytes.Clone(one); b[8] = 2; return b }()},
		{"more entries than bytes", func() []byte { b := bytes.Clone(one); b[12] = 2; return b }()},
		{"negative next", func() []byte { b := bytes.Clone(one); b[len(b)-8] = 0x80; return b }()},
		{"negative at", func() []byte { b := bytes.Clone(one); b[0] = 0x80; return b }()},
	} {
		if _, err := decodeOffsets(tc.payload); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: %v, want ErrProtocol", tc.name, err)
		}
	}
	if o, err := decodeOffsets(one); err != nil || len(o.parts) != 1 || o.parts[0] != parts[0] || !o.last {
		t.Fatalf("the intact payload: %+v %v", o, err)
	}
}

// FuzzFrames: reading frames from arbitrary bytes never panics, never
// returns a payload past the frame, and a hello that decodes re-encodes
// to the same frame.
func FuzzFrames(f *testing.F) {
	f.Add(encodeHello(3, hello{end: 1 << 20, lastEpoch: 2, node: "a"}))
	f.Add(appendFrame(nil, frameData, 3, int64s(2, 10, 20), []byte("xyz")))
	f.Add(appendFrame(nil, frameAck, 3, int64s(10, 5)))
	f.Add(appendOffsets(nil, 3, 1<<16, []commitlog.PartitionOffset{{Topic: "t", Partition: 2, Next: 9}, {Topic: "u", TopicID: commitlog.TopicID{1}, Next: 1}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := &frameReader{r: bytes.NewReader(b), max: 1 << 16}
		for {
			fm, err := fr.next()
			if err != nil {
				return
			}
			if len(fm.payload) > len(b) {
				t.Fatalf("payload of %d bytes from %d", len(fm.payload), len(b))
			}
			if fm.typ == frameOffsets {
				if o, err := decodeOffsets(fm.payload); err == nil {
					if again := appendOffsetsFrame(nil, fm.epoch, o); !bytes.Contains(b, again) {
						t.Fatalf("offsets %+v do not re-encode to their frame", o)
					}
				}
			}
			if fm.typ == frameHello {
				if h, err := decodeHello(fm.payload); err == nil {
					again := encodeHello(fm.epoch, h)
					if !bytes.Contains(b, again) {
						t.Fatalf("hello %+v does not re-encode to its frame", h)
					}
				}
			}
		}
	})
}
