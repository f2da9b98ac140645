package group

import (
	"bytes"
	"testing"
)

// FuzzSnapshot: decoding arbitrary bytes never panics, and what decodes
// encodes back to the same bytes (nothing is silently dropped or altered).
func FuzzSnapshot(f *testing.F) {
	f.Add(encodeSnapshot(snapshot{next: []int64{0, 5}}))
	f.Add(encodeSnapshot(snapshot{next: []int64{2}, entries: []snapshotEntry{{offsetKey{"g", "t", 3}, Offset{Offset: 7, LeaderEpoch: -1, Metadata: "m", CommitMs: 1}, 99}}}))
	f.Add([]byte("ULGS"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSnapshot(b)
		if err != nil {
			return
		}
		if again := encodeSnapshot(s); !bytes.Equal(again, b) {
			t.Fatalf("decoded %+v re-encodes to %x, not %x", s, again, b)
		}
	})
}

// FuzzOffsetRecord: keys and values decode without panicking and
// round-trip.
func FuzzOffsetRecord(f *testing.F) {
	f.Add(encodeKey(offsetKey{"g", "t", 1}), encodeValue(Offset{Offset: 1, LeaderEpoch: 2, Metadata: "x", CommitMs: 3}))
	f.Add([]byte{0, 1}, []byte{0, 3})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if k, err := decodeKey(key); err == nil && !bytes.Equal(encodeKey(k), key) {
			t.Fatalf("key %x round-trips to %x", key, encodeKey(k))
		}
		if v, err := decodeValue(value); err == nil && !bytes.Equal(encodeValue(v), value) {
			t.Fatalf("value %x round-trips to %x", value, encodeValue(v))
		}
	})
}
