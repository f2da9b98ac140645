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
	// DefaultSmallEntries is the point past which a queue gets its files
	// once the small queues together hold DefaultSmallBudget: 100,000
	// partitions short of it hold at most 154 MB of entries of 24 bytes.
	DefaultSmallEntries = 64
	// DefaultSmallEntriesMax is the point past which a queue gets its
	// files whatever the budget. A queue's directory and first file cost
	// 150-500 µs of CPU on the machine of docs/BENCHMARKS.md (two
	// inodes on ext4), which a queue of 64 entries pays at 2.3-7.8 µs an
	// entry and one of 4,096 at 0.04-0.12 (see "Small queues" in the
	// package doc).
	DefaultSmallEntriesMax = 4096
	// DefaultSmallBudget is the journal bytes (41 an entry, what a
	// compaction would write) the small queues may hold before queues
	// past SmallEntries get their files: 32 MiB is about 800,000 entries,
	// 20 MB of them in memory, and bounds what a compaction copies under
	// the journal's lock and a restart replays.
	DefaultSmallBudget = 32 << 20
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
	// and in the shared journal before it may get files of its own (see
	// "Small queues" in the package doc): it does past SmallEntries while
	// the small queues hold more than SmallBudget, and past
	// SmallEntriesMax in any case. Default DefaultSmallEntries. Negative:
	// every new queue gets its files at its first entry.
	SmallEntries int
	// SmallEntriesMax is the number of entries past which a queue gets its
	// files however little the small queues hold. Default
	// DefaultSmallEntriesMax when SmallEntries is defaulted too, else
	// SmallEntries (a store given only SmallEntries promotes there, as
	// before SmallEntriesMax existed). At least SmallEntries.
	SmallEntriesMax int
	// SmallBudget is the size of the journal records of the small queues
	// (what a compaction would write, 41 bytes an entry) above which
	// queues past SmallEntries get their files. Default DefaultSmallBudget.
	SmallBudget int64
	// PromoteSpread staggers promotions: each queue gets its files at a
	// number of entries between SmallEntries-PromoteSpread and
	// SmallEntries, and likewise between SmallEntriesMax less the same
	// share of it and SmallEntriesMax, fixed per queue by a hash of its
	// ID. A producer
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
		if o.SmallEntriesMax == 0 {
			o.SmallEntriesMax = DefaultSmallEntriesMax
		}
	}
	if o.SmallEntriesMax == 0 {
		o.SmallEntriesMax = o.SmallEntries
	}
	if o.SmallEntries > 0 && o.SmallEntriesMax < o.SmallEntries {
		return o, fmt.Errorf("consumequeue: options: SmallEntriesMax %d below SmallEntries %d", o.SmallEntriesMax, o.SmallEntries)
	}
	if o.SmallBudget == 0 {
		o.SmallBudget = DefaultSmallBudget
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
