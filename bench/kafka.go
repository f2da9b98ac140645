package bench

import (
	"fmt"

	"github.com/unilog/unilog/bench/kafkalayout"
	"github.com/unilog/unilog/commitlog"
)

// kafka is the per-partition layout of package kafkalayout.
type kafka struct{ log *kafkalayout.Log }

func openKafka(cfg LayoutConfig, randomIndex bool) (Layout, error) {
	opts := kafkalayout.Options{Dir: cfg.Dir, SegmentBytes: cfg.SegmentBytes, RandomIndexAccess: randomIndex}
	switch cfg.Flush.Mode {
	case "none":
		opts.Flush = kafkalayout.FlushNone
	case "interval":
		opts.Flush, opts.FlushInterval = kafkalayout.FlushInterval, cfg.Flush.Interval
	case "sync":
		opts.Flush = kafkalayout.FlushSync
	default:
		return nil, fmt.Errorf("bench: kafka layout: flush %q", cfg.Flush.Mode)
	}
	l, err := kafkalayout.Open(opts)
	if err != nil {
		return nil, err
	}
	return &kafka{log: l}, nil
}

func (k *kafka) Prepare(partitions int) error {
	for p := range partitions {
		if err := k.log.CreatePartition(Topic, int32(p)); err != nil {
			return atPartition(p, err)
		}
	}
	return nil
}

func (k *kafka) Append(partition int32, ms []commitlog.Message) error {
	_, err := k.log.Append(Topic, partition, ms)
	return err
}

func (k *kafka) Read(partition int32, offset int64, maxBytes int, fn func(*commitlog.Record) error) (int64, error) {
	return k.log.Read(Topic, partition, offset, maxBytes, fn)
}

func (k *kafka) EndOffset(partition int32) (int64, error) { return k.log.EndOffset(Topic, partition) }
func (k *kafka) Flush() error                             { return k.log.Flush() }
func (k *kafka) Close() error                             { return k.log.Close() }
