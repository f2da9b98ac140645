package controlplane

import (
	"errors"
	"testing"
)

func TestValueCodec(t *testing.T) {
	good, err := encodeValue(leaseValue{Group: "g", Holder: 3, Epoch: 9, DurationMs: 6000})
	if err != nil {
		t.Fatal(err)
	}
	var back leaseValue
	if err := decodeValue(good, &back); err != nil || back.Holder != 3 || back.Epoch != 9 {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	flip := func(i int) []byte {
		b := append([]byte(nil), good...)
		b[i] ^= 1
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"header only, short", good[:4]},
		{"other version", flip(0)},
		{"CRC flipped", flip(2)},
		{"body flipped", flip(len(good) - 2)},
		{"body cut", good[:len(good)-1]},
		{"CRC of a body that is not JSON", []byte{1, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v leaseValue
			if err := decodeValue(tc.b, &v); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v, want ErrCorrupt", err)
			}
		})
	}
}
