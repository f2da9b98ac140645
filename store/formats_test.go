package store

import (
	"testing"
	"time"

	"github.com/unilog/unilog/internal/framed/framedtest"
)

// TestFormatsAsOlderBuildsWrote: the checkpoint is written byte for byte as
// before the framed codec, and that build's file (testdata/formats) still
// reads back.
func TestFormatsAsOlderBuildsWrote(t *testing.T) {
	want := Checkpoint{CommitLogFlushed: 1 << 20, Dispatched: 1 << 19, Time: time.Unix(0, 1700000000123456789).UTC()}
	b := framedtest.Golden(t, "checkpoint", encodeCheckpoint(want))
	if got, err := decodeCheckpoint(b); err != nil || got != want {
		t.Errorf("checkpoint: %+v, %v; want %+v", got, err, want)
	}
}
