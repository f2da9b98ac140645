package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/store"
)

// unified is unilog's layout: one commit log for every partition, indexed by
// per-partition consume queues that the dispatcher builds behind the writer.
type unified struct {
	d         *store.Store
	sync      bool
	positions sync.Pool // *[]commitlog.Position, one per concurrent appender
}

func openUnified(cfg LayoutConfig) (Layout, error) {
	logger := logrus.New()
	logger.SetOutput(os.Stderr)
	logger.SetLevel(logrus.WarnLevel)
	clog := commitlog.Options{FileSize: cfg.SegmentBytes, RetentionAge: -1, Logger: logger}
	switch cfg.Flush.Mode {
	case "none":
		// No flush at all while running: write-back is the kernel's, as
		// with Kafka's default. Close still flushes.
		clog.FlushMode, clog.FlushInterval = commitlog.FlushAsync, time.Duration(math.MaxInt64)
	case "interval":
		clog.FlushMode, clog.FlushInterval = commitlog.FlushAsync, cfg.Flush.Interval
	case "sync":
		clog.FlushMode = commitlog.FlushSync
	default:
		return nil, fmt.Errorf("bench: unified layout: flush %q", cfg.Flush.Mode)
	}
	d, err := store.Open(store.Options{
		Dir:          cfg.Dir,
		CommitLog:    clog,
		ConsumeQueue: consumequeue.Options{Logger: logger},
		Logger:       logger,
	})
	if err != nil {
		return nil, err
	}
	return &unified{d: d, sync: cfg.Flush.Mode == "sync"}, nil
}

func (u *unified) Prepare(partitions int) error {
	return u.d.Prepare(Topic, int32(partitions))
}

func (u *unified) Append(_ int32, ms []commitlog.Message) error {
	buf, _ := u.positions.Get().(*[]commitlog.Position)
	if buf == nil {
		buf = new([]commitlog.Position)
	}
	defer u.positions.Put(buf)
	pos, err := u.d.AppendMessages((*buf)[:0], ms)
	*buf = pos
	if err != nil {
		return err
	}
	if u.sync {
		return u.d.WaitDurable(context.Background(), pos[len(pos)-1].End())
	}
	return nil
}

// Read follows the consume queue: one O(1) entry lookup per record, then the
// record wherever it lies in the commit log.
func (u *unified) Read(partition int32, offset int64, maxBytes int, fn func(*commitlog.Record) error) (int64, error) {
	return u.d.ReadRecords(Topic, partition, offset, maxBytes, fn)
}

func (u *unified) EndOffset(partition int32) (int64, error) {
	_, end := u.d.Bounds(Topic, partition)
	return end, nil
}

// dispatchStall is how long Flush waits for the dispatcher to make any
// progress before it reports it stuck (it retries failures forever).
const dispatchStall = 30 * time.Second

func (u *unified) Flush() error {
	end := u.d.WriteOffset()
	for last := int64(-1); ; {
		ctx, cancel := context.WithTimeout(context.Background(), dispatchStall)
		err := u.d.WaitDispatched(ctx, end)
		cancel()
		if err == nil {
			break
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		now := u.d.Dispatched()
		if now == last {
			return fmt.Errorf("bench: unified: dispatcher stalled at %d of %d for %v", now, end, dispatchStall)
		}
		last = now
	}
	return u.d.Flush()
}

func (u *unified) Close() error { return u.d.Close() }
