package group

import (
	"reflect"
	"testing"

	"github.com/unilog/unilog/internal/framed/framedtest"
)

// TestFormatsAsOlderBuildsWrote: the offsets snapshot is written byte for
// byte as before the framed codec, and that build's file
// (testdata/formats) still reads back.
func TestFormatsAsOlderBuildsWrote(t *testing.T) {
	want := snapshot{
		next: []int64{5, 7},
		entries: []snapshotEntry{
			{key: offsetKey{group: "g", topic: "t", partition: 3}, value: Offset{Offset: 99, LeaderEpoch: 2, Metadata: "m", CommitMs: 1700000000000}, end: 4096},
			{key: offsetKey{group: "h", topic: "u", partition: 0}, value: Offset{Offset: 1, LeaderEpoch: -1, CommitMs: 1700000000001}, end: 8192},
		},
	}
	b := framedtest.Golden(t, "offsets-snapshot", encodeSnapshot(want))
	if got, err := decodeSnapshot(b); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("offsets snapshot: %+v, %v; want %+v", got, err, want)
	}
}
