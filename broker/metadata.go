package broker

import (
	"errors"
	"fmt"
	"maps"

	"github.com/unilog/unilog/store"
)

// TopicMeta is the cluster metadata of one topic.
type TopicMeta struct {
	Name string `json:"name"`
	// ID is the topic id (Kafka's, a random UUID), new for every creation:
	// a topic deleted and created again is another incarnation.
	ID         [16]byte `json:"id"`
	Partitions int32    `json:"partitions"`
	// CreatedMs is the creation time in unix milliseconds.
	CreatedMs int64 `json:"created_ms"`
	// UntaggedRecords marks a topic created before records carried topic
	// ids: its records, old and new, carry the zero TopicID, so that the
	// ones written before the upgrade stay in its partitions.
	UntaggedRecords bool `json:"untagged_records,omitempty"`
	// Configs are the topic's own configs by Kafka name (DescribeConfigs'
	// DYNAMIC_TOPIC_CONFIG); a config not here is the broker's default.
	Configs map[string]string `json:"configs,omitempty"`
	// LogStarts holds the partitions whose log start DeleteRecords moved:
	// their offsets below it are no longer served (see "Log start").
	LogStarts map[int32]int64 `json:"log_starts,omitempty"`
}

// Clone copies t with maps of its own, so an update may change them.
func (t TopicMeta) Clone() TopicMeta {
	t.Configs = maps.Clone(t.Configs)
	t.LogStarts = maps.Clone(t.LogStarts)
	return t
}

// RecordID is the TopicID this topic's commit-log records carry.
func (t TopicMeta) RecordID() store.TopicID {
	if t.UntaggedRecords {
		return store.TopicID{}
	}
	return t.ID
}

// MetadataStore holds the cluster metadata the broker owns: topics and the
// producer id counter. It is the one seam for moving metadata into a
// replicated control plane; every method is safe for concurrent use and a
// mutation returns only once it is durable.
type MetadataStore interface {
	// Topics lists every topic, sorted by name.
	Topics() []TopicMeta
	// Topic returns one topic.
	Topic(name string) (TopicMeta, bool)
	// CreateTopic adds a topic; ErrTopicExists if the name is taken.
	CreateTopic(t TopicMeta) error
	// DeleteTopic removes a topic; ErrUnknownTopic if it does not exist.
	DeleteTopic(name string) error
	// SetPartitions changes a topic's partition count.
	SetPartitions(name string, partitions int32) error
	// UpdateTopic applies update to a copy of the topic and stores the
	// result unless update fails (its error is returned, nothing
	// stored); ErrUnknownTopic if the topic does not exist. Partitions,
	// ID and Name are not update's to change.
	UpdateTopic(name string, update func(*TopicMeta) error) error
	// ReserveProducerIDs durably reserves n producer ids and returns the
	// first; ids are never handed out twice, even across restarts.
	ReserveProducerIDs(n int64) (first int64, err error)
	// Close releases the store.
	Close() error
}

// Metadata store errors.
var (
	ErrTopicExists  = errors.New("broker: topic already exists")
	ErrUnknownTopic = errors.New("broker: unknown topic")
	ErrCorrupt      = errors.New("broker: corrupt metadata")
	ErrClosed       = errors.New("broker: closed")
)

// maxTopicNameLen is 222, not Kafka's 249: a topic's consume queues live
// in a directory named <topic>@<32 hex digits of its id> (see package
// store), and a file name has at most 255 bytes. A longer name made the
// dispatcher fail on the topic's first record and stop indexing every
// partition.
const maxTopicNameLen = 255 - len("@") - 32

// validTopicName applies Kafka's topic name rules.
func validTopicName(name string) error {
	switch {
	case name == "":
		return errors.New("topic name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is not allowed", name)
	case len(name) > maxTopicNameLen:
		return fmt.Errorf("topic name is %d characters, the limit is %d", len(name), maxTopicNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q contains %q; only ASCII alphanumerics, '.', '_' and '-' are allowed", name, c)
		}
	}
	return nil
}
