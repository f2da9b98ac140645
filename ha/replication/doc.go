// Package replication is unilog's data plane: it copies a replica group
// leader's whole commit log to its followers over one TCP stream per
// follower, so replication costs the same at 1 partition and at 100,000.
//
// # Design
//
// A follower's log is byte-identical to its leader's (commitlog ReadRaw,
// AppendRaw). The follower dials the leader's replication address, says
// where its log ends and which leader epoch wrote its last records, and
// the leader answers where that epoch ends in its own log (commitlog
// Epochs.EndOffset, Kafka's OffsetsForLeaderEpoch). The follower cuts
// anything after that (its hook truncates the log and re-positions its
// dispatcher), then the leader streams raw chunks from the follower's end
// as they are written, each tagged with the epoch its records were written
// under, so the follower's epoch file grows exactly as the leader's did.
// The follower acknowledges its write end and its flushed end.
//
// # A follower that starts again
//
// When the leader no longer holds where the follower's log ends (its
// retention deleted those files, or the follower is new and the leader's
// log no longer starts at 0), the follower empties its log and starts it
// again at the leader's MinOffset (its Restart hook). Its consume queues
// are then rebuilt from the records it receives, which covers only the
// partitions that have records after that point: one whose every record
// the leader's retention deleted would have no queue, so once promoted
// the follower would count that partition from 0 again, reusing offsets
// consumers already read and committed, and answer ListOffsets unlike the
// old leader. So the leader follows its Start frame with Offsets frames:
// every partition's next offset at its MinOffset (LeaderConfig.Offsets,
// the dispatcher's OffsetsAt), taken again should retention move the
// minimum meanwhile; a follower that restarts hands them to Restart,
// which starts each queue and the log's counters there before any record
// is applied. They are sent on every connection, so the follower needs no
// second round trip to ask; at about 40 bytes a partition, 10,000
// partitions cost 400 KB once per session.
//
// The leader keeps, per follower, its acknowledged offsets and when it was
// last caught up. A follower is in sync while it caught up to the leader's
// end (as it was at the follower's previous acknowledgement, Kafka's
// rule) within MaxLag; it leaves the set when it lags longer or
// disconnects and rejoins once caught up. The high watermark is the lowest
// end confirmed by the leader and every in-sync follower: records below it
// are on every in-sync replica, so a failover to one of them keeps them,
// and only those are served to consumers. An acks=-1 produce asks
// CheckInSync before its append, so one refused for fewer than MinInSync
// replicas in sync, the leader counted as Kafka's min.insync.replicas
// counts it (ErrNotEnoughReplicas, never a silent downgrade), is never
// stored; WaitReplicated then blocks it until the high watermark
// covers it, failing the same way should the set shrink meanwhile. With
// Durable set, followers count only what they have flushed.
//
// # Shrinking the in-sync set
//
// Only a follower of the last published in-sync set may take a lapsed
// lease, so the set that matters for safety is the one the control plane
// holds, not the leader's memory. If a shrink took effect before it was
// stored, the high watermark (and acks=-1 answers) could pass the dropped
// follower's end while the stored set still names it; the leader dying
// then could elect that follower and lose acknowledged records. So, as
// Kafka commits an ISR change to its controller first, a dropped follower
// stops counting toward MinInSync at once (acks needing it fail fast) but
// keeps bounding the high watermark at what it had confirmed until
// PublishInSync has stored a set without it; then it leaves the
// computation and waiters wake. Publishing runs on its own goroutine,
// retries with backoff until it succeeds or the Leader closes, and always
// stores the current set, so changes made meanwhile are coalesced. A grow
// needs no prior publish (the followers already in the set still bound
// the high watermark, and the new one is caught up) but is published too.
// The argument: at any moment every follower that a stored set names is
// either in sync or held, so the high watermark never exceeds the end of
// any follower that could be elected.
//
// These rules are inSyncSet's, a state without I/O, locks or clock that
// the scripts in testdata/insync drive. The election itself is MayLead:
// of the last published set, the live follower with the longest log
// (ties: the lowest node id) may take the lapsed lease; the node that
// held it may take it back; with the set unknown, the longest log.
//
// Every frame carries the sender's leader epoch. A follower refuses a
// leader with an older epoch than the one it was told to follow, and a
// leader that meets a follower which knows a newer epoch is told so (a
// Fenced frame) and reports it through OnFenced: it must stop taking writes
// and follow.
//
// # Authentication
//
// Both ends prove they hold the replication key (LeaderConfig.Key,
// FollowerConfig.Key; unilog derives it from the cluster secret) before
// either acts on anything the other says. The follower's Hello carries a
// fresh random nonce; the leader answers with an Auth frame holding a
// nonce of its own and HMAC-SHA256(key, "unilog replication leader v1",
// follower nonce, leader nonce, the leader's listen address); the
// follower checks it against the address it dialed and answers with
// HMAC-SHA256(key, "unilog replication follower v1", leader nonce,
// follower nonce, its node name). Each HMAC input is length-prefixed.
// Only then does the leader look at the Hello's epoch (which could fence
// it) and send Start, and only then does the follower cut or write its
// log. A process without the key so neither reads a leader's log nor
// poses as a leader; one that makes a follower dial it and relays a real
// leader's answers fails the address check. The key authenticates the
// handshake, not each frame: against someone able to alter traffic on
// the wire, add TLS.
//
// With TLS configured on both sides (internal/tlsconf) the stream is
// encrypted and, with a client CA and RequirePeer on the leader, mutual: a
// peer without a certificate of the cluster's CA and an allowed name never
// reaches the handshake.
//
// # Frames, version 3
//
// All integers are big-endian.
//
//	off  size  field
//	0    4     Length   uint32, bytes after this field
//	4    1     Type     1 Hello, 2 Start, 3 Data, 4 Ack, 5 Fenced, 6 Offsets, 7 Auth
//	5    1     Version  3
//	6    8     Epoch    int64, the leader epoch as the sender knows it
//	14   n     Payload
//	     4     CRC      CRC32C (Castagnoli) of bytes [4, 14+n)
//
// Payloads:
//
//	Hello   (follower) End int64, LastEpoch int64 (-1: none), NodeLen uint16, Node, Nonce [32]byte
//	Auth    (leader)   Nonce [32]byte, Proof [32]byte; Epoch 0
//	Auth    (follower) Proof [32]byte; Epoch 0
//	Start   (leader)   TruncateTo int64 (-1: keep nothing), LeaderMin int64, FileSize int64
//	Offsets (leader)   At int64 (= LeaderMin), Last uint8 (1 on the final one), Count uint32,
//	                   Count entries: TopicLen uint16, Topic, TopicID [16]byte,
//	                   Partition int32, Next int64 (the next offset at At, >= 0)
//	Data    (leader)   RecordEpoch int64, HighWatermark int64, Phys int64, raw log bytes
//	Ack     (follower) End int64, Flushed int64
//	Fenced  (either)   the frame's Epoch is the newer epoch; no payload
//
// The handshake is Hello, the leader's Auth, the follower's Auth, Start,
// one or more Offsets (the last one marked, each with at most MaxChunk
// bytes of entries), then the follower's first Ack; Data and Ack frames
// follow. Version 1 had no Offsets frames, version 2 no Auth; either side
// refuses a frame of another version (ErrProtocol), so nodes of different
// versions never share a stream.
//
// A Data frame never crosses a file end or an epoch start, and carries at
// most MaxChunk bytes of log. An idle leader sends an empty Data frame
// every Heartbeat so the follower sees the high watermark move and a dead
// leader is noticed.
package replication
