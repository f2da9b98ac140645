package bench

import (
	"fmt"

	"github.com/unilog/unilog/commitlog"
)

// Topic is the one topic every benchmark run writes.
const Topic = "bench"

// Layout is a storage layout under test. Both implementations store the same
// commitlog record bytes for the same messages, so that a run compares only
// where the bytes go.
type Layout interface {
	// Prepare creates partitions 0..n-1, as creating the topic would; it is
	// not timed.
	Prepare(partitions int) error
	// Append stores ms, all for one partition, as one batch and returns when
	// the layout's flush policy is satisfied.
	Append(partition int32, ms []commitlog.Message) error
	// Read calls fn with the records of a partition from offset on, up to
	// about maxBytes, and returns the offset after the last one delivered.
	Read(partition int32, offset int64, maxBytes int, fn func(*commitlog.Record) error) (int64, error)
	// EndOffset is the next offset the partition will assign.
	EndOffset(partition int32) (int64, error)
	// Flush makes everything appended durable and readable.
	Flush() error
	Close() error
}

// LayoutConfig is what both layouts are opened with.
type LayoutConfig struct {
	Dir          string
	Flush        Flush
	SegmentBytes int64 // Kafka segment.bytes and unilog file size; default 1 GiB
}

// Layouts are the names OpenLayout accepts. kafka-madv is the Kafka layout
// with MADV_RANDOM on its index mappings, which Kafka does not do: it isolates
// the cost of the kernel's read-around on the sparse preallocated indexes.
var Layouts = []string{"unified", "kafka", "kafka-madv"}

// OpenLayout opens (or reopens) the named layout in cfg.Dir.
func OpenLayout(name string, cfg LayoutConfig) (Layout, error) {
	if cfg.SegmentBytes == 0 {
		cfg.SegmentBytes = 1 << 30
	}
	switch name {
	case "unified":
		return openUnified(cfg)
	case "kafka":
		return openKafka(cfg, false)
	case "kafka-madv":
		return openKafka(cfg, true)
	}
	return nil, fmt.Errorf("bench: unknown layout %q (want unified, kafka or kafka-madv)", name)
}
