// Package store owns one unilog data directory, as RocketMQ's
// DefaultMessageStore does: the commit log that every topic/partition
// appends to, the per-partition consume queues built from it, a checkpoint
// and an abort file, and what keeps them consistent (recovery, retention,
// topic incarnations, a replication follower's truncate and restart) or
// reads them offline (inspect, verify, dump).
//
//	<data>/commitlog/      commit-log files (package commitlog)
//	<data>/consumequeue/   <QueueName(topic, id)>/<partition>/ index files and
//	                       @journal/, the shared journal of small queues (package consumequeue)
//	<data>/checkpoint      progress marker, below
//	<data>/abort           lock file; present at open = the last run crashed
//
// # Design
//
// Producers append to the commit log only. One goroutine, the dispatcher
// (package dispatcher, owned and started by the Store), tails the log from
// the last dispatched physical offset and appends every record's entries
// to its consume queue; it is the only writer of the queues, and the Store
// changes them under it only on its goroutine (dispatcher.Dispatcher.Do).
// After each pass the dispatcher publishes the dispatched offset
// (WaitDispatched) and tells the Store which partitions grew, which wakes
// the Waiters registered on them; long-poll fetches sleep on those, one
// channel per fetch, and unregister when they return. Reads go through
// the consume queue of the topic's live incarnation to the record in the
// log; a Partition handle resolves that incarnation and queue once, so a
// fetch pays for the lookup once per partition, not per batch.
//
// The Store is what the rest of unilog sees of a data directory: the
// broker's Storage (package broker owns that interface), the replica
// role's Storage (package ha/replication), and the offline Inspect,
// Verify and Dump of cmd/unilog. Nothing outside reaches the log or the
// queues behind it.
//
// # Checkpoints
//
// Every CheckpointInterval (default 10 s), or as soon as CheckpointBytes
// (default 1 GiB) of log were dispatched since the last one, a goroutine of
// its own (not the dispatcher: the flush takes up to tens of milliseconds
// and produce acks wait on dispatching) takes D = dispatched offset and
// F = the log's flushed offset, makes the consume queues durable while
// dispatching goes on, and writes the checkpoint {CommitLogFlushed: F',
// Dispatched: min(D, F)}, F' being the flushed offset loaded again just
// before the write: every entry for a record before Dispatched is on disk
// (it was written before D was published, so the flush covers it), and so
// is the record, and the log is durable before CommitLogFlushed, recovery's
// flushed mark. The write is skipped when nothing moved. Close stops that
// goroutine and writes the final checkpoint itself.
//
// Why so seldom: writing back a page of a shared mapping write-protects
// it, so after each queue flush the next entry of every queue written
// since maps its tail pages again (ext4's page_mkwrite) in the dispatcher:
// a fault a page at first, now one MADV_POPULATE_WRITE a queue
// (consumequeue's unmapdirty.go), still about 12 µs a queue on the
// machine of docs/BENCHMARKS.md. With a checkpoint a second, 10,000
// partitions cost 10,000 of them a second however few records arrived,
// and the store into the mapping was the broker's largest cost
// (docs/BENCHMARKS.md, "Consume-queue checkpoints at 10,000 partitions").
// What a checkpoint buys is only a shorter replay after a crash
// (recovery re-dispatches the log after it, at the speed of a CRC scan),
// which CheckpointBytes bounds; the commit log's own flushed mark, written
// at every log flush, keeps recovery's damage check as fresh as before.
// Neither setting changes what is durable when: produce acks wait for the
// log, never for a checkpoint.
//
// # Topic incarnations
//
// A topic deleted and created again under the same name is a new
// incarnation with a new commitlog.TopicID, which each of its records
// carries. Options.Live, supplied by the owner of the topic metadata (the
// broker), names the one live TopicID of a topic. Only records whose
// TopicID is the live one of their topic are dispatched, in the tail
// follower, in recovery and in a rebuild alike, so records of a deleted
// incarnation (or of a deleted topic) never reach a queue; they stay in the
// log until retention.
//
// Every incarnation has queues of its own: the consume-queue directory of a
// topic is QueueName(topic, id), the topic name for the zero TopicID
// (version 1 records, written before topic ids, and callers that use none)
// and topic@<32 hex digits of the id> otherwise ('@' is not allowed in a
// Kafka topic name). So a re-created partition counts offsets from 0 in a
// fresh queue beside the commit log's counter of the same (topic, id,
// partition), and nothing the dead incarnation left (queue files, a late
// record, a crash halfway through a delete) can collide with its offsets.
// DeleteTopic removes the queues and counters of the incarnations that are
// no longer live; Open does the same for queue directories of incarnations
// that died while it was not running.
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
// It is a Sealed frame of internal/framed, which checks it (size, magic,
// CRC, then version: a newer version is ErrUnsupportedVersion, anything
// else ErrCorrupt).
//
// A checkpoint that fails any check is not trusted: Open logs it and
// recovers as after a crash from the start of the log, which loses nothing
// because the queues are derived data. The flushed mark recovery holds the
// log to is then the commit log's own (package commitlog, "Flushed mark"),
// and without that too every damage is cut as a torn tail; a damaged
// checkpoint is itself a sign of a bad medium, and `unilog inspect --verify`
// shows where the log ends before a restart.
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
//  0. Queue directories of incarnations that are not live are deleted.
//  1. start = checkpoint.Dispatched clamped to the log's MinOffset, or
//     MinOffset when there is no valid checkpoint. If the log has files but
//     the consume-queue directory holds no queue at all (deleted by an
//     operator), start = MinOffset and the queues are rebuilt; the rebuilt
//     queues hold the same entries (promoted files byte-identical).
//  2. After a crash, every consume queue drops its entries with
//     PhysOffset >= start (consumequeue.Store.TruncateFrom): they may point
//     at records the crash tore, and they are re-derived below.
//  3. commitlog.Log.Recover(start, fn) scans forward, verifies every
//     record's CRC32C and stops at the first torn or corrupt record or zero
//     region. The checkpoint's CommitLogFlushed is passed as
//     commitlog.Options.Flushed; the log holds itself to the larger of it
//     and its own flushed-mark file: an end at or after that is a torn tail,
//     and what follows is zeroed (later files removed) and the write
//     position set there; an end before it is damage to durable records,
//     and Open fails with an error wrapping commitlog.ErrDamaged, naming
//     the file and offset, unless commitlog.Options.RecoverTruncate is set
//     (see "Recovery" in package commitlog for the rule and how fresh the
//     mark is). fn indexes each valid record in the same pass. Indexing
//     is idempotent: offsets a queue already holds are skipped, so a clean
//     start over records appended after the final checkpoint, or a scan from
//     MinOffset over existing queues, does no harm. A record whose first
//     offset is beyond its queue's MaxOffset (a gap: damaged or removed queue
//     files) is logged as an error and not indexed. A refused open leaves the
//     abort file, so the next open recovers again; the queue entries it
//     indexed are derived data and are truncated and re-derived then.
//  4. If the log now ends before checkpoint.Dispatched (only possible with
//     RecoverTruncate), entries past the end are truncated.
//  5. Consume-queue files wholly before the log's MinOffset are deleted
//     (retention may have run after the last pass applied it), and the log
//     is told each queue's MaxOffset (SetQueueOffset), so appends continue
//     at the right logical offsets.
//
// A clean start skips step 2 and scans only what follows the checkpoint,
// normally nothing, so start-up cost is opening the queues. Opening them
// (Prepare: the files, and the journal's replay) needs no Options.Live,
// which only the steps above call (Prepared.Open), so a broker opens its
// queues while the control plane that answers Live starts.
//
// Retention never deletes what is not dispatched: the dispatched offset is
// the commit log's retention floor (commitlog.Log.AddRetentionFloor), so a
// log file is deleted only once every record in it is indexed, and a size
// cap smaller than the dispatch backlog lets the log grow past the cap
// until the dispatcher catches up. The floor is set before recovery starts
// retention, and recovery never leaves the dispatched offset below the
// log's minimum. Options.RetentionFloor, or AddRetentionFloor after Open,
// adds a caller's floor (the broker's group coordinator's, over files
// holding live committed offsets; a replication leader's slowest in-sync
// follower); the lowest wins. Retention's first check comes
// CommitLog.RetentionCheckInterval after Open (a minute by default), so a
// floor added right after Open, as the broker's Start does, covers it.
//
// Limits: a directory whose every record belongs to a dead incarnation has
// no queue, which looks like deleted queues, so each start scans the whole
// log (harmlessly).
//
// # Replicas
//
// A replication follower (package ha/replication) writes its leader's bytes
// into the commit log with AppendRaw and the dispatcher indexes them like
// any append. When the follower must drop a tail its new leader never had,
// Truncate(to) runs on the dispatching goroutine: the consume queues drop
// the entries pointing at or past to, the dispatched offset and the cursor
// go back to to, a checkpoint saying so is written, and only then is the
// log cut (commitlog.Log.Truncate, which also rewinds the partitions'
// offset counters), so a crash at any step recovers to a consistent
// directory. Restart(at, next) does the same for a follower its leader's
// retention left behind: every queue is reset, durably, to its partition's
// next offset at at as the leader sent it (the leader's OffsetsAt; 0 for a
// queue the leader has none of), only then the log restarts empty at at,
// and its counters take the same offsets. A partition none of whose
// records the leader still holds thus keeps its offsets: promoted, the
// follower appends after them and answers ListOffsets as the leader did.
//
// # Inspection
//
// Inspect, Verify and Dump read a data directory without opening it: the
// commit-log files are read through commitlog.OpenReader (mapped read-only,
// scanned with the same code as recovery), the consume-queue files with
// consumequeue.DecodeFile and the small queues with consumequeue.ReadJournal
// (consumequeue.Open repairs what it finds, and
// inspection must change nothing). Verify checks every record's CRC, that
// the log is one chain without holes, that it does not end before the
// flushed mark (the larger of the checkpoint's and the log's own; the damage
// that makes Open refuse; the problem
// names the file, the position in it and what is wrong), and that every
// consume-queue entry points at a record of its own topic incarnation and
// partition whose offsets cover the entry's offset, with the same size and
// a timestamp that follows the record's (verifyQueue). Reports name a partition by its queue directory
// (QueueName).
package store
