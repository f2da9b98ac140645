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

// EpochMarks are what a node keeps of lease epochs across its restarts.
type EpochMarks struct {
	// Seen is the highest epoch the node has acted on, following or
	// leading: it never follows a lease below it, so a lease bucket that
	// went back (a forged or deleted key, a wiped store) never takes it
	// to an older leader.
	Seen uint64 `json:"seen"`
	// Reserved is the highest epoch it has tried to write (at least
	// Seen): a write whose answer was lost may have been applied, so its
	// next lease is above it, never the same epoch twice.
	Reserved uint64 `json:"reserved"`
}

// EpochStore keeps a node's EpochMarks across its restarts.
type EpochStore interface {
	// Load returns the marks stored, zero when none are.
	Load() (EpochMarks, error)
	// Store makes m durable before it returns.
	Store(m EpochMarks) error
}

// EpochFile is an EpochStore in one small file, framed as the bucket
// values are (version 1, CRC32C, JSON {"seen", "reserved"}) and replaced
// atomically and durably (fsutil.ReplaceFile).
type EpochFile struct {
	path string
}

// NewEpochFile is the EpochStore at path; the file is created by the
// first Store.
func NewEpochFile(path string) *EpochFile { return &EpochFile{path: path} }

// Load reads the file. A missing file is zero marks; a damaged one is an
// error wrapping ErrCorrupt, never zero: the node would then trust
// whatever epoch the bucket shows.
func (f *EpochFile) Load() (EpochMarks, error) {
	var m EpochMarks
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("ha: lease epoch file: %w", err)
	}
	if err := decodeValue(b, &m); err != nil {
		return EpochMarks{}, fmt.Errorf("ha: lease epoch file %s (remove it to trust the control plane's epochs again): %w", f.path, err)
	}
	return m, nil
}

// Store replaces the file with m.
func (f *EpochFile) Store(m EpochMarks) error {
	b, err := encodeValue(m)
	if err != nil {
		return err
	}
	if err := fsutil.ReplaceFile(f.path, b, 0o644); err != nil {
		return fmt.Errorf("ha: lease epoch file: %w", err)
	}
	return nil
}
