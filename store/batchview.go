package store

import (
	"os"

	"github.com/unilog/unilog/commitlog"
)

// BatchView is a stored batch read in place: Bytes alias the commit log's
// read-only mapping, so a fetch can hand them to the socket without
// copying them. The view holds a reference on the log file, which keeps
// the mapping (and so Bytes) valid until Release even if retention deletes
// the file meanwhile. Bytes are what the log stored, base offset stamped
// (commitlog.FlagStampOffset); they never change while held, since the
// log only rewrites bytes above the high watermark (Truncate), which a
// fetch never reads.
//
// Loads from Bytes are not guarded against a fault (commitlog.View): a
// reader that copies them runs the copy under fileops.Guard, and a
// vectored socket write gets EFAULT from the kernel instead.
type BatchView struct {
	Bytes      []byte
	Base, Next int64 // the batch's first offset and the offset after it
	pin        commitlog.Pin
}

// Release drops the view's reference on the log file; Bytes are invalid
// after it. Calling it again, or on a view that holds no file (another
// storage's copy), is a no-op.
func (b *BatchView) Release() {
	b.pin.Release()
	b.Bytes = nil
}

// File returns the log file holding Bytes and their offset in it, for
// sendfile(2); ok is false for a view that holds no file. The file is open
// until Release.
func (b *BatchView) File() (f *os.File, off int64, ok bool) { return b.pin.FileRange(b.Bytes) }
