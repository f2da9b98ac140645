package main

import (
	"context"
	"fmt"
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

	l := newConsumeLoop(c, cl, format, count)
	// Only what reached the output counts as consumed.
	l.printed = func(rs []*kgo.Record) { cl.MarkCommitRecords(rs...) }
	err = l.run(c)
	ctx, cancel := context.WithTimeout(context.Background(), c.Duration("timeout"))
	defer cancel()
	if cerr := cl.CommitMarkedOffsets(ctx); cerr != nil && err == nil {
		err = fmt.Errorf("consume: commit offsets of group %s: %w", group, cerr)
	}
	if !quiet {
		fmt.Fprintf(c.App.ErrWriter, "consumed topic=%s group=%s records=%d partitions=%d elapsed=%s\n",
			topic, group, l.consumed, len(l.touched), time.Since(l.start).Round(time.Millisecond))
	}
	return err
}
