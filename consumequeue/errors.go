package consumequeue

import "errors"

var (
	// ErrCorrupt reports a header or entry that fails its checks (magic,
	// version, sizes, offsets or CRC32C), or a queue directory whose files do
	// not form a contiguous chain.
	ErrCorrupt = errors.New("consumequeue: corrupt")
	// ErrOutOfRange reports an offset below MinOffset or at or above MaxOffset.
	ErrOutOfRange = errors.New("consumequeue: offset out of range")
	// ErrOffsetGap reports an Append whose offset is not the queue's MaxOffset.
	ErrOffsetGap = errors.New("consumequeue: offset gap")
	// ErrClosed reports use of a closed Store or of a Queue whose topic was deleted.
	ErrClosed = errors.New("consumequeue: closed")
	// ErrFlushFailed is returned by every Flush after one failed: the
	// entries it was writing may be lost, so nothing more is made durable
	// (or checkpointed) until a restart rebuilds them from the commit log.
	ErrFlushFailed = errors.New("consumequeue: flush failed, nothing more is made durable until restart")
	// ErrIO reports a fault while accessing a mapped file (a media error, or
	// the file was truncated under the store): that call fails, the process
	// survives.
	ErrIO = errors.New("consumequeue: I/O error on a mapped file")
	// ErrDiskFull reports that the file system had no space to grow a file.
	ErrDiskFull = errors.New("consumequeue: disk full")
	// ErrInvalidName reports a topic name that cannot be a directory name,
	// or a negative partition.
	ErrInvalidName = errors.New("consumequeue: invalid topic or partition")
	// ErrInvalidEntry reports an Append of an entry with a negative physical
	// offset or a size that is not positive.
	ErrInvalidEntry = errors.New("consumequeue: invalid entry")
)
