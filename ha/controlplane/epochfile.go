package controlplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/framed"
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

// EpochFile is an EpochStore in one small file: JSON {"seen", "reserved"}
// in a Prefixed frame of internal/framed (magic "ULLE", version 1, length,
// CRC32C), replaced atomically and durably (fileops.ReplaceFile).
type EpochFile struct {
	path string
}

var epochFileFormat = framed.Format{Name: "lease epoch file", Magic: "ULLE", Version: 1, Shape: framed.Prefixed}

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
	_, body, err := epochFileFormat.Decode(b)
	if err == nil {
		err = json.Unmarshal(body, &m)
	}
	if err != nil {
		return EpochMarks{}, fmt.Errorf("ha: lease epoch file %s (remove it to trust the control plane's epochs again): %w: %w", f.path, ErrCorrupt, err)
	}
	return m, nil
}

// Store replaces the file with m.
func (f *EpochFile) Store(m EpochMarks) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := fileops.ReplaceFile(fileops.OS{}, f.path, epochFileFormat.Append(nil, body), 0o644); err != nil {
		return fmt.Errorf("ha: lease epoch file: %w", err)
	}
	return nil
}
