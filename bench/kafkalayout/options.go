package kafkalayout

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// FlushMode is when appended data is forced to disk.
type FlushMode int

const (
	// FlushNone leaves write-back to the kernel, Kafka's default.
	FlushNone FlushMode = iota
	// FlushInterval fsyncs every partition written since its last flush once
	// per Options.FlushInterval (log.flush.interval.ms).
	FlushInterval
	// FlushSync fsyncs after every append batch (flush.messages=1).
	FlushSync
)

// Defaults, Kafka's.
const (
	DefaultSegmentBytes       = 1 << 30  // segment.bytes
	DefaultIndexIntervalBytes = 4096     // index.interval.bytes
	DefaultMaxIndexSize       = 10 << 20 // segment.index.bytes
	DefaultFlushInterval      = time.Second
)

// Options configures a Log. Zero values take Kafka's defaults.
type Options struct {
	Dir                string
	SegmentBytes       int64
	IndexIntervalBytes int
	MaxIndexSize       int
	Flush              FlushMode
	FlushInterval      time.Duration
	// RandomIndexAccess advises the kernel (MADV_RANDOM) that index mappings
	// are accessed randomly, which stops page faults on the sparse,
	// preallocated index files from reading around them. Kafka does not do
	// this; it exists to measure what that read-around costs.
	RandomIndexAccess bool
}

// Sentinel errors.
var (
	ErrClosed      = errors.New("kafkalayout: log closed")
	ErrOutOfRange  = errors.New("kafkalayout: offset out of range")
	ErrNoPartition = errors.New("kafkalayout: no such partition")
)

func (o *Options) setDefaults() error {
	if o.Dir == "" {
		return errors.New("kafkalayout: Options.Dir is empty")
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.IndexIntervalBytes == 0 {
		o.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if o.MaxIndexSize == 0 {
		o.MaxIndexSize = DefaultMaxIndexSize
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	// Positions in the .index are int32, which is why segment.bytes is an int.
	if o.SegmentBytes < 0 || o.SegmentBytes > math.MaxInt32 {
		return fmt.Errorf("kafkalayout: SegmentBytes %d outside 1..%d", o.SegmentBytes, math.MaxInt32)
	}
	if o.MaxIndexSize < 2*timeEntrySize {
		return fmt.Errorf("kafkalayout: MaxIndexSize %d below %d", o.MaxIndexSize, 2*timeEntrySize)
	}
	if o.FlushInterval < 0 || o.IndexIntervalBytes < 0 {
		return errors.New("kafkalayout: negative FlushInterval or IndexIntervalBytes")
	}
	return nil
}
