package commitlog

import (
	"fmt"
	"os"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/internal/fileops"
)

// FlushMode says when appended records are made durable.
type FlushMode int

const (
	// FlushAsync fdatasyncs every FlushInterval and on Close. WaitDurable still
	// works: it asks for an immediate flush and waits for it.
	FlushAsync FlushMode = iota
	// FlushSync fdatasyncs as soon as records are appended, back to back: every
	// append made while a flush is running is covered by the next one, so
	// concurrent WaitDurable callers share one fdatasync (group commit).
	FlushSync
)

// String returns "async" or "sync".
func (m FlushMode) String() string {
	switch m {
	case FlushAsync:
		return "async"
	case FlushSync:
		return "sync"
	}
	return fmt.Sprintf("FlushMode(%d)", int(m))
}

// ParseFlushMode parses "async" or "sync".
func ParseFlushMode(s string) (FlushMode, error) {
	switch s {
	case "async":
		return FlushAsync, nil
	case "sync":
		return FlushSync, nil
	}
	return 0, fmt.Errorf("commitlog: unknown flush mode %q (want async or sync)", s)
}

// Defaults applied by Open to zero fields of Options.
const (
	DefaultFileSize               = 1 << 30
	DefaultFlushInterval          = 500 * time.Millisecond
	DefaultRetentionAge           = 72 * time.Hour
	DefaultCacheWindow            = 256 << 20
	DefaultRetentionCheckInterval = time.Minute
	// DefaultMaxRecordSize caps MaxRecordSize when it is left zero; the
	// default is min(FileSize/2, DefaultMaxRecordSize).
	DefaultMaxRecordSize = 64 << 20
)

// Options configure a Log. Zero values mean the documented default.
type Options struct {
	// Dir holds the log files. It is created if missing.
	Dir string
	// FileSize is the size of every new file (default 1 GiB). It must be a
	// multiple of the page size. Existing files keep the size they have.
	FileSize int64
	// FlushMode is FlushAsync (default) or FlushSync.
	FlushMode FlushMode
	// FlushInterval is the period of the background flush (default 500ms).
	FlushInterval time.Duration
	// RetentionAge deletes whole files whose newest record is older than
	// this (default 72h; negative disables).
	RetentionAge time.Duration
	// RetentionBytes caps the total size of the files (0 = no cap). The
	// file being written is never deleted, so the log may exceed the cap by
	// up to one file, and by more while a retention floor
	// (AddRetentionFloor) holds older files.
	RetentionBytes int64
	// RetentionCheckInterval is how often retention runs (default 1 min).
	RetentionCheckInterval time.Duration
	// MaxRecordSize is the largest encoded record accepted (default
	// min(FileSize/2, 64 MiB); at most FileSize).
	MaxRecordSize int
	// Flushed is the physical offset before which the previous run had made
	// the log durable, as recorded by the caller (the dispatcher's
	// checkpoint). Recover holds the log to the larger of it and the log's
	// own flushed-mark file: it cuts a torn tail at or after that mark and
	// refuses to cut before it (ErrDamaged); see Recover.
	Flushed int64
	// CacheWindow is how many bytes before FlushedOffset the log leaves
	// in the page cache; after each flush it drops the older pages, so a
	// log written at disk speed recycles pages instead of growing the
	// cache (cache.go). Default 256 MiB; negative leaves every page to the
	// kernel.
	CacheWindow int64
	// RecoverTruncate lets Recover cut the log at damage before the mark,
	// losing the records from there on, instead of refusing to open. It is
	// the operator's explicit choice after a refusal.
	RecoverTruncate bool
	// Logger receives structured events (file rolls, retention, recovery).
	// Nothing is logged on the append path. Default: logrus.StandardLogger().
	Logger logrus.FieldLogger

	// FS makes the calls that decide durability (default fileops.OS);
	// tests set it to inject failures or record what a power cut keeps.
	FS FileOps
}

func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, fmt.Errorf("commitlog: options: Dir is empty")
	}
	if o.FileSize == 0 {
		o.FileSize = DefaultFileSize
	}
	page := int64(os.Getpagesize())
	if o.FileSize < page || o.FileSize%page != 0 {
		return o, fmt.Errorf("commitlog: options: FileSize %d is not a positive multiple of the page size %d", o.FileSize, page)
	}
	if o.FlushMode != FlushAsync && o.FlushMode != FlushSync {
		return o, fmt.Errorf("commitlog: options: unknown %v", o.FlushMode)
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.RetentionAge == 0 {
		o.RetentionAge = DefaultRetentionAge
	}
	if o.CacheWindow == 0 {
		o.CacheWindow = DefaultCacheWindow
	}
	if o.RetentionBytes < 0 {
		return o, fmt.Errorf("commitlog: options: negative RetentionBytes %d", o.RetentionBytes)
	}
	if o.RetentionCheckInterval <= 0 {
		o.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if o.Flushed < 0 {
		return o, fmt.Errorf("commitlog: options: negative Flushed %d", o.Flushed)
	}
	if o.MaxRecordSize == 0 {
		o.MaxRecordSize = int(min(o.FileSize/2, DefaultMaxRecordSize))
	}
	if o.MaxRecordSize < MinRecordSize || int64(o.MaxRecordSize) > o.FileSize {
		return o, fmt.Errorf("commitlog: options: MaxRecordSize %d outside [%d, FileSize %d]", o.MaxRecordSize, MinRecordSize, o.FileSize)
	}
	if o.Logger == nil {
		o.Logger = logrus.StandardLogger()
	}
	if o.FS == nil {
		o.FS = fileops.OS{}
	}
	return o, nil
}
