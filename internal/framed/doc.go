// Package framed is the one codec of unilog's small files (the checkpoint,
// the flushed mark, the leader epochs, the metadata file, the group and
// producer snapshots) and of the headers of its bigger ones (consume-queue
// files and journal): a magic, a version, a CRC32C, and one order of
// checks, so that every file reports damage and newer versions alike.
//
// # Frames
//
// Every frame starts with a 4-byte magic naming its kind and a big-endian
// uint16 version. Two shapes exist, fixed by the files older builds wrote:
//
//	Sealed:   magic | version | payload | CRC32C of everything before (uint32)
//	Prefixed: magic | version | payload length (uint32) | CRC32C of the payload (uint32) | payload
//
// Sealed closes fixed-size records and headers (the checkpoint, the mark,
// a consume-queue file's first 32 bytes) and lists (leader epochs, the
// producer snapshot); Prefixed carries a variable body read whole (the
// metadata file's JSON, the group snapshot). All integers are big-endian.
//
// # Checks
//
// Decode checks, in this order: that the bytes can hold a frame, the magic,
// (Prefixed) that the length field matches the bytes, the CRC, and last the
// version. The CRC comes before the version so that a torn or bit-flipped
// file is ErrDamaged, never taken for the work of a newer build; a version
// above the Format's is ErrNewerVersion (the file is whole: run the newer
// build, do not repair it); a version below Oldest is ErrDamaged. The
// owner of a format wraps these errors in its own sentinel (commitlog's
// ErrCorrupt, ...), so callers keep testing the sentinels they know and
// may also test these two.
//
// Reader decodes a payload's fields with bounds checks: a short payload
// reads as zeros and Err reports it, so decoders check once at the end
// instead of after every field.
package framed
