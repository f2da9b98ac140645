package commitlog

// PartitionOffset is the next queue offset of one partition of one topic
// incarnation at some position of the log: what Append would assign the
// partition's next record there. A replication leader sends every
// partition's, as of its first offset, to a follower that starts its log
// again there (package ha/replication), so partitions none of whose
// records remain keep their offsets.
type PartitionOffset struct {
	Topic     string
	TopicID   TopicID
	Partition int32
	Next      int64
}
