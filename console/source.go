package console

import (
	"context"
	"time"
)

// Source is what the console reads. Each method answers for many items in
// one call, so that a page costs one round of requests however many
// partitions the cluster has.
type Source interface {
	// Cluster is the control plane's view: every node and replica group.
	Cluster(ctx context.Context) (Cluster, error)
	// Topics lists the topics named, or every topic without names, with
	// their partition counts (metadata only); a name that is no topic is
	// left out.
	Topics(ctx context.Context, names ...string) ([]Topic, error)
	// Partitions answers the leader, bounds and size of each partition
	// asked for, in the order asked.
	Partitions(ctx context.Context, want []TopicPartitions) ([]Partition, error)
	// Records reads up to q.Limit records of one partition from its leader.
	Records(ctx context.Context, q RecordQuery) ([]Record, error)
	// Groups lists every consumer group with its state (no offsets).
	Groups(ctx context.Context) ([]GroupSummary, error)
	// Describe answers the members, committed offsets and lag of each
	// group named.
	Describe(ctx context.Context, groups []string) ([]Group, error)
}

// Admin is what the console changes, only with Options.Write.
type Admin interface {
	CreateTopic(ctx context.Context, name string, partitions int32) error
	// AddPartitions grows a topic to total partitions.
	AddPartitions(ctx context.Context, topic string, total int32) error
	DeleteTopic(ctx context.Context, name string) error
	// ResetGroup moves a group's committed offsets on topic to "earliest",
	// "latest", an offset or a time, with `unilog group reset`'s rules: it
	// is refused while the group has members.
	ResetGroup(ctx context.Context, group, topic, to string) ([]Reset, error)
	DeleteGroup(ctx context.Context, name string) error
}

// Cluster is every node and replica group as the control plane holds them.
type Cluster struct {
	// Self is the node serving the console.
	Self          int32          `json:"self"`
	Nodes         []Node         `json:"nodes"`
	ReplicaGroups []ReplicaGroup `json:"replica_groups"`
	Disk          Disk           `json:"disk"`
}

// Node is one member of the cluster.
type Node struct {
	ID           int32  `json:"id"`
	ReplicaGroup string `json:"replica_group"`
	Role         string `json:"role"`
	Epoch        uint64 `json:"epoch"`
	Advertise    string `json:"advertise"`
	LogEnd       int64  `json:"log_end"`
	// LagBytes is how far a follower's log end is behind its group
	// leader's, both as last reported; -1 for a leader.
	LagBytes int64 `json:"lag_bytes"`
	// InSync is set on a follower its leader last reported in sync.
	InSync       bool          `json:"in_sync"`
	HeartbeatAge time.Duration `json:"heartbeat_age_ns"`
	// Gone is set once the heartbeat is past the member deadline.
	Gone bool `json:"gone"`
}

// ReplicaGroup is one lease: its holder and epoch.
type ReplicaGroup struct {
	Name string `json:"name"`
	// Leader is the lease holder's node id, -1 once released.
	Leader int32   `json:"leader"`
	Epoch  uint64  `json:"epoch"`
	InSync []int32 `json:"in_sync"`
}

// Disk is the serving node's data directory.
type Disk struct {
	DataDir    string `json:"data_dir"`
	TotalBytes uint64 `json:"total_bytes"`
	FreeBytes  uint64 `json:"free_bytes"`
	// CommitLogBytes is what the commit log holds (unilog_commitlog_bytes).
	CommitLogBytes int64 `json:"commitlog_bytes"`
	// CommitLogFiles is the number of its files (unilog_commitlog_files).
	CommitLogFiles int64 `json:"commitlog_files"`
	// ReadOnly is set while a full disk refuses produce, WriteFailed once
	// a flush failed (both from the broker's gauges).
	ReadOnly    bool `json:"read_only"`
	WriteFailed bool `json:"write_failed"`
}

// Topic is a topic's metadata.
type Topic struct {
	Name       string `json:"name"`
	Partitions int32  `json:"partitions"`
	Internal   bool   `json:"internal"`
}

// TopicPartitions names partitions of one topic.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// Partition is one partition's leader, bounds and size.
type Partition struct {
	Topic       string `json:"topic"`
	ID          int32  `json:"partition"`
	Leader      int32  `json:"leader"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Start       int64  `json:"log_start"`
	End         int64  `json:"log_end"`
	// Bytes is the size of its records, -1 when unknown.
	Bytes int64  `json:"bytes"`
	Err   string `json:"error,omitempty"`
}

// RecordQuery picks records of one partition: from Offset, or when AtMs is
// set, from the first record at or after that unix millisecond.
type RecordQuery struct {
	Topic     string
	Partition int32
	Offset    int64
	AtMs      int64
	Limit     int
}

// Record is one record as stored.
type Record struct {
	Offset    int64     `json:"offset"`
	Timestamp time.Time `json:"timestamp"`
	Key       []byte    `json:"-"`
	Value     []byte    `json:"-"`
	Headers   []Header  `json:"-"`
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// GroupSummary is a group as listed.
type GroupSummary struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Protocol string `json:"protocol_type"`
}

// Group is a described group with its lag.
type Group struct {
	Name    string         `json:"name"`
	State   string         `json:"state"`
	Members []Member       `json:"members"`
	Lag     []PartitionLag `json:"lag"`
	// TotalLag sums the partitions' lag (those with a known lag).
	TotalLag int64  `json:"total_lag"`
	Err      string `json:"error,omitempty"`
}

// Member is one group member and what it is assigned.
type Member struct {
	ID       string             `json:"id"`
	ClientID string             `json:"client_id"`
	Host     string             `json:"host"`
	Assigned map[string][]int32 `json:"assigned"`
}

// PartitionLag is a group's position on one partition; Committed and Lag
// are -1 where nothing was committed.
type PartitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	End       int64  `json:"log_end"`
	Lag       int64  `json:"lag"`
	Member    string `json:"member,omitempty"`
}

// Reset is one partition moved by ResetGroup.
type Reset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Was       int64  `json:"was"`
	Now       int64  `json:"now"`
}
