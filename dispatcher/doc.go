// Package dispatcher composes one unilog data directory: the commit log that
// every topic/partition appends to, the per-partition consume queues built
// from it, a checkpoint and an abort file.
//
//	<data>/commitlog/      commit-log files (package commitlog)
//	<data>/consumequeue/   <topic>/<partition>/ index files (package consumequeue)
//	<data>/checkpoint      progress marker, below
//	<data>/abort           lock file; present at open = the last run crashed
//
// # Design
//
// Producers append to the commit log only. One goroutine, the dispatcher,
// tails the log from the last dispatched physical offset: it waits on
// commitlog.Log.Appended, reads every record up to the write offset with
// one commitlog.Cursor (no allocation or CRC per record: the records it
// tails were verified by recovery or written by this process) and
// appends Count consume-queue entries for it (all pointing at the same
// record: physical offset, size, store timestamp). It is the only writer of
// the consume queues, so they need no writer lock of their own; retention
// of log files is handed to it as well, and it deletes the consume-queue
// files that index only deleted log files. After each pass it publishes the
// dispatched offset (WaitDispatched) and signals the Waiters registered on
// the partitions that grew; long-poll fetches sleep on those, one channel per
// fetch, and unregister when they return.
//
// Records of topics for which Options.Keep returns false are not dispatched
// (deleted topics whose records still sit in the log).
//
// Every CheckpointInterval the dispatcher takes D = dispatched offset and
// F = the log's flushed offset, msyncs the consume queues and writes the
// checkpoint {CommitLogFlushed: F, Dispatched: min(D, F)}: every entry for a
// record before Dispatched is on disk, and so is the record. The write is
// skipped when nothing moved.
//
// # Checkpoint file, version 1
//
// 36 bytes, big-endian, replaced atomically (written to checkpoint.tmp,
// fsync, rename, fsync of the directory):
//
//	0  uint32 Magic            0x55434B50 ("UCKP")
//	4  uint16 Version          1
//	6  uint16 Reserved         0
//	8  int64  CommitLogFlushed physical offset durable in the log
//	16 int64  Dispatched       consume queues complete and flushed below it; <= CommitLogFlushed
//	24 int64  Time             unix nanoseconds when it was taken
//	32 uint32 CRC32C           Castagnoli, over bytes 0..31
//
// A checkpoint that fails any check is not trusted: Open logs it and
// recovers as after a crash from the start of the log, which loses nothing
// because the queues are derived data.
//
// # Abort file
//
// Open creates <data>/abort if needed, takes an exclusive, non-blocking
// flock on it (a second process gets ErrLocked) and writes its pid into it
// for humans. A new file is fsynced with its directory so that even a power
// failure cannot make the next start look clean. Close removes the file
// (still under the lock) only after the final checkpoint is on disk, so its
// presence at open means the previous run did not stop cleanly. A failed
// Close leaves it in place.
//
// # Recovery
//
// Open runs this before dispatching starts:
//
//  1. start = checkpoint.Dispatched clamped to the log's MinOffset, or
//     MinOffset when there is no valid checkpoint. If the log has files but
//     the consume-queue directory holds no queue at all (deleted by an
//     operator), start = MinOffset and the queues are rebuilt; the rebuilt
//     files are byte-identical to the lost ones.
//  2. After a crash, every consume queue drops its entries with
//     PhysOffset >= start (consumequeue.Store.TruncateFrom): they may point
//     at records the crash tore, and they are re-derived below.
//  3. commitlog.Log.Recover(start, fn) scans forward, verifies every
//     record's CRC32C, stops at the first torn or corrupt record or zero
//     region, zeroes what follows (removing later files), and sets the write
//     position there. fn indexes each valid record in the same pass. Indexing
//     is idempotent: offsets a queue already holds are skipped, so a clean
//     start over records appended after the final checkpoint, or a scan from
//     MinOffset over existing queues, does no harm. A record whose first
//     offset is beyond its queue's MaxOffset (a gap: damaged or removed queue
//     files) is logged as an error and not indexed.
//  4. If the log now ends before checkpoint.Dispatched (durable records were
//     damaged), that is logged as an error and entries past the end are
//     truncated.
//  5. Consume-queue files wholly before the log's MinOffset are deleted
//     (retention may have run after the last pass applied it), and the log
//     is told each queue's MaxOffset (SetQueueOffset), so appends continue
//     at the right logical offsets.
//
// A clean start skips step 2 and scans only what follows the checkpoint,
// normally nothing, so start-up cost is opening the queues.
//
// Retention never deletes what is not dispatched: the dispatched offset is
// the commit log's retention floor (commitlog.Log.SetRetentionFloor), so a
// log file is deleted only once every record in it is indexed, and a size
// cap smaller than the dispatch backlog lets the log grow past the cap
// until the dispatcher catches up. The floor is set before recovery starts
// retention, and recovery never leaves the dispatched offset below the
// log's minimum.
//
// Limits: a directory whose every record is filtered by Keep has no queue,
// which looks like deleted queues, so each start scans the whole log
// (harmlessly). DeleteTopic expects the topic to get no appends while it
// runs; a record of the old topic that lands after it would open the new
// topic's queue at its old offset.
//
// # Inspection
//
// Inspect, Verify and Dump read a data directory without opening it: the
// commit-log files are mapped read-only and walked record by record, the
// consume-queue files are read with this package's own decoder of their
// documented layout (consumequeue.Open repairs what it finds, and inspection
// must change nothing). Verify checks every record's CRC, that the log is
// one chain without holes, and that every consume-queue entry points at a
// record of its own topic/partition whose offsets cover the entry's offset,
// with the same size and store timestamp.
package dispatcher
