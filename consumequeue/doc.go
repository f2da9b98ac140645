// Package consumequeue keeps, for every topic/partition, a dense index from
// logical offset to the record's place in the commit log: the RocketMQ
// consume queue. The dispatcher is its only writer; brokers read it to
// serve fetches and offset lookups.
//
// # Layout
//
// A queue starts small: its entries live in memory and in one journal
// shared by every queue of the store (see "Small queues"), so creating a
// partition costs no file at all. Once it holds Options.SmallEntriesMax
// entries (default 4,096), or Options.SmallEntries (default 64) while the
// small queues together hold more than Options.SmallBudget, it is
// promoted to files of its own:
//
// One directory per queue, <Dir>/<topic>/<partition>/, holding files of
// fixed-size entry slots. A file is named by the logical offset of its slot
// 0 as 20 zero-padded digits, and that offset is always a multiple of
// EntriesPerFile, so an offset's file and slot are arithmetic (O(1) Get)
// and the same entries always land at the same bytes: deleting every queue
// directory and re-dispatching the same log rebuilds identical files, up to
// the zeros past their last entry (but see "Timestamps" for a log whose
// head retention removed).
//
// A file starts at 4 KiB and doubles as entries arrive, up to its full size
// header+EntriesPerFile*32 (9.6 MB at the default 300,000 entries). Its size
// is what its highest slot written needs or, with the room made ahead of
// the dispatcher (room.go: the growth and the next pages made on a
// goroutine of the store's own once the entries pass three quarters of
// what is made), one doubling more; the bytes past the last entry are zero
// either way. Growth is fallocate (so a
// full disk is ErrDiskFull, not a SIGBUS on a write into a hole), and, for
// a file grown past its mapping, mremap: a file is mapped at its length or
// 64 KiB, whichever is longer, and mremap carries the pages already mapped
// along, so growing never faults on them again. (Mapped at their full
// size, every mapped file had a page table of its own: 4 KiB of kernel
// memory a file, 40 MB of VmPTE at 10,000 promoted partitions, and a new
// file's first store made that table too.) Where the file system has no fallocate the new bytes are
// written as zeros, never left as a sparse hole, and a failed write cuts
// the file back to its old size. A new file gets its header right after creation; a crash
// in between leaves an all-zero last file, which opening the queue removes. Ahead
// of the entries the pages are made, 256 KiB at a time, so that the kernel
// makes them in one call rather than one fault per page of the stores
// (zeroahead.go); the room maker does it, or the dispatcher where it gets
// there first. A cold queue, one appended to only after thousands of
// appends to others, keeps its newest entries in a tail in memory instead
// and writes them with one pwrite a page at a time, and before any flush
// syncs the file (tail.go).
// Before a flush that syncs file by file writes back a file that took many
// entries since the last, its mapping's page-table entries are dropped in
// one call, so that the write-back does not write-protect and TLB-flush
// each page (unmapdirty.go).
//
// # Small queues
//
// Creating a queue's directory and first file (mkdir, open, fallocate,
// header, mmap) costs 85-330 µs, so a producer's first pass over 50,000
// partitions spent 4-16 s creating files. RocketMQ met the same wall with
// many small consume-queue files (RIP-66 moved them into one shared store);
// here a new queue keeps its entries in a slice in memory (24 bytes an
// entry) and appends a
// record per change to <Dir>/@journal/<20-digit sequence>, one append-only
// file for the whole store written with write(2) (page cache, no mapping,
// no file per queue). Records are built in a buffer under the journal's
// lock, written when it reaches 1 MiB or by Flush, and made durable by
// Flush's fdatasync, after which Flush rewrites the synced mark in the
// header (one pwrite, no fsync, like the commit log's flushed mark).
//
// Get, OffsetForTime, Min/MaxOffset, TruncateFrom, DeleteBefore, DeleteTopic
// and Queues treat small queues like any other; readers copy an entry out
// under a per-queue lock that the writer holds only for a slice
// access. A small queue maps no file, so MaxMapped counts promoted queues
// only.
//
// A queue is promoted past SmallEntriesMax entries, or past SmallEntries
// while the small queues' records (what a compaction would write, 41
// bytes an entry) take more than SmallBudget (default 32 MiB, about
// 800,000 entries). The budget bounds their memory (100,000 queues short
// of 64 entries hold at most 154 MB, and entries past that are promoted
// while the budget is spent), what a compaction copies under the
// journal's lock and what a restart replays; within it, a queue pays for
// its files only once it has taken thousands of entries. The files of a
// queue, a directory and a file, are two inodes, and on the machine of
// docs/BENCHMARKS.md (ext4) they cost 150-500 µs of CPU: with queues promoted at
// 32-64 entries, producing 300 records to each of 1,000 partitions cost
// the broker 1.7-2.4 times the CPU it does with them kept in the journal
// (issue 19). Each point is lowered by a share fixed by a hash of the
// queue's ID (SmallEntries by up to PromoteSpread, default 32 to 64;
// SmallEntriesMax by as large a share of it, 2,048 to 4,096), so a
// producer writing round robin over a new topic, which fills every queue
// at the same pace, does not ask for them all in the same pass of the
// dispatcher. Where a queue is promoted changes nothing on disk but when
// its files appear.
//
// Promotion runs on a goroutine of the store's own (the promoter), never
// on the appender's: the append that reaches the promotion point only
// queues the request, and the queue stays in the journal, taking appends
// as before, until its files exist. (Made inline, 10,000 promotions held
// the dispatcher, and every produce waiting on it, for 1.8-2.5 s,
// BenchmarkPromoteBurst; at 1,000 partitions under --flush sync they were
// 22% of the broker's CPU on the dispatching goroutine.) The promoter
// creates the directory and files and writes a snapshot of the entries
// into them without the queue's lock, through the writes a file queue
// makes, so the files are byte-identical to those of a queue that always
// had them; then, under the lock, it adds the entries appended since and
// switches readers to the files. A truncation or retention cut of the
// queue in between (a count of them tells) discards the files, and the
// queue asks again at its next append. Topic deletion and Reset wait for
// the promotion under way; Close drops those not started (their queues
// are whole in the journal).
//
// The promoted record, which tells replay that the directory is the
// queue now, is written only by a Flush that has made those files durable
// first. A crash before it, at any step of the promoter's, leaves the
// queue in the journal and a directory whose files may be torn: Open
// removes that directory (the unconfirmed promotion), and the dispatcher
// re-dispatches the entries after its checkpoint, which never covers an
// unconfirmed promotion's entries because it is written after that Flush
// (TestPromotionCrash).
//
// Compaction: when a Flush finds the journal larger than 8 MiB and four
// times the live small queues' records (promoted, removed and truncated
// queues are dead), it writes the live queues (a declare and their entries
// each) to <seq+1>.tmp, fdatasyncs it, renames it to <seq+1>, fsyncs the
// directory and removes <seq>. A crash at any point leaves one complete
// journal: Open keeps the highest sequence and removes the rest and any
// .tmp. The snapshot is taken under the journal's lock, so the appender
// waits for it (not for the disk); records buffered after it go to the new
// journal.
//
// # Journal format, version 2 (all integers big-endian)
//
// Header, JournalHeaderSize (32) bytes:
//
//	0  uint32 Magic    0x5543514A ("UCQJ")
//	4  uint16 Version  2 (1 is read too: see "Timestamps")
//	6  uint16 Reserved 0
//	8  uint64 Sequence the file's name
//	16 uint32 CRC32C   Castagnoli, over bytes 0..15
//	20 int64  Synced   file length durable when this was written
//	28 uint32 CRC32C   Castagnoli, over bytes 20..27
//
// Bytes 0..19 are a Sealed frame of internal/framed (checked magic, CRC,
// then version, as the file header below); the synced mark has its own CRC
// because it is rewritten alone.
//
// Then records, each:
//
//	0  uint32 Length   of the body, 5..512
//	4  uint32 CRC32C   Castagnoli, over the body
//	8  body: uint8 Type, uint32 QueueID, then by type:
//	   1 declare   int32 Partition, int64 Start, topic (the rest, 1-255 bytes)
//	   2 entry     int64 Offset, int64 PhysOffset, int64 Timestamp, int32 Size
//	   3 truncate  int64 Offset: drop the entries from Offset on
//	   4 set-min   int64 Offset: drop the entries before Offset (retention)
//	   5 promoted  the queue's files hold it from here on
//	   6 removed   the queue's topic was deleted
//
// A declare gives a new queue the next QueueID (ids only grow, so a topic
// deleted and created again, a new incarnation, is a new id) and starts it
// empty at Start (0 when created; MinOffset in a compacted journal). An
// entry follows the queue's last one, or starts the queue anew if it is
// empty, exactly as Append.
//
// Recovery (Open) replays the newest journal in order. It stops at the
// first record that fails to decode (short, bad length, CRC) or does not
// apply (an undeclared id, an offset out of sequence). If that is at or
// after the synced mark it is a torn tail: the file is cut there (ftruncate
// and fdatasync, so no stale record can follow new ones) with a warning;
// entries after the dispatcher's checkpoint are re-dispatched anyway. If it
// is before the mark, records that were durable are damaged: Open fails
// with an error wrapping ErrCorrupt that names the file and position, as a
// damaged queue file fails to open. The queues are derived data: removing
// the consume-queue directory makes the dispatcher rebuild them from the
// commit log. A mark that fails its CRC reads as 0 (nothing known durable).
// A failure to read the file is neither: Open fails with it. The file is
// read through a 1 MiB window (window.go), never whole: at a million
// partitions it is 128 MB. ReadJournal reads the same without changing
// anything, for inspection.
//
// # File format, version 2 (all integers big-endian)
//
// Header, 32 bytes at offset 0:
//
//	0  uint32 Magic          0x55435146 ("UCQF")
//	4  uint16 Version        2 (1 is read too: see "Timestamps")
//	6  uint16 EntrySize      32
//	8  int64  BaseOffset     logical offset of slot 0 (= the file name)
//	16 int64  StartOffset    first offset that may hold an entry
//	24 uint32 EntriesPerFile slots in a full file
//	28 uint32 CRC32C         Castagnoli, over bytes 0..27
//
// The header is a Sealed frame of internal/framed; any failure is ErrCorrupt.
//
// StartOffset equals BaseOffset except in a queue's first file: a queue
// created at an offset that is not a multiple of EntriesPerFile, or whose
// head was dropped by DeleteBefore, starts there, and MinOffset after a
// restart is the first file's StartOffset. It may equal
// BaseOffset+EntriesPerFile: a queue whose entries were all deleted keeps
// one file with no entries to remember MaxOffset.
//
// Entry slot i at byte 32+32*i, for logical offset BaseOffset+i:
//
//	0  int64  Offset          the slot's own logical offset
//	8  int64  PhysOffset      record position in the commit log (>= 0)
//	16 int64  Timestamp       unix ms, see "Timestamps"
//	24 int32  Size            record size (> 0)
//	28 uint32 CRC32C          Castagnoli, over bytes 0..27
//
// A slot is written only if its CRC matches, its Offset is its own and its
// Size is positive; anything else (zeros, a torn write, garbage, a slot
// shifted from elsewhere) reads as not written. 32-byte slots never cross
// a page.
//
// # Offsets and recovery
//
// MinOffset is the first entry present and MaxOffset one past the last
// (the next Append). Entries are appended in order, so written slots form a
// prefix and opening a queue finds MaxOffset by binary search in its last
// file. A crash can leave entries after the dispatcher's last checkpoint
// missing, torn, or present past a hole; TruncateFrom(checkpoint) cuts at the
// first entry that is invalid or points at or past the checkpoint. All
// entries before the cut are durable and point below it, so that predicate
// is monotonic along the queue and binary search finds the cut; the rest of
// the file is zeroed (only chunks not already zero are written), the file is
// cut back to the size its surviving entries imply, and later files go.
//
// DeleteBefore(minPhys) raises MinOffset to the first entry with
// PhysOffset >= minPhys, found by binary search (PhysOffset grows along a
// queue). A file is deleted when every one of its slots lies before that
// entry, that is when BaseOffset+EntriesPerFile <= the new MinOffset; the
// last file always stays. In the first remaining file StartOffset is raised
// and the slots before it are zeroed, which is exactly what a rebuild from
// the retained log writes.
//
// OffsetForTime binary-searches Timestamp, which never decreases along a
// queue (see "Timestamps").
//
// # Timestamps
//
// An entry's Timestamp is the largest record timestamp of the queue's
// batches up to and including its own: the caller gives AppendRange the
// batch's max timestamp (the producer's CreateTime, Kafka's default
// message.timestamp.type) and the queue raises it to the entry before's.
// It is Kafka's time index, dense: OffsetForTime's binary search finds the
// first batch whose own max timestamp reaches the time, as Kafka's lookup
// does, even when producers' timestamps go back. Like Kafka's, one record
// stamped far in the future answers every later lookup up to its time.
// The entries of a queue whose older batches retention removed may carry
// a timestamp from them, which a rebuild from the retained log would not.
//
// Version 1 of both formats stored the time the log appended the record
// instead. The layout is the same, so this build reads version 1 files and
// journals as they are and continues them (a continued file keeps its
// version 1 header; new files and journals are version 2): the first
// entry appended after an upgrade is raised to the last store time, so
// timestamps still never decrease, and a lookup among offsets indexed
// before the upgrade answers by store time, as it did then. A build that
// reads only version 1 refuses version 2 files (ErrCorrupt) rather than
// misread them.
//
// # Concurrency
//
// One appender, many readers. Append writes the slot's 32 bytes into the
// mapping and only then publishes MaxOffset with an atomic store; a reader
// checks the offset against MaxOffset first, so it never sees a half-written
// entry. AppendRange writes the slots of all the offsets of one record batch
// before it publishes, so MaxOffset never lies inside a batch: a fetch
// takes it as the high watermark, and Kafka's never splits a batch. Each file has a RWMutex: readers copy an entry out under the read
// lock, and the rare operations that replace the mapping (growth, eviction,
// truncation, deletion) take the write lock. The list of a queue's files is
// an atomically swapped slice.
//
// # Scale
//
// Nothing is opened at Store.Open. A queue is opened on first use, which
// reads its directory, maps its last file and reads its first file's
// header. A file is mapped only when touched and its descriptor is closed
// right after mmap (the mapping stays valid), so open descriptors never grow
// with the number of partitions. At most Options.MaxMapped files (default
// 16,384) are mapped at once: mapping one more unmaps the least recently
// used. Eviction does not msync: munmap of a shared mapping leaves the
// written pages in the page cache (they survive kill -9 and are written back
// by the kernel), and a written file stays on the dirty list until Flush
// makes it durable (msync if mapped, fdatasync if not): a synchronous msync
// per eviction would put a disk flush on the append path of every miss
// (docs/BENCHMARKS.md, "Consume queues"). Flush with more than 64 dirty files or directories issues one
// syncfs(2) instead of one journal commit per file. A use re-promotes a file
// only after MaxMapped/2 other promotions (memcached's lazy bump), so
// repeated reads of a hot file cost two atomic loads rather than a global
// lock.
//
// A busy partition touches one file (its tail) for writes and usually the
// same one for reads, so 10,000 partitions need about 10,000 mappings, well
// within vm.max_map_count 65,530 and the 20,000 open-file limit, which this
// package does not consume at all. Past that:
//
//   - Map count: the live working set, not the partition count, is bounded
//     by MaxMapped. Raising MaxMapped toward ~55,000 (leaving the rest of
//     vm.max_map_count to the commit log, the Go runtime and libraries)
//     keeps ~50,000 active partitions fully mapped; beyond that raise
//     vm.max_map_count.
//   - LRU thrash: when more files are active than MaxMapped, each miss costs
//     open+fstat+mmap+close plus a munmap, and the open dominates (figures
//     in docs/BENCHMARKS.md, "Consume queues"). Throughput degrades gradually rather than failing; a dispatcher
//     round-robining over more active partitions than MaxMapped is the
//     worst case, so MaxMapped should exceed the active partition count.
//   - Inodes and dentries: every promoted partition costs a directory plus
//     at least one file (4 KiB minimum); small ones cost none. 1,000,000 partitions are ~2,000,000 inodes
//     and ~4 GB of minimum-size files, and a topic's directory holds one
//     entry per partition (ext4 and xfs index large directories).
//   - Memory: a mapped file's resident tail is one or two pages, so 50,000
//     mapped files pin ~200-400 MB of page cache. Each mapping is as long
//     as its file (64 KiB at least), so the mappings of young files sit
//     side by side and share page tables, 32 to a table; a file grown past
//     2 MiB (65,000 entries) has tables of its own, 4 KiB per 2 MiB mapped.
//   - Start-up: opening the Store is constant; the first touch of each
//     queue costs a readdir, one mmap and a short binary search, so
//     TruncateFrom/DeleteBefore over all queues is linear in the partition
//     count (BenchmarkOpen10000; figures in docs/BENCHMARKS.md).
//
// # Durability
//
// Flush makes the written files and changed directories durable (msync,
// fdatasync, directory fsync or one syncfs, see Scale), then records the
// promotions whose files that made durable and fdatasyncs the journal.
// Writeback leaves every page it cleaned write-protected, so the next
// Append to each file flushed maps its tail pages again (one
// MADV_POPULATE_WRITE, unmapdirty.go, where the stores had a fault each):
// callers flush seldom (the dispatcher's checkpoint, every 10 s by default;
// BenchmarkAppendAcrossFlushes shows the cost per entry). A failed Flush is
// sticky: Linux may drop the dirty pages of a failed writeback and let a
// retry succeed ("fsyncgate"), so every later Flush (and Close) fails with
// ErrFlushFailed without syncing, one error line is logged and FlushFailed
// reports it. The dispatcher's checkpoint then stays before the failure and
// a restart rebuilds the entries after it from the commit log; appends and
// reads go on meanwhile. These calls go through a small seam (Options.FS) that
// tests replace, here or through store.Options.FS, to inject failures or to rebuild the
// directory from what each call made durable, as a power cut leaves it.
//
// Get and Append access mappings under fileops.Guard: a fault (a media
// error, or a file truncated under the store) fails that call with ErrIO
// instead of killing the process with SIGBUS.
//
// A structurally damaged queue (bad header, missing middle file) fails to
// open with ErrCorrupt; the index is derived data, so removing the queue's
// directory and re-dispatching rebuilds it.
package consumequeue
