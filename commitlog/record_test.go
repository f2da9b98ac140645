package commitlog

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte{0xAB}, 1<<20)
	tests := []struct {
		name string
		m    Message
	}{
		{"empty", Message{}},
		{"nil key", Message{Topic: "t", Body: []byte("v")}},
		{"empty key", Message{Topic: "t", Key: []byte{}, Body: []byte("v")}},
		{"key and body", Message{Topic: "orders", Partition: 7, Key: []byte("k1"), Body: []byte("hello")}},
		{"topic id", Message{Topic: "orders", TopicID: TopicID{0: 0xFF, 7: 1, 15: 0x80}, Body: []byte("v")}},
		{"headers", Message{Topic: "t", Headers: []Header{{"a", []byte("1")}, {"", nil}, {"c", []byte{}}}, Body: []byte("x")}},
		{"count and flags", Message{Topic: "t", Count: 42, Flags: 0x8000, ProducerTimestamp: -5, Body: []byte("bod")}},
		{"stamp offset", Message{Topic: "t", Flags: FlagStampOffset, Body: []byte("12345678rest")}},
		{"max topic", Message{Topic: strings.Repeat("t", math.MaxUint16), Body: []byte("b")}},
		{"max header key", Message{Topic: "t", Headers: []Header{{strings.Repeat("k", math.MaxUint16), []byte("v")}}}},
		{"many headers", Message{Topic: "t", Headers: make([]Header, 1000)}},
		{"max partition", Message{Topic: "t", Partition: math.MaxInt32, Body: big[:10]}},
		{"1 MiB body", Message{Topic: "t", Key: big[:1000], Body: big}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const phys, q, ts = 1 << 40, 123456789, 1700000000000
			b := Encode([]byte("prefix"), &tt.m, phys, q, ts)
			if !bytes.HasPrefix(b, []byte("prefix")) {
				t.Fatal("Encode lost dst")
			}
			b = b[len("prefix"):]
			if len(b) != EncodedSize(&tt.m) {
				t.Fatalf("encoded %d bytes, EncodedSize says %d", len(b), EncodedSize(&tt.m))
			}
			r, err := Decode(append(b, 0xFF, 0xFF)) // trailing bytes are not part of the record
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if d := sameMessage(r, &tt.m); d != "" {
				t.Fatal(d)
			}
			if r.PhysOffset != phys || r.QueueOffset != q || r.StoreTimestamp != ts || int(r.TotalSize) != len(b) || r.Version != Version {
				t.Fatalf("offsets %d/%d ts %d size %d version %d", r.PhysOffset, r.QueueOffset, r.StoreTimestamp, r.TotalSize, r.Version)
			}
			if tt.m.Flags&FlagStampOffset != 0 && string(tt.m.Body[:8]) != "12345678" {
				t.Fatal("Encode modified the caller's body")
			}
		})
	}
}

func TestDecodeRejectsEveryFlippedByte(t *testing.T) {
	m := Message{Topic: "t", Key: []byte("k"), Headers: []Header{{"h", []byte("v")}}, Body: []byte("body")}
	b := Encode(nil, &m, 64, 3, 99)
	for i := range b {
		for _, bit := range []byte{0x01, 0x80} {
			c := bytes.Clone(b)
			c[i] ^= bit
			if _, err := Decode(c); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip %#x at byte %d: err %v, want ErrCorrupt", bit, i, err)
			}
		}
	}
	for n := 0; n < len(b); n++ {
		if _, err := Decode(b[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%d of %d bytes: err %v, want ErrCorrupt", n, len(b), err)
		}
	}
}

// reseal recomputes the CRC so a test reaches the checks behind it.
func reseal(b []byte) []byte {
	be.PutUint32(b[offCRC:], recordCRC(b))
	return b
}

