// Package broker is unilog's Kafka-protocol server: real Kafka clients
// (franz-go, librdkafka/kcat, kafka-go, the Java client) produce to and
// fetch from the unified storage of package store unchanged.
//
// The broker is the protocol front end only: it serves a Storage, an
// interface it owns, that *store.Store implements (the benchmark's Kafka
// layout too). cmd/unilog opens the topic metadata, then the store over
// it (Live names each topic's incarnation), and hands both to Start; Open
// does the same for callers that need no store of their own.
//
// # Supported APIs
//
// Requests and responses are decoded and encoded by franz-go's kmsg; the
// broker reads only the 4-byte frame length and the request header (api
// key, version, correlation id, client id, and the tagged fields of
// flexible headers). Each API is registered by the file that handles it
// (register in api.go: key, versions, handler and authorization rule
// together), and the table they form is the single source of what is
// advertised in ApiVersions and what is accepted:
//
//	key  API                      versions  notes
//	  0  Produce                  2-12      magic 0/1 message sets up-converted to v2 batches; v13 addresses topics by id
//	  1  Fetch                    4-12      v7+ incremental fetch sessions (KIP-227)
//	  2  ListOffsets              1-6       earliest (-2), latest (-1), by timestamp
//	  3  Metadata                 0-12      without a Cluster: one broker, leader of everything, advertised as the connection's local address; see "Cluster"
//	 17  SaslHandshake            0-1       v0: bare SASL tokens follow (sasl.go)
//	 18  ApiVersions              0-4       a newer request is answered at v0 with UNSUPPORTED_VERSION and the table (KIP-511)
//	 19  CreateTopics             0-7       replication factor 1 (or -1); per-topic configs (topicconfig.go); a replica assignment naming an unknown broker, a broker twice or more than one is INVALID_REPLICA_ASSIGNMENT
//	 20  DeleteTopics             0-6       by name, or by topic id (v6)
//	 21  DeleteRecords            0-2       moves a partition's log start (see "Log start"); not internal topics
//	 22  InitProducerID           0-4       idempotent producers; transactional ids: package txn (txn.go)
//	 24  AddPartitionsToTxn       0-3       v4+ is the brokers' batched form
//	 25  AddOffsetsToTxn          0-3
//	 26  EndTxn                   0-3       v4+ (KIP-890 transaction version 2) not served
//	 27  WriteTxnMarkers          0-1       from another replica group's coordinator (txn_writemarkers.go, txn_remote.go)
//	 28  TxnOffsetCommit          0-3
//	 65  DescribeTransactions     0
//	 66  ListTransactions         0-1
//	 23  OffsetForLeaderEpoch     0-4       from the replica group's leader-epoch file; an unreplicated log is all epoch 0
//	 32  DescribeConfigs          0-4       a topic's own configs (DYNAMIC_TOPIC_CONFIG) and the defaults; the broker's, read-only
//	 33  AlterConfigs             0-2       replaces a topic's own configs; broker configs are the command line's
//	 35  DescribeLogDirs          0-4       the data dir; a partition's size is its records' bytes in the shared log
//	 36  SaslAuthenticate         0-2       PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
//	 37  CreatePartitions         0-3       grow only; not internal topics; assignments checked as CreateTopics'
//	 44  IncrementalAlterConfigs  0-1       set and delete; append and subtract refused (no multi-valued list config)
//	 45  AlterPartitionReassign.  0         moves a partition to the replica group whose nodes the replicas name (reassign.go)
//	 46  ListPartitionReassign.   0         the moves in progress: adding the target group's nodes, removing the source's
//	 60  DescribeCluster          0-1       the Metadata brokers; this node as controller
//	 61  DescribeProducers        0         idempotent producers: id, epoch, last sequence
//	  8  OffsetCommit             0-9       v10 addresses topics by id
//	  9  OffsetFetch              0-9       v8+ many groups; require_stable: UNSTABLE_OFFSET_COMMIT under pending transaction offsets; v10 addresses topics by id
//	 10  FindCoordinator          0-5       groups and transactional ids (key types 0 and 1); v6 adds share groups
//	 11  JoinGroup                0-9
//	 12  Heartbeat                0-4
//	 13  LeaveGroup               0-5
//	 14  SyncGroup                0-5
//	 15  DescribeGroups           0-5
//	 16  ListGroups               0-5
//	 42  DeleteGroups             0-2
//	 47  OffsetDelete             0
//
// Any other API kmsg knows and any version outside the table is answered
// at the request's version with UNSUPPORTED_VERSION in the response's
// top-level error code (FindCoordinator v4+: per coordinator key). When that
// version of the response has no top-level error code (e.g. Fetch v3), or
// kmsg does not know the key or version, the connection is closed and the
// reason logged, which is what Kafka does.
//
// # Transactions
//
// Package txn's coordinator keeps its state in the internal topic
// __transaction_state (txn_log.go), as the group coordinator keeps offsets
// in __consumer_offsets. Ending a transaction appends the decision record
// and a control batch (commit or abort marker: attributes transactional and
// control, key version 0 and type, value version 0) for every partition of
// the transaction this node leads in ONE Storage.Append, under the produce
// locks, so each marker is in order with its partition's batches; package
// txn's doc says what a crash in the middle leaves and how it is finished.
// The markers of partitions other replica groups lead go to their leaders
// as WriteTxnMarkers (txn_remote.go), which append them through the same
// path (txn_writemarkers.go). Each
// partition's producer state (package producerstate) tracks the open
// transactions' first offsets and the aborted-transaction index, in its
// snapshot and rebuilt from the log after it. A transactional batch is
// stored only for a partition of its producer's Ongoing transaction
// (txn_produce.go: checked under appendMu, which the markers' append
// takes, so none lands after its partition's marker), unless another node
// coordinates the producer's id: then it is taken unchecked, as Kafka
// did before KIP-890. Fetch and ListOffsets at
// read_committed use them (txn_fetch.go): a fetch stops at the last stable
// offset, the first offset of the oldest open transaction, and carries the
// aborted transactions overlapping what it reads; read_uncommitted fetches
// report the high watermark as their last stable offset (computing it costs
// a lock per partition, and only read_committed consumers read it).
//
// # Consumer groups
//
// The group handlers hand the decoded request to package group's
// Coordinator and encode what it returns. JoinGroup and SyncGroup may park
// until the group moves on; while they do, a watcher peeks at the
// connection and ends their context when the client closes it (or the
// broker closes), so a parked call never outlives its client. Committed
// offsets are stored through offsetsLog: each commit is one uncompressed
// v2 record batch (keys and values as package group documents them)
// appended to the internal topic __consumer_offsets, 16 partitions, created
// at the first start; its records are dispatched into consume queues like
// any topic's and replayed from there when the broker starts. Under
// FlushSync an OffsetCommit is answered after the flush covering it. Names
// starting with "__" are reserved: CreateTopics, auto-creation, Produce,
// DeleteTopics, CreatePartitions, DeleteRecords and the alter-config APIs
// refuse them, and Metadata lists the internal topic with is_internal set,
// as Kafka does. The coordinator's
// RetentionFloor is the store's second retention floor (beside the
// dispatcher's), and once a
// minute the broker has the coordinator copy live commits out of the oldest
// commit-log file, so retention never deletes a group's last commit.
//
// # Connections
//
// Each connection handles one frame (4-byte size, at most MaxRequestBytes)
// at a time and writes its answer before handling the next, so pipelined
// requests are answered in order. A reader goroutine reads the next frame
// meanwhile: when the client disconnects it cancels the connection's
// context, which every wait of the in-flight request selects on (long poll,
// durability, dispatch, a parked JoinGroup), so a vanished client holds
// nothing until its timeouts. Every wait is also bounded by the request's
// own timeout, and no wait holds the topic lock, so one stalled request
// cannot hold up a CreateTopics or, behind it, other produces. IdleTimeout
// bounds the wait for a request, ReadTimeout the rest of it once its size
// arrived, WriteTimeout the writing of a response; at most MaxConnections
// are served (MaxConnectionsPerIP from one address), and all of them
// together hold at most MaxInflightBytes of requests, reserved as their
// bytes arrive (limits.go). A bad frame, header or body closes that connection
// only, logged with the fields remote, api, version and error; nothing is
// stored for it.
//
// # Produce
//
// Each partition's records must be exactly one v2 record batch, or a
// legacy message set (magic 0 or 1, what Produce v2 carries and what a
// client may still send at v3+), which is first up-converted to one batch
// as Kafka does: each message's CRC32 (IEEE) is checked (CORRUPT_MESSAGE),
// compressed wrapper messages (gzip, snappy, lz4) are decompressed and their
// inner messages taken as records, producer offsets are ignored, magic 0
// messages get timestamp -1, magic 1 their own (or the wrapper's when it
// says LogAppendTime), and the result is one UNCOMPRESSED batch without
// producer id (recompressing would cost produce-path CPU for rare old
// clients; wrappers decompressing to more than MaxMessageBytes, all of a
// set together, are MESSAGE_TOO_LARGE).
// Fetch never down-converts, which is why Fetch starts at v4. The batch is
// checked before anything is stored: header present, batch length equal to
// the bytes sent, magic 2, CRC32C over attributes..end as Kafka defines it
// (CORRUPT_MESSAGE), records count = last offset delta + 1, known codec,
// not control, and transactional only with a producer id (INVALID_RECORD),
// size <= MaxMessageBytes
// (MESSAGE_TOO_LARGE), and the records counted: their length varints are
// walked, through the decompressed stream for a compressed batch, and a
// count other than the batch's claim is CORRUPT_MESSAGE (the count decides
// how many offsets and index entries the batch takes, so it is never
// trusted), records decompressing to more than MaxMessageBytes
// MESSAGE_TOO_LARGE, having decoded at most that (records.go). The batch is appended as ONE commit-log record:
// Message{Topic, Partition, Count: records, Flags: FlagStampOffset,
// ProducerTimestamp: batch max timestamp, Body: batch bytes as sent}. The log
// assigns the partition's next offsets and stamps the base offset into the
// batch's first 8 bytes, which the CRC does not cover. Compressed batches are
// decompressed only to be counted: they are stored and served as sent. All the batches of
// one request are validated first, then appended with one Storage.Append
// (one commit-log lock, one dispatcher wake-up), because a client writing
// over thousands of partitions sends thousands of one-record batches per
// request; a batch the log refuses is answered alone.
//
// acks=0 gets no answer (a failure closes the connection, as Kafka), acks=1
// is answered after the append, acks=-1 after Storage.WaitDurable when the
// storage flushes synchronously (Storage.SyncFlush: the store opened with
// commitlog.FlushSync; with async flushing it is answered like acks=1). Every answer also waits until the dispatcher
// has indexed the append, so a record is fetchable and counted in the high
// watermark once its producer has been told its offset.
//
// Idempotent producers: InitProducerID hands out ids from blocks reserved
// durably in the metadata store and bumps the epoch of a producer that
// presents its id (KIP-360). The sequence rules, the ids and the
// snapshot's format are package producerstate's; here a batch that is a
// retry of one of its producer's last 5 is not stored again and is
// answered with the original base offset once the original is as durable
// as the acks level asks (it waits on the original's end, so a retry never
// overtakes the original's flush, and gets its flush error); a refused
// sequence is OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch
// INVALID_PRODUCER_EPOCH.
//
// # Producer-state snapshot
//
// <data>/producer-state holds that state as of a commit-log position
// (producerstate.Snapshot), so a start rebuilds it exactly from the
// snapshot plus the idempotent batches stored after it, however long a
// producer was idle. It is rewritten (producer-state.tmp, fsync, rename,
// fsync of the directory) every 10 s while the state changes and at Close,
// after the last request, so a clean start replays nothing.
//
// LogOffset is read before the partitions are copied, so batches appended
// while copying may be in the snapshot too; loading drops the batches that
// end past LogOffset and replay adds back those the log still holds. A
// follower writes the snapshot of the state it rebuilds from the log it
// replicates, at the position it reached. A snapshot that
// fails a check, or that names log data the recovered log does not hold (a
// crash lost the unflushed tail it was taken over), is not used: a warning
// is logged and the whole log is replayed instead, slower but never wrong.
// Snapshot entries and records of topics no longer in metadata, or of an
// incarnation other than the live one (a topic deleted and created again
// under the same name), are skipped, so a re-created topic starts with no
// producer state. Version 1 had no topic id; it is read, but used only when
// none of its entries is of a live topic whose records carry ids.
//
// # Fetch
//
// For each partition the consume queue gives the entry of the requested
// offset (Queue.Get -> PhysOffset -> Log.Read); the record's body, a whole
// stored batch, is copied into the response as is, and reading continues at
// QueueOffset+Count. Partition and request max bytes are honoured except that
// the first batch of the response is returned whole even if larger (KIP-74).
// The batch holding the offset is returned from its start; clients skip the
// records before their offset. HighWatermark and LastStableOffset are the
// queue's MaxOffset, LogStartOffset its MinOffset. Offsets below MinOffset or
// above MaxOffset get OFFSET_OUT_OF_RANGE; MaxOffset itself is an empty
// fetch. With fewer than min_bytes available the request sleeps on one
// store.Waiter registered on all its partitions (one channel however
// many partitions), up to max_wait_ms; the client disconnecting or a broker
// Close ends the sleep with what is there. Every fetch releases its
// registrations when it returns; unilog_fetch_watchers counts the live ones.
//
// Fetch v7+ clients that ask for it get an incremental fetch session
// (KIP-227, fetch_session.go): the broker keeps the partition list and fetch
// offsets, the client sends only changes and the broker answers only
// partitions with records or a changed high watermark or log start, so a
// consumer of 50,000 partitions no longer sends and receives all of them on
// every round trip. The records of a fetch are not copied by the broker:
// the response is written as a vector of its encoding and the stored
// batches in the log's mapping, held by views until written
// (fetch_write.go); over TLS they are copied once into the pooled response
// buffer.
//
// ListOffsets by timestamp uses Queue.OffsetForTime over the batches' max
// timestamps (CreateTime, Kafka's default message.timestamp.type), as
// Kafka's time index: it answers the first offset of the first batch whose
// max timestamp is at or after the time, with that timestamp, or -1/-1 when
// there is none. Kafka goes on into that batch to its first record at or
// after the time, so the answer here can be earlier by records of the same
// batch (their bytes may be compressed; the consumer is served the whole
// batch either way). Offsets indexed before consume-queue version 2 are
// looked up by the time the broker stored them.
//
// # Topics and the metadata file
//
// Topics are created by CreateTopics or, with AutoCreateTopics, by Metadata
// (when the client allows it) and Produce naming an unknown, validly named
// topic (DefaultPartitions), at most 100 per request (the rest are
// answered UNKNOWN_TOPIC_OR_PARTITION). Names follow Kafka's rules, 1..222
// of [a-zA-Z0-9._-], not "." or "..", but for the length: Kafka allows 249,
// and unilog's consume-queue directories add the topic id to the name
// (INVALID_TOPIC_EXCEPTION names the limit). Unknown topics or partitions
// get UNKNOWN_TOPIC_OR_PARTITION.
//
// Every creation assigns a random 16-byte topic id (Kafka's topic ids),
// kept in the metadata, returned by Metadata v10+ and CreateTopics v7, and
// accepted by Metadata v10+ and DeleteTopics v6 in place of the name (an
// id that names no topic, such as a deleted incarnation's, gets
// UNKNOWN_TOPIC_ID). It is
// also the commitlog.TopicID of each record the topic appends, so a topic
// deleted and created again under the same name is another incarnation:
// the dispatcher's Live callback answers a topic's current id from the
// metadata and indexes only records carrying it, into queues of that
// incarnation alone. Delete removes the topic from metadata first, so its
// records stop being indexed (also in any later recovery or rebuild), then
// Dispatcher.DeleteTopic drops its consume queues and offset counters; the
// records leave the commit log by retention. Only the metadata change is
// made under the exclusive topic lock: that is what makes the incarnation
// dead, so the wait for the dispatcher runs after the lock, bounded by the
// request's timeout and its connection (REQUEST_TIMED_OUT past them, the
// queues then go at the next delete of the name or the next start), and
// no produce waits behind it. A re-created topic starts at
// offset 0 and never sees the old records, even after a crash. Topics
// created before topic ids (metadata version 1) keep writing the zero
// TopicID (UntaggedRecords), which their older records carry too.
//
// Metadata lives behind the MetadataStore interface (topics, producer id
// blocks), the seam for moving it into a replicated control plane. The file
// implementation keeps it in <data>/metadata, rewritten whole on every change
// (written to metadata.tmp, fsync, rename, fsync of the directory), version 2:
//
//	0   [4]byte Magic    "ULMD"
//	4   uint16  Version  2
//	6   uint32  Length   of the body in bytes
//	10  uint32  CRC32C   Castagnoli, over the body
//	14  body    JSON {"generation": N, "next_producer_id": N,
//	                  "topics": [{"name", "id" (16 bytes), "partitions", "created_ms",
//	                              "untagged_records" (true or absent),
//	                              "configs" ({"name": "value"} or absent),
//	                              "log_starts" ({"partition": offset} or absent)}]}
//
// "configs" and "log_starts" are optional members of version 2, absent in
// the files written before them (which read as topics without either), so
// the version did not change; a build that predates them ignores them,
// and rewrites the file without. Under a control plane the same fields ride
// on the topic's value in the metadata bucket (package ha/controlplane), which is how
// they reach every node.
//
// It is a Prefixed frame of internal/framed, checked in its one order
// (magic, length, CRC, then version) before the body is parsed.
// Version 1 has the same layout without "untagged_records"; it was written
// by builds whose commit-log records carried no topic id, so every topic
// read from it is marked untagged (and written back as version 2). A build
// that knows only version 1 refuses a version 2 file instead of misreading
// the version 2 commit-log records written beside it.
//
// All integers are big-endian. A file failing any check stops Start with
// ErrCorrupt rather than guessing: without it records could not be matched
// to topics.
//
// # Log start
//
// A partition's records live in the shared commit log among every other
// partition's, so moving its log start deletes nothing at once: the start
// is logical. DeleteRecords stores it in the topic's metadata
// (TopicMeta.LogStarts) and from then on every view of the partition
// begins there (visibleBounds): Fetch below it is OFFSET_OUT_OF_RANGE,
// ListOffsets earliest, Fetch and Produce report it as the log start,
// DescribeLogDirs counts the bytes from it. A batch straddling the start
// is served whole from its first offset, as Kafka serves one straddling a
// fetch offset. The bytes are freed with the commit-log file holding
// them, once no partition serves a record from it (see "Retention"). Being metadata, the start is
// durable before DeleteRecords answers and, under a control plane,
// replicated to every node with the topic, so a follower that takes over
// serves from the same start.
//
// # Retention
//
// The commit log deletes its oldest whole files by age (72 hours) and
// size, whatever partitions they hold. A topic's retention.ms and
// retention.bytes are logical on top of that: once a minute the node
// leading a partition moves its log start (as DeleteRecords does, in the
// topic's metadata) past the records stored longer ago than retention.ms
// and past those beyond the partition's last retention.bytes (record
// bytes in the log, counted back from the high watermark, whole batches).
// Consumers then see those records gone, as from a Kafka topic with the
// same configs. A commit-log file holds many partitions' records, so its
// bytes go once no live record needs it: each retention check (once a
// minute) the broker gives the log the position of the oldest record any
// partition still serves (liveStart: the record at each partition's log
// start, the offsets topic left to the group floor, unindexed records to
// the dispatcher's, a partition whose queue cannot be read keeping
// everything), and every whole file before it is deleted however young,
// still never past a floor (a lagging in-sync follower's, for one). Files
// that do hold a live record go by the log's own age and size retention;
// so retention.ms cannot exceed the log's retention (INVALID_CONFIG says
// so), and retention.bytes bounds what a partition serves, not the disk.
// A follower's files go by age and size alone: its leader decides what
// is dead. The time compared is the log's store time of the
// record. retention.bytes reads one consume-queue entry per offset it
// keeps, each minute, which is the cost of a topic with a large one.
//
// # Cluster
//
// Without Config.Cluster the broker is one node, leader of every partition,
// advertised in Metadata as the local address of the client's connection.
// With one (package ha/controlplane behind it, wired by cmd/unilog), Metadata lists the
// live brokers and gives each partition the leader and leader epoch of the
// replica group that owns it (LEADER_NOT_AVAILABLE while none), and
// Produce to a partition this broker does not lead is refused with
// NOT_LEADER_OR_FOLLOWER, so clients find the leader through Metadata.
// Config.Metadata then replaces the metadata file with the control
// plane's store; a topic deleted through another node reaches this one as
// DropTopic, which drops its local queues as a local delete would. With
// Config.Moves a partition moves to another replica group, its records
// copied at the same offsets with its producers' and transactions' state
// (move.go has the steps). A node reaches the others' listeners for
// moves and markers as a client would, with TLS and the nodes' own login
// where they ask for them, which holds Kafka's CLUSTER_ACTION
// (interbroker.go).
//
// # Replication
//
// Config.Replication (ha/replication behind it, wired by cmd/unilog) is
// the data plane of this node's replica group. Consumers see a partition
// only up to its last record that ends at or below the replication high
// watermark (found by a binary search over the consume queue's physical
// offsets): Fetch, ListOffsets latest and the high watermark in answers
// all use that visible end, an offset between it and the stored end is
// not out of range but waits, and a long poll over such a partition wakes
// on Replication.Changed. With Config.SyncReplication an acks=-1 produce,
// and a synchronous offset commit, is first checked against the in-sync
// set (Replication.CheckInSync: too few in sync, and nothing is stored)
// and answered once WaitReplicated says the in-sync followers hold it. A
// produce gets Kafka's answers: NOT_ENOUGH_REPLICAS when refused before
// its append, NOT_ENOUGH_REPLICAS_AFTER_APPEND when the set shrank while
// it waited, NOT_LEADER_OR_FOLLOWER once deposed; an offset commit gets
// the group coordinator's (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR;
// see package group). A follower answers Produce, Fetch
// and ListOffsets with NOT_LEADER_OR_FOLLOWER and FindCoordinator names
// the leader of the group's offsets partition. Demote, on becoming a
// follower, stops local appends and drops the offsets snapshot, which a
// truncation may invalidate; the producer state is rebuilt from the log as
// it is replicated (from the producer-state snapshot on, every 500 ms),
// and the log changes a follower's replication makes go through
// TruncateLog and RestartLog, which take back the state of what they cut
// (see producer_replica.go). Promote, before taking writes again, catches
// the producer state up over the last records and replays the committed
// offsets from the offsets topic, so failover time does not grow with the
// log.
//
// # Security
//
// Config.Security (security.go) adds TLS or mutual TLS to the Kafka and
// admin listeners (certificates loaded by internal/tlsconf), SASL
// (sasl.go; users and mechanisms in package auth) and an ACL applied around
// the handlers (authz.go): denied topics get TOPIC_AUTHORIZATION_FAILED,
// Metadata lists only what the principal may see, and no API exists
// without its authorization rule (register refuses one). Group APIs (authz_group.go)
// need the group permission on each group they name
// (GROUP_AUTHORIZATION_FAILED) and the offset APIs consume permission on
// each topic (TOPIC_AUTHORIZATION_FAILED); ListGroups and OffsetFetch of all
// topics leave out what the principal may not see. The ACL names topics
// and groups, not the cluster: the cluster-wide admin APIs Kafka
// authorizes on its Cluster resource (DescribeLogDirs, altering broker
// configs) ask for admin on every topic, a rule whose pattern matches "*"
// (clusterAdmin), and answer CLUSTER_AUTHORIZATION_FAILED otherwise.
// DeleteRecords and altering a topic's configs need admin on the topic;
// OffsetForLeaderEpoch and DescribeProducers a topic the principal can see;
// DescribeCluster is open, as Metadata's broker list is. A full disk makes the
// broker read-only until space returns (readonly.go).
//
// # Admin HTTP
//
// Config.Admin serves GET /status (JSON: node_id, replica_group, role,
// epoch, log_end_offset), /healthz ("ok", 503 while closing) and /metrics in
// Prometheus text from the broker's own registry: unilog_requests_total and
// unilog_request_duration_seconds by API (decoded to response encoded: the
// long poll in, the socket write out), network and produced/fetched byte
// counters, unilog_produced_records_total, unilog_connections,
// unilog_commitlog_bytes, unilog_dispatcher_lag_bytes and _seconds,
// unilog_read_only, unilog_sasl_authentications_total,
// unilog_authorization_denials_total, unilog_inflight_request_bytes,
// unilog_requests_waiting_for_memory, per group unilog_group_members,
// _generation, _rebalances_total and unilog_group_lag_records (end offset
// minus committed offset, summed over the group's committed partitions),
// unilog_fetch_watchers (partitions registered by parked long polls), plus
// the Go and process collectors. /debug/pprof/ only with Config.AdminPprof;
// with a client CA on Security.AdminTLS all but /healthz need a verified
// client certificate (admin.go).
//
// # Close
//
// Close stops accepting, wakes idle connections, lets each in-flight request
// finish (long polls return early), writes the producer-state snapshot,
// then closes the store, which flushes the log and queues and writes a
// clean checkpoint.
package broker
