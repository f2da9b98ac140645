package consumequeue

import (
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/internal/fileops"
)

const (
	// DefaultEntriesPerFile makes a full file 9.6 MB, as big as a RocketMQ
	// consume-queue file holds entries for (300,000).
	DefaultEntriesPerFile = 300_000
	// DefaultMaxMapped keeps a quarter of the default vm.max_map_count
	// (65,530) for the consume queues, leaving the rest to the commit log,
	// the Go runtime and everything else in the process.
	DefaultMaxMapped = 16384
	// DefaultSmallEntries bounds the memory of small queues at 64 entries
	// of 24 bytes: 100,000 partitions that never reach it hold at most
	// 154 MB, and a partition that does gets its files, which a partition
	// written that often amortises.
	DefaultSmallEntries = 64
	// maxEntriesPerFile keeps a full file's size within an int32, so that
	// sizes and slot numbers fit the header fields on every platform.
	maxEntriesPerFile = (1<<31 - HeaderSize) / EntrySize
)

// Options configures a Store.
type Options struct {
	// Dir holds one directory per topic, each holding one directory per
	// partition. Created if missing.
	Dir string
	// EntriesPerFile is the number of entry slots in one file (default
	// DefaultEntriesPerFile). It fixes file names and contents, so it must not
	// change for an existing Dir: files with another value fail to open.
	EntriesPerFile int
	// MaxMapped caps the number of files mapped at once (default
	// DefaultMaxMapped). Files beyond it are unmapped least recently used first.
	MaxMapped int
	// SmallEntries is the number of entries a new queue holds in memory
	// and in the shared journal before it gets files of its own (see
	// "Small queues" in the package doc); default DefaultSmallEntries.
	// Negative: every new queue gets its files at its first entry.
	SmallEntries int
	// PromoteSpread staggers promotions: each queue gets its files at a
	// number of entries between SmallEntries-PromoteSpread and
	// SmallEntries, fixed per queue by a hash of its ID. A producer
	// writing round robin over a new topic fills every queue at the same
	// pace, and promoting 10,000 queues in one pass held the appender
	// (the dispatcher, which every produce waits on) for 1.8 s; spread
	// over PromoteSpread+1 passes, each pass carries a share of them.
	// Default SmallEntries/2; negative: every queue at SmallEntries.
	PromoteSpread int
	// Logger receives rare, structural events (damaged files removed, files
	// deleted). Default: logrus.StandardLogger().
	Logger logrus.FieldLogger

	// compactAt is the journal size a compaction needs (default
	// defaultCompactAt); tests lower it.
	compactAt int64
	// FS makes the calls that decide durability (default fileops.OS);
	// tests set it to inject failures or record what a power cut keeps.
	FS FileOps
}

func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, fmt.Errorf("consumequeue: options: Dir is required")
	}
	if o.EntriesPerFile == 0 {
		o.EntriesPerFile = DefaultEntriesPerFile
	}
	if o.EntriesPerFile < 1 || o.EntriesPerFile > maxEntriesPerFile {
		return o, fmt.Errorf("consumequeue: options: EntriesPerFile %d outside [1, %d]", o.EntriesPerFile, maxEntriesPerFile)
	}
	if o.MaxMapped == 0 {
		o.MaxMapped = DefaultMaxMapped
	}
	if o.MaxMapped < 1 {
		return o, fmt.Errorf("consumequeue: options: MaxMapped %d must be positive", o.MaxMapped)
	}
	if o.SmallEntries == 0 {
		o.SmallEntries = DefaultSmallEntries
	}
	// Negative stays negative, so that options already defaulted (a store
	// reopened with s.opts) keep their meaning.
	if o.PromoteSpread == 0 {
		o.PromoteSpread = o.SmallEntries / 2
	}
	o.PromoteSpread = min(o.PromoteSpread, o.SmallEntries-1)
	if o.compactAt == 0 {
		o.compactAt = defaultCompactAt
	}
	if o.Logger == nil {
		o.Logger = logrus.StandardLogger()
	}
	if o.FS == nil {
		o.FS = fileops.OS{}
	}
	return o, nil
}
