// Package group is unilog's group coordinator: Kafka's classic consumer
// group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the
// admin calls) and committed offsets, which it keeps as records in the
// commit log itself.
//
// # Design
//
// Every group is owned by one goroutine fed by a channel of requests
// (group.run), the shape of Kafka's GroupCoordinator and of franz-go's
// kfake: a group's state is only touched by its goroutine, so the state
// machine needs no locks and every transition is a plain function.
// Requests that must wait (a JoinGroup until every member has rejoined, a
// follower's SyncGroup until the leader's plan arrives) park a reply
// channel in the member and return; the goroutine answers them when the
// group moves on. The caller waits on that channel or on its context,
// which the broker ends when the client's connection closes; the parked
// call is then forgotten (a member that never had a generation is removed,
// an existing one left to its session timeout).
//
// Time comes from a Clock. One timer per group is armed for the earliest
// deadline (a session, an unanswered MEMBER_ID_REQUIRED id, the rebalance
// timeout); when it fires the group re-checks every deadline, so a timer
// that fires early or late is harmless and tests drive timeouts by
// advancing a fake clock.
//
// # Protocol
//
// States and transitions are Kafka's (see State):
//
//   - A JoinGroup at v4+ without a member id is answered MEMBER_ID_REQUIRED
//     with a new id (KIP-394); the id is pending until the client joins with
//     it or its session timeout passes, and a rebalance waits for it. Older
//     versions and static members get their id with the join.
//   - A join, a leave, an expired session, or the leader (or a member whose
//     protocols changed) rejoining a Stable group starts PreparingRebalance.
//     The join phase completes when every member has a JoinGroup parked (and
//     no id is pending), or at the largest rebalance timeout, dropping the
//     members that did not rejoin. The generation is incremented; the
//     protocol is one every member supports (the most first choices wins);
//     the leader stays if still a member, else the first to join; only the
//     leader's answer lists the members and their metadata.
//   - CompletingRebalance waits for the leader's SyncGroup; its plan passes
//     through unchanged (any client-side assignor works) and the group is
//     Stable. A SyncGroup in Stable returns the member's current assignment.
//   - Members parked in a join or sync are kept alive; the others must
//     heartbeat within their session timeout or are evicted. Heartbeats
//     during PreparingRebalance answer REBALANCE_IN_PROGRESS.
//   - Static members (group.instance.id, KIP-345) skip MEMBER_ID_REQUIRED. A
//     static member rejoining without a member id replaces its old id: the
//     old id is fenced (FENCED_INSTANCE_ID), and in a Stable group with
//     the same chosen protocol nothing is rebalanced: the member keeps the
//     generation and its assignment (the leader gets SkipAssignment,
//     KIP-814).
//   - The last member leaving makes the group Empty (with a new
//     generation); DeleteGroups makes an Empty group Dead and deletes its
//     offsets.
//
// The scripts in testdata/ show these rules step by step (TestScripts).
// Group membership is not persisted: after a restart members find their
// ids unknown and rejoin, as after a Kafka coordinator move without the
// group metadata record. Committed offsets are persisted.
//
// # Committed offsets
//
// OffsetCommit is accepted from any client while a group has no members
// (generation -1), otherwise only from a member of the current generation
// (also during PreparingRebalance, so revoked partitions can be committed,
// but not while the group waits for its leader's plan). One request's
// offsets become one record batch, appended as one commit-log record to
// the offsets topic (the broker's __consumer_offsets), in the partition
// PartitionFor(group): all of a commit or none of it is stored, and a
// torn record is cut by recovery like any other. With Options.SyncCommits
// (the broker sets it under --flush sync or sync replication) the commit
// is answered only once the log is durable through it, flushed and on
// the replicas required, as an acks=-1 produce, so an acknowledged commit
// survives a crash or a failover. The in-memory view, which OffsetFetch
// reads, takes a commit only then: one answered with an error is never
// seen (though its record, if appended, may be replayed after a failover,
// as Kafka's coordinator loading its partition replays it). Records are
// appended under one lock; commits of one key that become durable out of
// order leave the view as log order would, and a snapshot continues at the
// oldest commit still pending. A failed commit is answered as Kafka's
// coordinator answers it: NOT_COORDINATOR when this node no longer leads
// the log (ErrNotCoordinator), COORDINATOR_NOT_AVAILABLE for too few
// in-sync replicas (ErrNotEnoughReplicas, checked before the append, so
// nothing is written) or a timeout, KAFKA_STORAGE_ERROR only for the
// storage's own failures; it is logged when the answer changes, not per
// commit.
//
// Each record's key and value mirror Kafka's own __consumer_offsets
// schema, so they are versioned; all integers are big-endian and a
// string is a uint16 length and its bytes:
//
//	key, version 1                  value, version 3
//	  int16  version = 1              int16  version = 3
//	  string group                    int64  offset
//	  string topic                    int32  leader epoch (-1 = none)
//	  int32  partition                string metadata
//	                                  int64  commit time, unix ms
//
// A record without a value (null) is a tombstone: the key's offset was
// deleted (DeleteGroups, OffsetDelete). Integrity comes from the record
// batch's CRC32C and the commit-log record's CRC32C around it; a key or
// value whose fields do not end exactly at its length is ErrCorrupt and
// stops Open rather than silently dropping commits.
//
// # Snapshot
//
// Open rebuilds the view from the last snapshot (Options.Snapshot, which
// the broker keeps in <data>/offsets.snapshot, rewritten every minute and
// on Close) plus the records appended after it, replayed in order. A
// snapshot is taken only of records already durable in the log, so it
// never claims more than a crash leaves. Version 1, big-endian, a Prefixed
// frame of internal/framed:
//
//	0   [4]byte magic    "ULGS"
//	4   uint16  version  1
//	6   uint32  length   of the body
//	10  uint32  CRC32C   Castagnoli, over the body
//	14  body:
//	    uint32 P, then P × int64: per offsets partition, the offset replay continues at
//	    uint32 N, then N × {uint32 length, key (as above); uint32 length,
//	                        value (as above); int64 end of the commit-log record holding it}
//
// Replaying a record the snapshot already contains is harmless (the last
// record per key wins either way), but skipping one is not: a snapshot
// whose continuation offset of some partition is below the first record
// retention kept, or that fails any check, is logged and the whole offsets
// topic replayed instead (ErrBadSnapshot); it is derived data.
//
// The view remembers, per commit, where its commit-log record ends. RetentionFloor (wired into the commit log's retention floor)
// keeps every file holding a live commit, and Compact, run periodically
// by the broker, copies the live commits found in the oldest file to the
// head of the log, waits until the copies are durable and only then lets
// the floor pass them. So retention deletes old files without ever taking
// a group's last commit, and replay stays bounded by what retention keeps.
package group
