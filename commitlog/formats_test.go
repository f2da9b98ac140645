package commitlog

import (
	"slices"
	"testing"

	"github.com/unilog/unilog/internal/framed/framedtest"
)

// TestFormatsAsOlderBuildsWrote: the flushed mark and the leader-epoch file
// are written byte for byte as before the framed codec, and those files
// (testdata/formats, written by that build) still read back.
func TestFormatsAsOlderBuildsWrote(t *testing.T) {
	const mark = 123456789
	b := framedtest.Golden(t, "flushed", encodeMark(make([]byte, markSize), mark))
	if got, err := decodeMark(b); err != nil || got != mark {
		t.Errorf("flushed mark: %d, %v; want %d", got, err, mark)
	}

	epochs := []EpochStart{{1, 0}, {2, 100}, {7, 4096}}
	b = framedtest.Golden(t, "leader-epochs", encodeEpochs(epochs))
	if got, err := decodeEpochs(b); err != nil || !slices.Equal(got, epochs) {
		t.Errorf("leader epochs: %v, %v; want %v", got, err, epochs)
	}
}
