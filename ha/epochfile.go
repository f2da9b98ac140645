package ha

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/unilog/unilog/internal/fsutil"
)

// EpochFileName is the file in a node's data directory that holds the
// highest lease epoch the node has seen.
const EpochFileName = "lease.epoch"

// EpochStore keeps the highest lease epoch a node has seen across its
// restarts, so a lease bucket that went back (a forged or deleted key, a
// stale replica) never takes the node to an older epoch.
type EpochStore interface {
	// Load returns the epoch stored, 0 when none is.
	Load() (uint64, error)
	// Store makes epoch durable before it returns.
	Store(epoch uint64) error
}

// EpochFile is an EpochStore in one small file, framed as the bucket
// values are (version 1, CRC32C, JSON {"epoch": n}) and replaced
// atomically and durably (fsutil.ReplaceFile).
type EpochFile struct {
	path string
}

// NewEpochFile is the EpochStore at path; the file is created by the
// first Store.
func NewEpochFile(path string) *EpochFile { return &EpochFile{path: path} }

type epochValue struct {
	Epoch uint64 `json:"epoch"`
}

// Load reads the file. A missing file is epoch 0; a damaged one is an
// error wrapping ErrCorrupt, never 0: the node would then trust whatever
// epoch the bucket shows.
func (f *EpochFile) Load() (uint64, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("ha: lease epoch file: %w", err)
	}
	var v epochValue
	if err := decodeValue(b, &v); err != nil {
		return 0, fmt.Errorf("ha: lease epoch file %s (remove it to trust the control plane's epochs again): %w", f.path, err)
	}
	return v.Epoch, nil
}

// Store replaces the file with epoch.
func (f *EpochFile) Store(epoch uint64) error {
	b, err := encodeValue(epochValue{Epoch: epoch})
	if err != nil {
		return err
	}
	if err := fsutil.ReplaceFile(f.path, b, 0o644); err != nil {
		return fmt.Errorf("ha: lease epoch file: %w", err)
	}
	return nil
}