func TestDecodeStructuralErrors(t *testing.T) {
	base := func() []byte {
		m := Message{Topic: "t", Key: []byte("k"), Body: []byte("body")}
		return Encode(nil, &m, 64, 3, 99)
	}
	tests := []struct {
		name string
		mut  func(b []byte) []byte
	}{
		{"size below minimum", func(b []byte) []byte { be.PutUint32(b, MinRecordSize-1); return b }},
		{"size beyond buffer", func(b []byte) []byte { be.PutUint32(b, uint32(len(b)+1)); return b }},
		{"blank magic", func(b []byte) []byte { b[offMagic] = BlankMagic; return reseal(b) }},
		{"version 3", func(b []byte) []byte { b[offVersion] = 3; return reseal(b) }},
		{"version 0", func(b []byte) []byte { b[offVersion] = 0; return reseal(b) }},
		{"version 2 below its minimum", func(b []byte) []byte {
			b = b[:MinRecordSize+TopicIDSize-1]
			be.PutUint32(b, uint32(len(b)))
			return reseal(b)
		}},
		{"count 0", func(b []byte) []byte { be.PutUint32(b[offCount:], 0); return reseal(b) }},
		{"negative partition", func(b []byte) []byte { be.PutUint32(b[offPartition:], math.MaxUint32); return reseal(b) }},
		{"negative phys", func(b []byte) []byte { be.PutUint64(b[offPhys:], math.MaxUint64); return reseal(b) }},
		{"topic overruns", func(b []byte) []byte { be.PutUint16(b[offTopicLen:], 0xFFFF); return reseal(b) }},
		{"key len -2", func(b []byte) []byte { be.PutUint32(b[fixedSize+1:], 0xFFFFFFFE); return reseal(b) }},
		{"body shorter than record", func(b []byte) []byte {
			be.PutUint32(b[len(b)-8:], 3)
			return reseal(b)
		}},
		{"trailing byte inside size", func(b []byte) []byte {
			b = append(b, 0)
			be.PutUint32(b, uint32(len(b)))
			return reseal(b)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Decode(tt.mut(base())); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		m    Message
		want error
	}{
		{"ok", Message{Topic: "t"}, nil},
		{"topic too long", Message{Topic: strings.Repeat("x", math.MaxUint16+1)}, ErrInvalid},
		{"header key too long", Message{Headers: []Header{{Key: strings.Repeat("x", math.MaxUint16+1)}}}, ErrInvalid},
		{"too many headers", Message{Headers: make([]Header, math.MaxUint16+1)}, ErrInvalid},
		{"negative count", Message{Count: -1}, ErrInvalid},
		{"count an empty body cannot hold", Message{Count: MaxCountPerByte + 1}, ErrInvalid},
		{"count the body holds", Message{Count: 2 * MaxCountPerByte, Body: []byte("ab")}, nil},
		{"count the body cannot hold", Message{Count: 0x7fffffff, Body: make([]byte, 70)}, ErrInvalid},
		{"negative partition", Message{Partition: -1}, ErrInvalid},
		{"stamp without room", Message{Flags: FlagStampOffset, Body: []byte("1234567")}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := validate(&tt.m)
			if !errors.Is(err, tt.want) || (err == nil && n != EncodedSize(&tt.m)) {
				t.Fatalf("validate = %d, %v; want %v", n, err, tt.want)
			}
		})
	}
}

func TestEncodeAllocations(t *testing.T) {
	m := Message{Topic: "t", Key: []byte("k"), Body: make([]byte, 100)}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = Encode(buf[:0], &m, 0, 0, 0) }); n != 0 {
		t.Fatalf("Encode into a large enough buffer allocates %v times", n)
	}
}

// TestDecodeRefusesImpossibleCount: a record whose count no body of its
// size could stand for (written by an older build, which took a Kafka
// batch's count on trust) is corrupt, not 2^31-1 offsets to index.
func TestDecodeRefusesImpossibleCount(t *testing.T) {
	for _, tc := range []struct {
		count int32
		body  int
		ok    bool
	}{
		{MaxCountPerByte * 70, 70, true},
		{MaxCountPerByte*70 + 1, 70, false},
		{0x7fffffff, 70, false},
		{MaxCountPerByte, 0, true},
	} {
		b := Encode(nil, &Message{Topic: "t", Count: tc.count, Body: make([]byte, tc.body)}, 0, 0, 0)
		_, err := Decode(b)
		if tc.ok != (err == nil) || err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("count %d in %d bytes: %v", tc.count, tc.body, err)
		}
	}
}
