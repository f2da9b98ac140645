// Package producerstate holds what a broker knows of its idempotent
// producers, beside the log it describes (as Kafka's ProducerStateManager
// lives in its log layer): the producer ids handed out, each producer's
// recent batches per partition, and the snapshot file that lets a restart
// rebuild that state without reading the whole log. The broker decides
// when to check, record, snapshot and replay; this package holds the rules
// and the format, and knows nothing of the network.
//
// # Sequences
//
// Per partition and producer the last DedupWindow (5) batches are kept:
// first and last sequence, base offset, and the physical end of the stored
// record. Check follows Kafka: a batch equal to one of them is a duplicate
// (answered with the original, once the original is as durable as the
// acks level asks: the broker waits on its end); a newer epoch must start
// at sequence 0; otherwise the first sequence must follow the last batch
// (ErrOutOfOrderSequence); an older epoch is ErrInvalidEpoch. A producer
// with no history is accepted. After math.MaxInt32 a sequence goes on
// from 0, as Kafka counts.
//
// # Producer ids
//
// IDs hands out ids from blocks of 1000 reserved durably in the cluster
// metadata, so an id is never reused after a restart (that would confuse
// sequence state rebuilt from the log).
//
// # Transactions
//
// A partition also tracks its producers' transactions: Open holds, per
// producer with a transaction open here, the offset of the transaction's
// first batch (the last stable offset stops at the oldest of them), and
// Aborted is the aborted-transaction index read_committed fetches are
// answered with (producer id, first offset, the abort marker's offset). A
// transactional batch opens its producer's transaction if none is open;
// a commit or abort marker (the broker's control batch) closes it, an abort
// adding it to the index. Both are rebuilt like the sequences: from the
// snapshot, then the batches and markers stored after it; the index drops
// what retention or DeleteRecords cut below the log start.
//
// # Snapshot file, version 3
//
// <data>/producer-state (FileName) holds the state as of a commit-log
// position, so a start rebuilds it exactly from the snapshot plus the
// idempotent batches stored after it (stored batches carry producer id,
// epoch and first sequence), however long a producer was idle. All
// integers big-endian, a Sealed frame of internal/framed (checked magic,
// CRC, then version before any field is read):
//
//	0   uint32 Magic       0x55505354 ("UPST")
//	4   uint16 Version     3
//	6   uint16 Reserved    0
//	8   int64  LogOffset   every idempotent batch stored below it is in the snapshot
//	16  uint32 Partitions, then per partition:
//	      uint16 topic length, topic, [16]byte topic id (the incarnation's
//	      commitlog.TopicID), int32 partition, uint32 producers,
//	      then per producer: int64 id, int16 epoch, uint8 batches (1..5),
//	      then per batch, oldest first: int32 first sequence,
//	      int32 last sequence, int64 base offset, int64 physical end,
//	      then (version 3) uint32 open transactions, each int64 producer id,
//	      int64 first offset (in producer order; older builds wrote a map's); uint32 aborted transactions, each int64
//	      producer id, int64 first offset, int64 marker offset
//	end uint32 CRC32C      Castagnoli, over every byte before it
//
// A broker writes the snapshot with an Encoder from its live state,
// partition by partition under each partition's lock; a partition keeps
// its state's encoding until the state changes, so a snapshot re-encodes
// only the partitions changed since the last one (the file is still
// rewritten whole: it has one CRC).
//
// Version 1 had no topic id; it is read (Snapshot.Version says which),
// and TellsIncarnations says whether its entries can be trusted. Version
// 2 had no transactions; it is read as a partition without any (it was
// written before the broker accepted transactional batches).
package producerstate
