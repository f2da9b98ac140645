// Package txn is unilog's transaction coordinator: Kafka's exactly-once
// protocol (KIP-98) for transactional producers. InitProducerId with a
// transactional id, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit,
// EndTxn, DescribeTransactions and ListTransactions are answered here; the
// broker writes what the coordinator decides into its commit log.
//
// # Design
//
// Each transactional id has one state (Txn) and a lock serializing its
// requests. Every change is stored before it is answered, as one record of
// the transaction-state topic (the broker's __transaction_state, in
// partition PartitionFor(id)), holding the id's whole state: so the last
// record of an id is its state, and Open rebuilds every id by replaying
// the topic. A change the log refused leaves the state as it was.
//
// InitProducerId gives a new id a producer id and epoch 0, and every later
// producer of the id the next epoch, which fences the earlier ones: their
// requests are answered PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before
// KIP-588's versions). An Ongoing transaction is aborted first, under a
// bumped epoch. A producer re-initializing with its own id and epoch
// (KIP-360) keeps its id. Past epoch 32766 the id gets a new producer id.
//
// Produce checks every transactional batch with Writer before storing it
// (KIP-890's verification, without its round trip: the coordinator is in
// the broker's process): the batch's producer id and epoch must be the
// id's, and its partition one of the Ongoing transaction's. A transaction
// being ended closes its writes before its markers are appended, and the
// broker checks under the lock the markers' append takes, so no batch of a
// transaction is ever stored after its partition's marker: such a batch
// would open a transaction nobody ends, holding the partition's last
// stable offset forever.
//
// Offsets a transaction commits (TxnOffsetCommit, from v3 checked against
// the group's member and generation as an OffsetCommit is) are kept in the
// transaction's state, not given to the group: the group sees them only
// when the transaction commits, and never when it aborts.
//
// A transaction not ended within its timeout (transaction.timeout.ms, at
// most Options.MaxTimeout) is aborted by a scan every second, under a
// bumped epoch so the producer still writing is fenced; its own abort of
// that transaction is still answered as success, and it may
// re-initialize with the epoch it had.
//
// # Ending a transaction, and a crash in the middle
//
// EndTxn stores the decision (state PrepareCommit or PrepareAbort) and a
// marker for every partition of the transaction (a control batch: commit
// or abort, producer id and epoch) in ONE append to the unified log: the
// decision record first, then every partition's marker (Log.Append with
// Markers; partitions of other replica groups are below). Then the
// offsets of a commit are committed to their groups, then the
// CompleteCommit or CompleteAbort record is appended, and only then is
// EndTxn answered.
//
// A crash may cut that sequence anywhere. The commit log's recovery keeps
// a prefix of its records, so:
//
//   - Without the decision record, none of the markers survived either:
//     the transaction is Ongoing after the restart, unanswered; the
//     producer's retried EndTxn ends it, or its timeout aborts it. (A
//     running coordinator whose decision append failed keeps the decision
//     all the same, since part of it may be stored, and carries it out.)
//   - With the decision record but not the Complete one (some or all of
//     the markers, the offsets perhaps committed), the id is Prepare
//     after Open, and the coordinator's scan (every second, the first a
//     second after Open; or a request for the id, whichever is first)
//     carries the decision out again: every marker appended again (but
//     those this process itself stored), the offsets committed again,
//     then the Complete record. Until then the
//     partitions' last stable offset stays before the transaction. A
//     second marker in a partition where the producer has no open
//     transaction changes nothing there (package producerstate), and
//     committing the same offsets twice is the same commit, so the
//     transaction ends whole: read_committed consumers see all of it or
//     none of it. The same happens when only the append of the Complete
//     record failed. Open itself appends nothing, so a node that opens
//     its coordinator while following writes nothing to its leader's log.
//
// # Replica groups
//
// The coordinator of an id is the broker leading its transaction-state
// partition. A transaction may span partitions other replica groups lead,
// which the coordinator's log does not hold: EndTxn appends the decision
// and the markers of its own group's partitions in one append, as above,
// then writes the other partitions' markers through their leaders
// (Options.Remote: the broker sends Kafka's WriteTxnMarkers, retrying
// with backoff and following leader changes until every leader has
// stored its markers as an acks=-1 produce), and only then commits the
// offsets and appends the Complete record. So the decision is atomic in
// the coordinator's log, and every partition's marker is stored before
// the transaction is complete; a consumer of another group's partition
// sees the transaction once its own marker is there, as in Kafka. A
// crash or a failed send leaves the id Prepare, and the scan (or the
// next request for the id) carries the decision out again: the local
// markers once more after Open, the remote ones every time, a second
// marker being harmless. The other groups' leaders take the producer's
// batches without asking the coordinator (Kafka before KIP-890; the
// broker's txn_produce.go says what that leaves open).
//
// Within a group the state replicates with the log, and a promoted
// follower opens a coordinator from it.
//
// # Retention
//
// The commit log deletes whole files from the front. RetentionFloor
// (wired into the log's retention floor) keeps every file holding the
// record of an id's current state, and Compact, run every minute by the
// broker, rewrites at the head of the log the states whose records are in
// the oldest file, so the floor moves on: the log keeps every id's state,
// not its history. After Open the states' places are not known and the
// floor holds the whole log until Compact's first pass has rewritten
// them. An id whose last transaction ended more than
// Options.IDExpiration ago (Kafka's transactional.id.expiration.ms, 7 days)
// is forgotten: a tombstone record (key, null value), and the scan drops
// it; a producer coming back with it gets a new producer id.
//
// # Record format
//
// The key is Kafka's __transaction_state key; the value is unilog's own
// (version 1), as it carries the groups and pending offsets Kafka keeps
// elsewhere. Integers are big-endian; a string is a uint16 length and its
// bytes. Integrity comes from the record batch's CRC32C and the commit-log
// record's CRC around it; a record whose fields do not end exactly with it
// is ErrCorrupt and stops Open.
//
//	key, version 0                  value, version 1
//	  int16  version = 0              int16  version = 1
//	  string transactional id         int64  producer id
//	                                  int16  epoch
//	                                  int16  previous epoch (-1: none)
//	                                  int32  timeout ms
//	                                  int8   state (State)
//	                                  int64  start, unix ms
//	                                  int64  last update, unix ms
//	                                  uint32 N, N × {string topic, int32 partition}
//	                                  uint32 G, G × string group
//	                                  uint32 O, O × {string group, string topic,
//	                                          int32 partition, int64 offset,
//	                                          int32 leader epoch, string metadata}
//
// The scripts in testdata/ show the state machine step by step
// (TestScripts).
package txn
