package dispatcher

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"time"

	"github.com/unilog/unilog/internal/fileops"
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
	checkpointMagic   = 0x55434B50 // "UCKP"
	checkpointVersion = 1
	checkpointSize    = 36
	checkpointName    = "checkpoint"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeCheckpoint lays c out as documented in the package doc.
func encodeCheckpoint(c Checkpoint) []byte {
	b := make([]byte, checkpointSize)
	binary.BigEndian.PutUint32(b[0:], checkpointMagic)
	binary.BigEndian.PutUint16(b[4:], checkpointVersion)
	binary.BigEndian.PutUint64(b[8:], uint64(c.CommitLogFlushed))
	binary.BigEndian.PutUint64(b[16:], uint64(c.Dispatched))
	binary.BigEndian.PutUint64(b[24:], uint64(c.Time.UnixNano()))
	binary.BigEndian.PutUint32(b[32:], crc32c(b[:32]))
	return b
}

// decodeCheckpoint parses and validates a checkpoint file's bytes.
func decodeCheckpoint(b []byte) (Checkpoint, error) {
	if len(b) != checkpointSize {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint is %d bytes, want %d", ErrCorrupt, len(b), checkpointSize)
	}
	if m := binary.BigEndian.Uint32(b[0:]); m != checkpointMagic {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint magic %#x", ErrCorrupt, m)
	}
	if want, got := crc32c(b[:32]), binary.BigEndian.Uint32(b[32:]); want != got {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint crc %#x, computed %#x", ErrCorrupt, got, want)
	}
	// The version is checked after the CRC so that a torn file is reported as
	// corrupt rather than as coming from a newer release.
	if v := binary.BigEndian.Uint16(b[4:]); v != checkpointVersion {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint version %d", ErrUnsupportedVersion, v)
	}
	if r := binary.BigEndian.Uint16(b[6:]); r != 0 {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint reserved field %#x", ErrCorrupt, r)
	}
	c := Checkpoint{
		CommitLogFlushed: int64(binary.BigEndian.Uint64(b[8:])),
		Dispatched:       int64(binary.BigEndian.Uint64(b[16:])),
		Time:             time.Unix(0, int64(binary.BigEndian.Uint64(b[24:]))).UTC(),
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
		return Checkpoint{}, fmt.Errorf("dispatcher: read checkpoint: %w", err)
	}
	c, err := decodeCheckpoint(b)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("dispatcher: checkpoint %s: %w", path, err)
	}
	return c, nil
}

// writeCheckpoint replaces the checkpoint atomically: a crash leaves either
// the old or the new file, never a torn one.
func writeCheckpoint(ops fileOps, dir string, c Checkpoint) error {
	if err := fileops.ReplaceFile(ops, filepath.Join(dir, checkpointName), encodeCheckpoint(c), 0o644); err != nil {
		return fmt.Errorf("dispatcher: write checkpoint: %w", err)
	}
	return nil
}

// Sentinel errors.
var (
	ErrCorrupt            = errors.New("dispatcher: corrupt")
	ErrUnsupportedVersion = errors.New("dispatcher: unsupported version")
	ErrLocked             = errors.New("dispatcher: data directory is in use by another process")
	ErrClosed             = errors.New("dispatcher: closed")
)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
