// Package dispatcher is the loop that builds the consume queues: one
// goroutine tails the commit log from the last dispatched physical offset
// and appends every record's consume-queue entries (RocketMQ's
// ReputMessageService). It is owned and started by package store, which
// opens the log and the queues, recovers them, takes the checkpoints and
// serves reads; see its package doc for the data directory as a whole.
//
// # Design
//
// Producers append to the commit log only. The dispatcher waits on
// commitlog.Log.Appended, reads every record up to the write offset with
// the log's commitlog.HeaderCursor (no allocation or CRC per record: the
// records it tails were verified by recovery or written by this process,
// which hands it their headers without a read of the mapping) and appends
// Count consume-queue entries for it at once (all pointing at the same
// record: physical offset, size, and its batch's max timestamp, which the
// queue raises to the largest so far). It reads records a window of 16 at
// a time and touches their queues before indexing them, so that the cache
// misses of many partitions' queues overlap. It is the only writer of the
// consume queues, so they need no writer lock of their own; retention of
// log files is handed to it as well (OnRetention), and it deletes the
// consume-queue files that index only deleted log files. After each pass
// it publishes the dispatched offset (WaitDispatched) and tells its
// Notifier which partitions grew; long-poll fetches sleep on those.
//
// Only records whose TopicID is the live one of their topic
// (Options.Live) are dispatched, each incarnation into the queues named
// QueueName(topic, id). Indexing is idempotent: offsets a queue already
// holds are skipped, so recovery may re-scan dispatched records through
// Index. A record whose first offset is beyond its queue's MaxOffset (a
// gap: damaged or removed queue files) is logged once as an error and not
// indexed.
//
// The owner changes the queues under the dispatcher only on its goroutine
// (Do): a follower's truncation rewinds the dispatched offset (Rewind),
// cuts, and moves the cursor (ResumeAt); a deleted incarnation is forgotten
// (Forget) before its queues go.
package dispatcher
