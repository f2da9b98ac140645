// Package fsutil holds the file-system steps that every store of unilog
// must take the same way, so that each has one implementation and one test:
// making a directory entry durable, replacing a small file atomically, and
// the 20-digit names of files that are named by an offset.
//
// # Durability of names
//
// fsync of a file makes its data durable, not its name: a file created,
// renamed or removed in a directory survives a power failure only once the
// directory itself is fsynced (SyncDir). ReplaceFile therefore writes a
// temporary file beside the target, fsyncs it, renames it over the target
// and fsyncs the directory: a crash at any point leaves either the old or
// the new content under the target name, never a torn file, and the rename
// is on disk when ReplaceFile returns.
//
// # Offset names
//
// Commit-log files and consume-queue files are named by the offset of their
// first byte or slot as exactly 20 decimal digits (00000000001073741824),
// zero-padded so that the lexical order of names is their numeric order and
// every int64 >= 0 fits. ParseOffsetName accepts only that form.
package fsutil
