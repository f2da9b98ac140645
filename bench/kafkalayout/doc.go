// Package kafkalayout is a model of Apache Kafka's on-disk log layout, built so
// that unilog's single commit log can be compared with it on the same machine,
// with the same record bytes and the same flush policies. It is a baseline for
// `unilog bench storage`, not a broker: it has no network, no replication and
// no retention.
//
// # Layout
//
// Every partition is a directory <Dir>/<topic>-<partition>/ holding a chain of
// segments. A segment is three files named by its base offset (the first
// offset it holds) as 20 zero-padded decimal digits, as Kafka names them:
//
//	00000000000000000000.log        records, appended with one write(2) per batch
//	00000000000000000000.index      sparse offset index
//	00000000000000000000.timeindex  sparse time index
//
// The .log holds records back to back in the unilog commitlog record format
// (version 1; see package commitlog: big-endian, TotalSize first, CRC32C
// Castagnoli over everything after the CRC field). Both layouts therefore
// write byte-identical records, encoded by commitlog.Encode; in a .log record
// PhysOffset is the record's byte position inside its segment and QueueOffset
// is its partition offset.
//
// The .index is an array of 8-byte entries, exactly Kafka's OffsetIndex:
//
//	0 int32 RelativeOffset  last offset of the indexed record minus the segment base
//	4 int32 Position        byte position of that record in the .log
//
// An entry is added before a record once more than IndexIntervalBytes
// (Kafka's index.interval.bytes, default 4096) have been appended since the
// previous entry, so the first record of a segment is never indexed and a
// zero entry marks the end of the used part. The .timeindex is an array of
// 12-byte entries, exactly Kafka's TimeIndex:
//
//	0 int64 Timestamp       largest store timestamp (unix ms) so far in the segment
//	8 int32 RelativeOffset  offset of the record that carried it, minus the base
//
// appended next to each offset-index entry when the timestamp grew, and once
// more when the segment is rolled. Index files carry no header and no
// checksum, as in Kafka: they are derived data, checked against the .log on
// open and rebuilt from it.
//
// # Behaviour copied from Kafka
//
//   - The active segment's index files are preallocated to MaxIndexSize
//     (segment.index.bytes, default 10 MiB) with a sparse ftruncate, as
//     RandomAccessFile.setLength does, and mapped read-write; the file
//     descriptor is closed right after mapping, as AbstractIndex does. Every
//     segment's .log stays open for the life of the log, as FileRecords does,
//     so a partition costs one descriptor per segment and two map areas per
//     segment.
//   - A segment is rolled when the next batch would take it past SegmentBytes
//     (segment.bytes, default 1 GiB) or when an index is full. On roll the old
//     segment's index files are trimmed to their used size and remapped, and
//     the old segment is fsynced in the background (UnifiedLog.roll schedules
//     that flush whatever the flush policy).
//   - Appends to one partition are serialised by a per-partition lock; appends
//     to different partitions run in parallel. Offsets and the store timestamp
//     (LogAppendTime) are assigned under that lock.
//   - Flush policies: FlushNone leaves write-back to the kernel (Kafka's
//     default); FlushInterval runs one flusher that, every FlushInterval,
//     fsyncs each partition written since its last flush, one after the other,
//     as log.flush.interval.ms / flush.ms with the log flusher thread do;
//     FlushSync fsyncs after every append batch (flush.messages=1). A flush
//     fsyncs the .log and msyncs both indexes, outside the append lock, like
//     LogSegment.flush.
//   - Reads look the offset up in the segment list, then in the sparse index by
//     binary search, then scan the .log forward from that position with pread,
//     returning whole records up to a byte budget, as a fetch does.
//   - Close flushes every partition and trims the active index files, as a
//     clean shutdown does. Open scans the active segment of every partition:
//     it keeps the index entries that point at a valid record, rebuilds the
//     index tail from the .log, and cuts the .log at the first torn or corrupt
//     record.
//
// # Where it differs from Kafka, and why
//
//   - No record batch format v2: a record is a commitlog v1 record, not a
//     RecordBatch with varint-encoded records, so there is no compression, no
//     producer id / epoch / sequence, no transactions, aborted-transaction
//     index (.txnindex) or leader-epoch cache. The benchmark compares storage
//     layouts, and identical bytes on both sides keep that comparison fair.
//   - One commitlog record is one Kafka batch: the index and the scan work at
//     record granularity, and a record spans Count offsets (usually 1).
//   - Recovery always rescans the active segment instead of consulting the
//     recovery-point and clean-shutdown checkpoint files, and it trusts
//     segments older than the active one (they were fsynced at roll). Kafka
//     rescans every segment above its recovery point after an unclean stop.
//   - Indexes of old segments are mapped when the log opens; Kafka (since 1.1)
//     maps them lazily on first use, so on reopen this model holds more map
//     areas than Kafka would. During a write run, where Kafka keeps every index
//     it has touched mapped, the counts are the same.
//   - Options.RandomIndexAccess (off by default, and not something Kafka
//     does) madvises the index mappings MADV_RANDOM. Without it a first touch
//     of an index page on the sparse 10 MiB file makes the kernel read around
//     the fault, up to the device's read_ahead_kb of holes zero-filled into
//     the page cache; the switch measures that cost.
//   - The .timeindex is written, trimmed, recovered and mapped exactly as
//     Kafka does, because that is part of the cost of the layout, but nothing
//     reads it: the benchmark looks records up by offset only (Kafka uses it
//     for ListOffsets by timestamp and time-based retention).
//   - No retention, compaction, leader epochs, replication or high watermark.
package kafkalayout
