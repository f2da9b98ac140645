// Package controlplane is unilog's control plane: which nodes are alive, which node
// leads each replica group and under which epoch, and the cluster metadata
// (topics, their partitions and the replica group owning each). It keeps
// all of it in NATS JetStream key-value buckets, an existing replicated
// engine, instead of a home-made consensus.
//
// # NATS
//
// A broker embeds a NATS server with JetStream by default (StartServer),
// its store under the data directory, so one node needs nothing else.
// Embedded servers given the same nats-route:// list form one JetStream
// cluster, whose buckets then have 3 replicas; a broker can instead join an
// external NATS (Dial: URLs, credentials file or nkey seed). An embedded
// server given a Secret (a broker always gives one) admits only clients
// that sign in with the nkey derived from it and routes that present the
// password derived from it: the nodes of a cluster share one secret file
// (created with mode 0600 by the first node to start), and each use of it
// derives its own key by HMAC, so none reveals the secret or another. The embedded
// server fsyncs every JetStream write: leases and metadata must survive a
// power cut as the commit log does. An external NATS must be configured so
// (sync_interval: always) for the same promise.
//
// # Buckets, keys and values
//
// Every value is framed: one version byte (1), the CRC32C (Castagnoli) of
// the body as 4 big-endian bytes, then the body as JSON. A reader refuses
// another version or a bad CRC with ErrCorrupt and never overwrites what
// it cannot read. Version 1 bodies:
//
//	unilog_members  node.<node id>    {"node_id", "advertise", "replication_addr",
//	                                   "replica_group", "role", "epoch",
//	                                   "log_end_offset", "in_sync" (a leader's
//	                                   in-sync follower ids), "heartbeat_ms"}
//	unilog_leases   lease.<group>     {"group", "holder", "epoch", "duration_ms",
//	                                   "released"}
//	unilog_meta     topic.<name>      {"name", "id" (16 numbers, the topic id),
//	                                   "partitions", "created_ms",
//	                                   "groups": [group of partition 0, 1, ...],
//	                                   "untagged_records",
//	                                   "moves": {"<partition>": {"to", "started_ms",
//	                                   "fenced", "end", "copied", "source_end",
//	                                   "source_epoch"}},
//	                                   "epochs": {"<partition>": {"base", "first",
//	                                   "since"}}}
//	                producer_ids      {"next"}
//
// <name> is the topic name in unpadded base64url: Kafka allows '.'
// anywhere in a name, where a key may only use it between tokens. Replica
// group names are one key token (letters, digits, '-', '_').
//
// The members bucket has a TTL (20 member deadlines) only to clean up
// nodes that never come back. The leases and metadata buckets have none:
// an epoch must never be forgotten.
//
// # Membership
//
// Each node rewrites its member key every heartbeat interval and watches
// the bucket. A member is live while its last write was seen less than the
// member deadline ago on the watcher's own clock; a clean shutdown deletes
// the key so others see the node leave at once.
//
// # Leases and epochs
//
// Each replica group has one lease key. A node takes the lease with a
// compare-and-set on the revision it read (create when absent), writing
// its node id and an epoch one above the highest it has seen; the holder
// renews it with a compare-and-set on its own last revision every retry
// period. A lease is never released by a key vanishing: a NATS KV per-key
// TTL covers only the write that carried it and an update carries none
// (nats-server#6959). Instead the value carries its duration, and a
// contender judges expiry from the revision: it takes over only once the
// same revision has stood unchanged for that duration on its own clock,
// dated from the moment its watch of the key delivered the revision (or
// its own read, if earlier), and a timer makes it contend the moment that
// duration has passed, so a failover takes a lease, not a lease plus up
// to two retry periods. A clean shutdown writes the lease back as
// released (epoch kept), and the watch makes a follower take it at once;
// a leader that stops first hands over (replication.Role.HandOver): it
// stops taking writes, waits for an in-sync follower to reach its log
// end, publishes its in-sync set and resigns (Elector.Resign: released,
// and never contended for again by this node).
//
// Epochs never go back on a node. It keeps two marks in its data
// directory (EpochFile, lease.epoch: version 1, CRC32C, JSON {"seen",
// "reserved"}, replaced atomically), loaded at start: the highest epoch it
// has acted on, following or leading, stored before it acts; and the
// highest it has tried to write, stored before the write (whose answer
// may be lost after it was applied), so its next lease is above both. A
// damaged file stops the start (ErrCorrupt) rather than trust the bucket.
// A read
// is ignored when it brings an older revision than one already seen and no
// newer epoch (a lagging replica answered: following it would take the
// node back to a deposed leader), and a lease below the epoch acted on (a
// key forged or deleted by something that is not a node, or a wiped
// store) is never followed: it stands until it lapses, then the next lease
// is above both. Failed reads and ignored ones are counted
// (Elector.ReadStats), failed reads logged at info at most every 10s.
//
// Only the cluster's nodes can write the buckets: the embedded server
// admits only clients and routes that hold the cluster secret (Secret,
// LoadSecret; see "NATS"). A node follows only the replication address a
// member record of its own replica group advertises, and the replication
// stream itself authenticates both ends with the same secret.
//
// The holder stops acting as leader (LeaseConfig.OnChange, and Leading
// turns false) RenewDeadline after it SENT its last successful renewal.
// The timing argument, with d = lease duration and r = renew deadline:
// a renewal is stored after it is sent, and a contender can only see that
// revision after it is stored, so in real time
//
//	holder sends renewal at s  <=  contender first sees the revision at o
//	holder stops acting at s + r
//	contender takes over at >= o + d  >=  s + d
//
// and the holder steps down at least d - r before anyone else can lead.
// Only elapsed time on one clock is used on each side, so clock offsets
// between nodes do not matter; the margin d - r (at least d/10, enforced
// by ErrLeaseTiming; 0.5s with the defaults 1.5s and 1s) absorbs clock rate
// drift and the time the step-down callback takes. A renewal that meets a
// newer revision (another node took the lease) steps down at once.
//
// The buckets stay writable through the loss of one of three NATS servers,
// but each bucket whose stream leader was on it stalls while its
// replicas elect a new one. nats-server waits 4 to 9 s (compiled in)
// before it elects; an embedded routed server runs on faster Raft timers
// (raftimers.go: an election 0.5 to 1 s after the last heartbeat), so a
// broker's crash, which takes its server along, costs about a second of
// such a stall; and a node that takes its group's lease moves the members'
// and leases' streams to its own server (streamleaders.go), so that only
// its own crash, whose lease lapses meanwhile anyway, stalls them. A
// follower's Metadata answer for its own group comes from its elector's
// reads when they are newer than its leases watch, which stays quiet for
// 10 to 20 s when the server holding its consumer died. A leader whose
// renewals stall longer than its renew
// deadline steps down and, still holding the newest lease, takes it back
// with the next epoch once the bucket answers: safe, at the cost of a
// pause in writes. An external NATS keeps its own timers: there a
// stream's election stalls a lease for seconds, so it belongs outside the
// brokers' failure domain.
//
// # Metadata
//
// Metadata keeps a local copy of the topics fed by a watch on the bucket,
// so reads never leave the process and every node sees each change
// without polling (OnChange). Mutations are compare-and-set on the key's
// revision and return once JetStream has stored them; the producer id
// counter is a compare-and-set counter, so two nodes never hand out the
// same id. New partitions are placed round robin over the replica groups
// of the live members.
//
// # Partition moves
//
// A partition moves to another replica group in four compare-and-sets on
// its topic's key, so every node sees each step in order on its watch:
// StartMove adds Moves[p] (end -1); the target group's leader copies the
// partition's records from the source group's leader at the same offsets
// and, once caught up, sets fenced; the source group's leader then stops
// taking produce for p, waits for the appends it already took to be
// replicated, and sets end to the partition's next offset; the target
// copies up to end and FinishMove sets Groups[p] to the target and drops
// the move in one write. Only the last changes who leads p, so a reader
// never sees two owners; a move is cancelled (CancelMove) only before
// fenced, after which the source takes no produce and only finishing
// gives p a leader that does. Copied and source_end are the target's
// progress reports. The copying is the broker's (package broker, move.go).
// Two reads there must not rest on a lagging watch, and wait for it to
// deliver the bucket's last revision as the stream leader reports it, or
// read the bucket afresh if the watch stalls (CatchUp): a node that just took its group's lease catches up with the
// metadata before it takes writes, so it sees every fence stored before
// its lease, and the target reads the source group's lease so before it
// switches (Node.LeaseEpoch), so it sees every leader elected since end.
//
// A partition's leader epoch, as Kafka clients see it, is its group's
// lease epoch plus epochs[p].base: at the switch the base is set so that
// the target's first epoch (first) is above the last the source reported
// (source_epoch, recorded with end, or newer if the source failed over
// since), and clients that check epochs follow the new leader instead of
// taking it for stale metadata. Epochs below first are the source's, which
// ended at since, the offset where the partition switched.
//
// # For the data plane
//
// Elector is the replica group API the replica role (replication.Role)
// and the broker use:
// State gives the role, the epoch and the leader; Leading(epoch) is the
// check a write path makes before accepting under an epoch; Eligible gates
// who may contend (an out-of-sync follower must not); Member carries the
// replication address and log end offset followers and leaders need, and a
// leader's in-sync set (Node.SetInSync, published with every heartbeat and
// at once on Announce; Node.PublishInSync stores a given set and returns
// once it is stored, which a leader waits for before a shrink takes
// effect). Writes of a node's own record are serialised, so an older
// heartbeat never overwrites a newer published set. Node.Member returns a node's last record even once
// it stopped heartbeating, so the followers of a dead leader still know
// which of them were in sync with it.
package controlplane
