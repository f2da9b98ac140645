// Package commitlog is unilog's commit log: one logical, append-only log
// that every topic and partition writes into, RocketMQ style.
//
// # Files
//
// The log is a chain of fixed-size files in one directory (Options.Dir).
// A file is named by the physical offset of its first byte as 20 decimal
// digits (00000000001073741824 is the second file of a log of 1 GiB files),
// so a physical offset names a file and a position in it. The writer
// writes a file with pwrite(2); every file is also mapped once with mmap,
// read-only (PROT_READ, MAP_SHARED: the page cache the pwrites fill), for
// readers, which decode from it and get slices of it, so a stray store
// through a reader's slice faults instead of corrupting a stored record.
//
// The writer does not store through a mapping because of what that costs
// the kernel on a fallocated file: the first store into each 4 KiB page
// is a fault that zeroes the page and then a page_mkwrite with a journal
// handle on ext4. Pre-faulting ahead of the writer (MADV_POPULATE_WRITE)
// only moved that work to another goroutine; profiled at 1 KiB records it
// was more than half the log's CPU time, __pi_memset alone 56%. A pwrite
// that covers a page whole copies into it without zeroing it first, so a
// batch of records costs one system call and one copy from the writer's
// buffer; AppendBatch encodes a batch into that buffer and writes it with
// one pwrite per file it enters (a pwritev when bodies of 4 KiB or more
// are written from the caller's memory instead of being copied into the
// buffer first, writev.go). With FlushAsync the writer first writes zeros
// over each aligned 256 KiB chunk its next batch enters, so the page cache
// makes that chunk of a few large folios rather than one per page
// (zeroahead.go). The price is the system call: appends of
// one small record each cost more CPU than stores into a pre-faulted
// mapping did (docs/BENCHMARKS.md, "The commit log's write path").
//
// A file's space is allocated with fallocate(2), never by a sparse
// ftruncate, so a full disk is an error (ErrDiskFull) returned to the
// appender by the allocation, before anything is written. A write that
// still finds the disk full (a file system that needs space to write into
// allocated blocks, or EFBIG from RLIMIT_FSIZE) fails its batch alone in
// the same way: the batch's queue offsets are given back and the bytes it
// wrote are cleared, so no record of it turns up behind a later, shorter
// append after a crash.
//
// The next file is created under a temporary name (*.tmp), allocated,
// mapped and renamed by a background goroutine while the writer fills the
// current one, so a roll only swaps a pointer. If the next file is not ready the writer waits for
// the one being made, or allocates it itself if that failed. The new
// file's allocation and name are made durable (fdatasync + directory
// fsync) by the first flush that covers it, not on the preallocation
// path, because on a busy ext4 an fsync waits for a journal commit behind
// other dirty data. Open removes *.tmp leftovers.
//
// # Record layout, version 2
//
// All integers are big-endian. Offsets are from the start of the record.
//
//	off  size  field
//	0    4     TotalSize          uint32, the whole record including this field
//	4    1     Magic              0xC1 (RecordMagic)
//	5    1     Version            2
//	6    2     Flags              uint16; bit 0 = FlagStampOffset, others are the caller's
//	8    4     CRC                CRC32C (Castagnoli) of bytes [0,8) and [12,TotalSize)
//	12   8     PhysOffset         int64, where the record is in the log
//	20   8     QueueOffset        int64, first logical offset in its partition
//	28   4     Count              int32 >= 1, logical offsets the record spans
//	32   4     Partition          int32 >= 0
//	36   8     StoreTimestamp     int64, unix ms, set by the log (one per batch)
//	44   8     ProducerTimestamp  int64, unix ms, given by the caller
//	52   16    TopicID            the topic's incarnation (TopicID); zero = none given
//	68   2     TopicLen           uint16, then TopicLen bytes of topic
//	     4     KeyLen             int32, -1 = nil key, then KeyLen bytes
//	     2     HeaderCount        uint16, then per header:
//	              2 KeyLen uint16, key bytes, 4 ValueLen int32 (-1 = nil), value bytes
//	     4     BodyLen            int32, then BodyLen bytes; the record ends with the body
//
// The smallest version 2 record (empty topic, nil key, no headers, empty
// body) is 80 bytes. The CRC covers every byte but its own, so a
// flipped size, flag or length is detected as surely as a flipped body
// byte. Decode checks, in order: TotalSize within [MinRecordSize, bytes
// available], magic, version (1 or 2) and the version's minimum size, CRC,
// field ranges (Count >= 1, offsets and partition >= 0), that the
// length-prefixed fields end exactly at TotalSize, and that Count is at
// most MaxCountPerByte per byte of body. It returns an error
// wrapping ErrCorrupt for anything else and never panics.
//
// Version 1, written by builds before topic ids, is version 2 without the
// TopicID field: TopicLen is at 52 and the smallest record is MinRecordSize
// = 64 bytes. It is still read (its TopicID decodes as zero) and never
// written; a log may hold version 1 records followed by version 2 ones.
// testdata/v1 holds a log written by the last version 1 build.
//
// With FlagStampOffset the log writes the assigned QueueOffset into
// Body[0:8] of the stored copy before computing the CRC: a Kafka record
// batch carries its base offset there and only the log knows it.
//
// A caller that has checked the CRC32C of a suffix of the body (a Kafka
// batch's own CRC covers it from byte 21 on) may hand it over
// (Message.BodyCRCFrom, BodyCRC): the record's CRC is then derived from it
// by CRC combination (framed.Combine) when the suffix is long enough to
// make that cheaper, so the log does not read those bytes again. The
// stored CRC is the same either way.
//
// # Topic incarnations
//
// A topic deleted and created again under the same name is a new
// incarnation with a new TopicID (the broker assigns a random 16-byte id,
// as Kafka's topic ids). The log keeps a per-partition offset counter for
// each (topic, TopicID, partition), so a re-created partition counts from
// 0 beside the dead incarnation's records, which stay in the log until
// retention; which incarnation is live is the caller's knowledge (the
// dispatcher asks its owner), never the log's.
//
// # End of file
//
// A record never spans files. When the next record does not fit in the
// rest of the current file, the rest is marked with an end-of-file marker
//
//	0  4  TotalSize = number of bytes left in the file
//	4  1  Magic     = 0xB1 (BlankMagic)
//	5  1  Version   = 1
//	6  2  Flags     = 0
//
// and the record goes to the start of the next file. The bytes after the
// marker stay zero. If fewer than 8 (BlankSize) bytes are left, no marker
// is written and readers roll by position alone. Read at a marker (or in
// such a tail) returns the first record of the next file.
//
// # Writing
//
// One writer lock serializes appends. AppendBatch validates every message
// first (ErrInvalid, ErrTooLarge), allocates every file the batch will
// enter, then, under a single lock acquisition, assigns each record its
// PhysOffset and its QueueOffset (a per topic/TopicID/partition counter
// advanced by Count), encodes it into the writer's buffer and writes the
// buffer to the file. So a batch is all or nothing.
// Calls that arrive while another writes are queued and written together by
// the next writer, in arrival order, each still all or nothing (group
// commit, group.go); if such a group fails, its batches are written one by
// one so that a batch fails alone.
// WriteOffset is published once per write with an atomic store; readers
// never look past it, so they need no lock and never block the writer.
// Appended returns a channel closed when WriteOffset next grows; the writer
// pays one atomic load per batch when nobody is waiting.
//
// # Durability
//
// FlushedOffset is the offset before which everything is on disk. A flush
// fdatasyncs each file [FlushedOffset, WriteOffset) spans (only the pages
// written since the last flush are dirty). FlushAsync flushes every
// FlushInterval and on Close. FlushSync starts a flush as soon as records
// are appended (or, between HoldFlushes and ReleaseFlushes, when the
// appender's last append is done); appends made while one flush runs are
// covered by the next, so WaitDurable callers share one fdatasync (group
// commit). A file found
// shorter than the log made it was cut under the log: the flush fails
// (ErrIO) rather than call the hole where its records were durable. In both modes WaitDurable(ctx, end)
// returns once FlushedOffset >= end, asking for a flush if needed.
//
// After each flush the pages more than Options.CacheWindow (256 MiB) before
// FlushedOffset are dropped from the page cache, so that a log written at
// disk speed recycles pages rather than growing the cache until the
// kernel must find every new page by reclaim (cache.go). They are clean,
// so this changes what is cached, never what is durable.
//
// A failed fdatasync, directory fsync or write is sticky (nats-server's setWriteErr):
// Linux may drop the dirty pages of a failed writeback and let a retry
// succeed ("fsyncgate"), so the log never retries. FlushedOffset stays,
// the waiters of the failed flush and every later append, Flush and
// WaitDurable get ErrFlushFailed, one error line is logged and
// Stats.FlushFailed is set; reads go on. Only a restart makes the log
// writable again, its recovery scan reading back what the disk holds.
// Allocation failures and full-disk write failures are not sticky:
// nothing of the batch stays, and appends resume once there is space.
//
// The calls that decide durability (fallocate, fdatasync,
// directory fsync, rename) go through a small seam (Options.FS) that tests
// replace, here or through store.Options.FS, to inject failures or to record what each call made
// durable and rebuild the directory as a power cut would leave it: all of
// them, including the flushed mark, the leader-epoch file, recovery's cut
// and retention's deletes (TestPowerCutSteps fails when one is skipped).
//
// # Readers and retention
//
// Read(phys) decodes the record at phys and returns a View
// holding a reference on the file. Each mapped file is reference counted:
// the log holds one reference, every View one more. Retention deletes whole
// oldest files, by age (newest record older than RetentionAge; the file's
// mtime is set to its last append when the writer leaves it), by total
// size (RetentionBytes) and, young or not, when they end at or before the
// oldest live record the owner names (SetLiveStart: the broker's
// partitions each serve from a log start of their own), never the file
// being written, and never a file
// that ends after the retention floor (AddRetentionFloor; the dispatcher
// registers its dispatched offset, so the log outgrows RetentionBytes
// rather than lose records not yet indexed). A deleted file is
// unlinked and leaves the chain at once, but stays mapped until the last
// View on it is released. OnRetention callbacks get the new MinOffset.
//
// A load from a mapping faults (SIGBUS) when the disk cannot return the
// page or the file was truncated under the log. Read, Cursor.Next and
// View.AppendBody run their loads with debug.SetPanicOnFault and turn such
// a fault into ErrIO, so one request fails and the process lives; slices
// handed out (View.Bytes, Record fields) are unguarded. A failed write
// of the writer publishes nothing of the batch and stops the log as a
// failed flush does.
//
// A Cursor is the sequential reader for a tail follower (the dispatcher):
// it holds one file reference across the records of a file, steps from
// record to record by size and decodes into one reused Record, so a record
// costs no allocation, no chain search and no reference count. It skips the
// CRC check for records at or after the offset Recover started from (those
// were verified by Recover or encoded by this process); before it, it
// checks CRCs as Read does. The log's one HeaderCursor (the dispatcher's)
// takes the records this process appends from a hand-off the writer
// fills with each record's header as it encodes it, so that the reader of
// every header right behind the writer does not fault the mapping in page
// by page; it reads the mapping for anything else (handoff.go). The
// hand-off is memory only: nothing of it is on disk.
//
// Read checks a record's CRC only before where Recover started, as Cursor
// does: a record from there on was CRC-checked by Recover or encoded by this
// process, and a torn tail, the damage a crash leaves, is cut by Recover
// before anything reads it. What Read no longer catches there is a page
// that the disk returns changed after the page cache dropped it; Kafka's
// broker does not check on fetch either, the clients that check batch CRCs
// (the Java client and franz-go by default) and unilog inspect --verify
// do. Checking was a third of the broker's CPU reading back 1,000
// partitions (docs/BENCHMARKS.md).
//
// # Recovery
//
// Open maps the files and checks that they form one contiguous chain (a
// last file cut to a size that is not a whole number of pages is extended
// with zeros to the next page; that adds nothing and loses nothing).
// Recover(from, fn) then scans forward from from (the dispatcher's
// checkpoint), decoding each record in place and checking its CRC and its
// PhysOffset, with no allocation per record. The first zero size, torn or
// corrupt record, or the end of the files, ends the scan. What happens there
// depends on the flushed mark: the offset before which the previous run had
// made the log durable, the larger of the log's own mark file (below) and
// Options.Flushed (the caller's record of it: the dispatcher's checkpoint).
//
//   - At or after the mark the end is a torn tail, normal after a crash
//     (writes after the last flush may have reached the disk in part, in
//     any order of pages): the rest of that file is made zero, later files
//     are deleted, the scanned files are fdatasynced, and the writer
//     continues right there. Zeroing matters: a record that was complete
//     behind a torn one must never reappear after later appends. The rest
//     of the file is read through the mapping and only its non-zero pages
//     are overwritten, so the usual already-zero tail costs a scan of
//     the pages recovery just populated, not a write of the whole tail;
//     blocks stay allocated either way.
//   - Before the mark the end is damage to records that were durable, and
//     that may have been acknowledged (etcd's WAL likewise repairs only a
//     torn last entry). Recover changes nothing and returns an error
//     wrapping ErrDamaged that names the file, the position in it, the
//     physical offset and what is wrong. Only with Options.RecoverTruncate
//     (the operator's explicit choice, unilog broker --recover-truncate)
//     does it cut there as above, logging the bytes lost. Before deciding,
//     the file holding the end is scanned again from its start (and so is
//     a last file shorter than FileSize, which means it was cut: a refused
//     Open has already extended it to a whole page), so the end is the
//     first damage in that file even when it lies before from: a cut left
//     behind the new end would stop a later recovery from an earlier
//     offset.
//
// Records in earlier files are not scanned at start: Read checks their CRC
// when they are read, and unilog inspect --verify checks every one.
//
// # Flushed mark
//
// After every flush that advanced FlushedOffset the log writes it into the
// file "flushed" (FlushedMarkName) in its directory, with one pwrite and no
// fsync, so a group commit costs one extra syscall and no disk flush. 20
// bytes, big-endian, version 1:
//
//	0   4  Magic    0x55464C4D ("UFLM")
//	4   2  Version  1
//	6   2  Reserved 0
//	8   8  Flushed  int64, physical offset durable when this was written
//	16  4  CRC32C   Castagnoli, over bytes 0..15
//
// The mark and the leader-epoch file below are Sealed frames of
// internal/framed, checked in its one order (magic, CRC, then version);
// every failure wraps ErrCorrupt and the framed sentinel.
//
// Whenever the write reaches the disk its value is true, because the
// records before it were on disk before it was issued; a write that did not
// reach it leaves an older, still true value. So after a process crash
// (the page cache survives) the mark is exact, and after a power failure
// it is at least as fresh as the kernel's writeback of that page, while the
// dispatcher's checkpoint bounds it to one checkpoint interval (1 s; it reads
// FlushedOffset just before writing the checkpoint). Damage to records
// flushed after the newest mark that reached the disk is indistinguishable
// from a torn tail and is cut; a write that reached the disk whole is only
// damaged by the medium. Recover writes the end it settled on into the file
// with an fsync before appending resumes, so a cut made with
// RecoverTruncate does not refuse the next start. A mark file that fails
// any check is ignored (logged) in favour of Options.Flushed.
//
// # Reading a directory without opening it
//
// OpenReader maps the files of a log directory read-only for tools (unilog
// inspect): it takes no lock, runs no recovery, removes and repairs nothing
// and writes nothing, so it is safe on a crashed directory and beside a
// running broker (whose newest record may then look torn). Its ScanFile
// walks one file with the same code as Recover and reports where and why it
// stopped.
//
// # Replication
//
// A replica of the log is byte-identical to its leader's: the same records
// at the same physical offsets in files of the same size. ReadRaw hands a
// leader the stored bytes from a follower's end on (whole records, the
// end-of-file marker included where a file ends) and AppendRaw writes them
// on the follower at its WriteOffset after checking every record's CRC,
// PhysOffset and placement, taking queue offsets from the records. A
// follower's own dispatcher then indexes them as on the leader.
//
// Truncate cuts the log back at run time to a record boundary: a follower
// of a new leader drops the tail the new leader never had, found through
// the leader-epoch file. The cut is made as recovery makes one (the rest of
// the file zeroed, later files deleted, both made durable) and the queue
// counters of the partitions that lose records go back.
//
// The leader-epoch file (EpochFileName in the log directory, Epochs) lists
// the physical offset at which each leader epoch's records start. Layout,
// version 1, big-endian:
//
//	off  size  field
//	0    4     Magic    "ULEP"
//	4    2     Version  1
//	6    4     Count    uint32, the entries that follow
//	10   16*N  Entries  Epoch int64, StartOffset int64; epochs strictly
//	                    increasing, start offsets non-decreasing
//	     4     CRC      CRC32C (Castagnoli) of every byte before it
//
// It is replaced whole (temporary file, fsync, rename, directory fsync) on
// every change, so a crash leaves the old list or the new one.
//
// Retention keeps every file that ends after the lowest registered floor
// (AddRetentionFloor): the dispatcher's dispatched offset and, on a
// leader, the end of its slowest in-sync follower.
package commitlog
