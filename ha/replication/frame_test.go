package replication

import (
	"bytes"
	"errors"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var stream []byte
	stream = append(stream, encodeHello(7, hello{end: 4096, lastEpoch: 6, node: "node-1"})...)
	stream = appendFrame(stream, frameData, 7, int64s(6, 100, 4096), []byte("raw bytes"))
	stream = appendFrame(stream, frameFenced, 9)
	fr := &frameReader{r: bytes.NewReader(stream), max: 1 << 16}

	f, err := fr.next()
	if err != nil || f.typ != frameHello || f.epoch != 7 {
		t.Fatalf("hello frame: %+v %v", f, err)
	}
	if h, err := decodeHello(f.payload); err != nil || h != (hello{end: 4096, lastEpoch: 6, node: "node-1"}) {
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

// FuzzFrames: reading frames from arbitrary bytes never panics, never
// returns a payload past the frame, and a hello that decodes re-encodes
// to the same frame.
func FuzzFrames(f *testing.F) {
	f.Add(encodeHello(3, hello{end: 1 << 20, lastEpoch: 2, node: "a"}))
	f.Add(appendFrame(nil, frameData, 3, int64s(2, 10, 20), []byte("xyz")))
	f.Add(appendFrame(nil, frameAck, 3, int64s(10, 5)))
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
