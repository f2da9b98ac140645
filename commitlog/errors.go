package commitlog

import "errors"

// Sentinel errors. Every error returned by this package wraps one of these
// (or an os/syscall error) with context, so callers test with errors.Is.
var (
	// ErrCorrupt marks bytes that are not a valid record: bad size, magic,
	// version, field lengths or CRC.
	ErrCorrupt = errors.New("commitlog: corrupt record")
	// ErrOutOfRange is returned for a physical offset below MinOffset or at
	// or beyond WriteOffset.
	ErrOutOfRange = errors.New("commitlog: offset out of range")
	// ErrClosed is returned by every operation on a closed Log.
	ErrClosed = errors.New("commitlog: log closed")
	// ErrDiskFull is returned when space for the next file cannot be
	// allocated (ENOSPC, EDQUOT, EFBIG). Nothing stored before is affected
	// and the failed append wrote nothing.
	ErrDiskFull = errors.New("commitlog: disk full")
	// ErrTooLarge is returned for a message whose encoded record would be
	// larger than Options.MaxRecordSize.
	ErrTooLarge = errors.New("commitlog: record too large")
	// ErrInvalid is returned for a message that cannot be encoded: a field
	// longer than its length prefix allows, a negative Count or Partition,
	// or FlagStampOffset with a body shorter than 8 bytes.
	ErrInvalid = errors.New("commitlog: invalid message")
	// ErrFlushFailed is returned by every append, flush and WaitDurable
	// after an fdatasync or fsync of the log failed (or a write to one of
	// its files failed, with ErrIO): what the failed call was writing may be lost,
	// so nothing more is acknowledged until a restart recovers the log
	// from what the disk holds. Stats.FlushFailed says so.
	ErrFlushFailed = errors.New("commitlog: flush failed, log is read-only until restart")
	// ErrIO is returned when an access to a mapped file faults (a media
	// error, or the file was truncated under the log) or a write to a file
	// of the log fails: the read or append fails, the process survives.
	ErrIO = errors.New("commitlog: I/O error on a mapped file")
	// ErrDamaged is returned by Recover when the log ends (a torn, corrupt
	// or zero record, or a missing file) before Options.Flushed: records
	// that had been made durable, and so may have been acknowledged, are
	// damaged. Nothing is changed; Options.RecoverTruncate cuts there
	// instead.
	ErrDamaged = errors.New("commitlog: damage before the flushed mark")
	// ErrNotRecovered is returned by Append and AppendBatch before Recover
	// has set the write position.
	ErrNotRecovered = errors.New("commitlog: Recover has not run")
)
