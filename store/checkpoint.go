package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/unilog/unilog/dispatcher"
	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/framed"
)

// Checkpoint is the durable progress marker of a data directory. Every
// consume-queue entry for a record that starts before Dispatched was flushed
// before the checkpoint was written, so recovery re-dispatches from there.
type Checkpoint struct {
	CommitLogFlushed int64     // commit-log offset that was durable when the checkpoint was taken
	Dispatched       int64     // consume queues are complete and flushed for every record before it
	Time             time.Time // when the checkpoint was taken
}

const (
	checkpointSize = 36
	checkpointName = "checkpoint"
)

// checkpointFormat frames the checkpoint: a reserved uint16 (zero), then
// CommitLogFlushed, Dispatched and Time in unix nanoseconds.
var checkpointFormat = framed.Format{Name: "checkpoint", Magic: "UCKP", Version: 1, Shape: framed.Sealed}

// encodeCheckpoint lays c out as documented in the package doc.
func encodeCheckpoint(c Checkpoint) []byte {
	var p [26]byte
	binary.BigEndian.PutUint64(p[2:], uint64(c.CommitLogFlushed))
	binary.BigEndian.PutUint64(p[10:], uint64(c.Dispatched))
	binary.BigEndian.PutUint64(p[18:], uint64(c.Time.UnixNano()))
	return checkpointFormat.Append(make([]byte, 0, checkpointSize), p[:])
}

// decodeCheckpoint parses and validates a checkpoint file's bytes.
func decodeCheckpoint(b []byte) (Checkpoint, error) {
	if len(b) != checkpointSize {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint is %d bytes, want %d", ErrCorrupt, len(b), checkpointSize)
	}
	_, p, err := checkpointFormat.Decode(b)
	if errors.Is(err, framed.ErrNewerVersion) {
		return Checkpoint{}, fmt.Errorf("%w: %w", ErrUnsupportedVersion, err)
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	r := framed.NewReader(p)
	if reserved := r.U16(); reserved != 0 {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint reserved field %#x", ErrCorrupt, reserved)
	}
	c := Checkpoint{
		CommitLogFlushed: int64(r.U64()),
		Dispatched:       int64(r.U64()),
		Time:             time.Unix(0, int64(r.U64())).UTC(),
	}
	if err := r.Done(); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint: %w", ErrCorrupt, err)
	}
	if c.CommitLogFlushed < 0 || c.Dispatched < 0 || c.Dispatched > c.CommitLogFlushed {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint offsets flushed=%d dispatched=%d", ErrCorrupt, c.CommitLogFlushed, c.Dispatched)
	}
	return c, nil
}

// ReadCheckpoint reads the checkpoint file at path. A missing file is
// reported with an error wrapping fs.ErrNotExist.
func ReadCheckpoint(path string) (Checkpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("store: read checkpoint: %w", err)
	}
	c, err := decodeCheckpoint(b)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("store: checkpoint %s: %w", path, err)
	}
	return c, nil
}

// writeCheckpoint replaces the checkpoint atomically: a crash leaves either
// the old or the new file, never a torn one.
func writeCheckpoint(ops fileops.Replacer, dir string, c Checkpoint) error {
	if err := fileops.ReplaceFile(ops, filepath.Join(dir, checkpointName), encodeCheckpoint(c), 0o644); err != nil {
		return fmt.Errorf("store: write checkpoint: %w", err)
	}
	return nil
}

// Sentinel errors.
var (
	ErrCorrupt            = errors.New("store: corrupt")
	ErrUnsupportedVersion = errors.New("store: unsupported version")
	ErrLocked             = errors.New("store: data directory is in use by another process")
	ErrClosed             = dispatcher.ErrClosed
)
