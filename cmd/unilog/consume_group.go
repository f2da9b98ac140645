package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

// runGroupConsume consumes topic as a member of group: the group assigns
// the partitions and each continues at the group's committed offset
// (--from earliest or latest only says where a partition without one
// starts). A record's offset is committed once it has been written out, in
// the background as the consumer goes and finally when it stops, so a
// restarted consumer continues after the last record printed. It runs
// until SIGINT/SIGTERM or --count records.
func runGroupConsume(c *cli.Context, topic, group string, format consumeFormat, count int64, quiet bool) error {
	reset := kgo.NewOffset().AtStart()
	switch c.String("from") {
	case "earliest", "beginning", "start":
	case "latest", "end":
		reset = kgo.NewOffset().AtEnd()
	default:
		return fmt.Errorf("consume: --from %q with --group: want earliest or latest (where partitions without a committed offset start)", c.String("from"))
	}
	if len(c.IntSlice("partition")) > 0 {
		return fmt.Errorf("consume: --partition and --group exclude each other: the group assigns partitions")
	}
	cl, err := newKafkaClient(c,
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(reset),
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(time.Second),
	)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	defer cl.Close()

	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := bufio.NewWriterSize(c.App.Writer, 64<<10)
	var consumed int64
	touched := make(map[int32]struct{})
	start := time.Now()
	var fetchErr error
	for count == 0 || consumed < count {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			fetchErr = fmt.Errorf("consume: partition %d: %w", errs[0].Partition, errs[0].Err)
			break
		}
		var writeErr error
		var done []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			if writeErr != nil || (count > 0 && consumed >= count) {
				return
			}
			writeErr = format(out, r)
			consumed++
			touched[r.Partition] = struct{}{}
			done = append(done, r)
		})
		if writeErr == nil {
			writeErr = out.Flush()
		}
		if writeErr != nil {
			return fmt.Errorf("consume: write output: %w", writeErr)
		}
		// Only what reached the output counts as consumed.
		cl.MarkCommitRecords(done...)
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("consume: write output: %w", err)
	}
	cctx, cancel := context.WithTimeout(context.Background(), c.Duration("timeout"))
	defer cancel()
	if err := cl.CommitMarkedOffsets(cctx); err != nil && fetchErr == nil {
		fetchErr = fmt.Errorf("consume: commit offsets of group %s: %w", group, err)
	}
	if !quiet {
		fmt.Fprintf(c.App.ErrWriter, "consumed topic=%s group=%s records=%d partitions=%d elapsed=%s\n",
			topic, group, consumed, len(touched), time.Since(start).Round(time.Millisecond))
	}
	return fetchErr
}
