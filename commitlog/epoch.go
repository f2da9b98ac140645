package commitlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/framed"
)

// EpochFileName is the leader-epoch file in a log directory.
const EpochFileName = "leader-epochs"

// The epoch file layout is in the package doc (# Replication): a count
// and that many (epoch, start) pairs.
var epochFormat = framed.Format{Name: "epoch file", Magic: "ULEP", Version: 1, Shape: framed.Sealed}

const epochEntry = 16

// ErrEpoch is returned for an epoch or start offset that would not keep
// the epoch file increasing.
var ErrEpoch = errors.New("commitlog: epoch out of order")

// EpochStart says from which physical offset on the records of the log
// were written under a leader epoch.
type EpochStart struct {
	Epoch int64
	Start int64
}

// Epochs is the leader-epoch file of a replicated log (Kafka's
// leader-epoch checkpoint, RocketMQ's EpochFile): the start offset of every
// leader epoch whose records the log holds. A follower that finds a new
// leader asks it where its own latest epoch ends (EndOffset on the leader)
// and truncates what lies after that: exactly the tail the new leader never
// had. Every change rewrites the file atomically (temporary file, fsync,
// rename, directory fsync), so a crash leaves the old or the new list.
type Epochs struct {
	mu      sync.Mutex
	path    string
	ops     FileOps
	entries []EpochStart
}

// OpenEpochs reads the epoch file in dir, or starts an empty list if there
// is none. A damaged file is an error wrapping ErrCorrupt.
func OpenEpochs(dir string) (*Epochs, error) { return openEpochs(dir, fileops.OS{}) }

func openEpochs(dir string, ops FileOps) (*Epochs, error) {
	e := &Epochs{path: filepath.Join(dir, EpochFileName), ops: ops}
	b, err := os.ReadFile(e.path)
	if errors.Is(err, os.ErrNotExist) {
		return e, nil
	}
	if err != nil {
		return nil, fmt.Errorf("commitlog: open epochs: %w", err)
	}
	if e.entries, err = decodeEpochs(b); err != nil {
		return nil, fmt.Errorf("commitlog: open epochs %s: %w", e.path, err)
	}
	return e, nil
}

func decodeEpochs(b []byte) ([]EpochStart, error) {
	_, p, err := epochFormat.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	r := framed.NewReader(p)
	n := int64(r.U32())
	if r.Err() != nil || int64(r.Len()) != n*epochEntry {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrCorrupt, n, len(b))
	}
	out := make([]EpochStart, n)
	for i := range out {
		out[i] = EpochStart{Epoch: int64(r.U64()), Start: int64(r.U64())}
		if i > 0 && (out[i].Epoch <= out[i-1].Epoch || out[i].Start < out[i-1].Start) {
			return nil, fmt.Errorf("%w: epoch entry %d (%d at %d) does not follow %d at %d", ErrCorrupt, i, out[i].Epoch, out[i].Start, out[i-1].Epoch, out[i-1].Start)
		}
	}
	return out, nil
}

func encodeEpochs(entries []EpochStart) []byte {
	p := make([]byte, 0, 4+len(entries)*epochEntry)
	p = be.AppendUint32(p, uint32(len(entries)))
	for _, x := range entries {
		p = be.AppendUint64(p, uint64(x.Epoch))
		p = be.AppendUint64(p, uint64(x.Start))
	}
	return epochFormat.Append(nil, p)
}

// List returns the entries, oldest first.
func (e *Epochs) List() []EpochStart {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]EpochStart(nil), e.entries...)
}

// Latest returns the newest entry; ok is false for an empty list.
func (e *Epochs) Latest() (last EpochStart, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.entries) == 0 {
		return EpochStart{}, false
	}
	return e.entries[len(e.entries)-1], true
}

// Assign records that epoch starts at start. Assigning the latest epoch
// again is a no-op; an older epoch, or a start before the latest one's,
// is ErrEpoch.
func (e *Epochs) Assign(epoch, start int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := len(e.entries); n > 0 {
		last := e.entries[n-1]
		if epoch == last.Epoch {
			return nil
		}
		if epoch < last.Epoch || start < last.Start {
			return fmt.Errorf("commitlog: assign epoch %d at %d after %d at %d: %w", epoch, start, last.Epoch, last.Start, ErrEpoch)
		}
	}
	return e.store(append(e.entries[:len(e.entries):len(e.entries)], EpochStart{Epoch: epoch, Start: start}))
}

// EndOffset answers a follower whose latest epoch is epoch (Kafka's
// OffsetsForLeaderEpoch): the largest epoch this log knows that is not
// above it, and where that epoch's records end here: the start of the next
// epoch, or logEnd for the latest one. With no such epoch it returns
// (-1, -1): the follower keeps nothing it cannot prove it shares.
func (e *Epochs) EndOffset(epoch, logEnd int64) (known, end int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.entries) - 1; i >= 0; i-- {
		if e.entries[i].Epoch <= epoch {
			if i == len(e.entries)-1 {
				return e.entries[i].Epoch, logEnd
			}
			return e.entries[i].Epoch, e.entries[i+1].Start
		}
	}
	return -1, -1
}

// TruncateFrom drops the epochs that start at or after offset: the log was
// truncated there, so they hold no records any more.
func (e *Epochs) TruncateFrom(offset int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := len(e.entries)
	for n > 0 && e.entries[n-1].Start >= offset {
		n--
	}
	if n == len(e.entries) {
		return nil
	}
	return e.store(e.entries[:n:n])
}

// store writes entries to the file atomically and keeps them. e.mu held.
func (e *Epochs) store(entries []EpochStart) error {
	if err := fileops.ReplaceFile(e.ops, e.path, encodeEpochs(entries), 0o644); err != nil {
		return fmt.Errorf("commitlog: store epochs: %w", err)
	}
	e.entries = entries
	return nil
}
