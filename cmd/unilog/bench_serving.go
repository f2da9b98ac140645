package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

// benchServingCommand waits for a broker to serve again: the restart rows
// of docs/BENCHMARKS.md ("A million partitions on one node",
// scripts/bench-million.sh) time a broker from its start to the first
// record this reads. It asks only for its one partition (Metadata, then
// ListOffsets and Fetch of that partition), where `unilog consume` lists
// the offsets of every partition of the topic first, 100,000 at a time.
func benchServingCommand() *cli.Command {
	return &cli.Command{
		Name:  "serving",
		Usage: "wait until a broker answers Metadata and a Fetch of one record of a partition, retrying until --timeout",
		Flags: append(kafkaClientFlags(),
			&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Usage: "topic `NAME`", Required: true},
			&cli.IntFlag{Name: "partition", Aliases: []string{"p"}, Usage: "partition `N`, which must hold a record"},
		),
		Action: func(c *cli.Context) error {
			start := time.Now()
			topic, partition := c.String("topic"), int32(c.Int("partition"))
			ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
			defer cancel()
			// The client backs off between failed dials, by up to seconds
			// once a start has taken a while: dial until the listener
			// accepts, so that its backoff is not counted as the broker's.
			if err := awaitListener(ctx, c.String("brokers")); err != nil {
				return err
			}
			cl, err := newKafkaClient(c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
				topic: {partition: kgo.NewOffset().AtStart()},
			}))
			if err != nil {
				return err
			}
			defer cl.Close()
			for {
				fs := cl.PollRecords(ctx, 1)
				if fs.NumRecords() > 0 {
					fmt.Fprintf(c.App.Writer, "serving %s/%d after %.2f s\n", topic, partition, time.Since(start).Seconds())
					return nil
				}
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("no record of %s/%d within %s: %w", topic, partition, c.Duration("timeout"), err)
				}
				if len(fs.Errors()) > 0 {
					// A broker still starting refuses or fails requests
					// at once; do not spin on them.
					time.Sleep(20 * time.Millisecond)
				}
			}
		},
	}
}

// awaitListener dials the first of brokers every 20 ms until it accepts.
func awaitListener(ctx context.Context, brokers string) error {
	seeds, err := splitBrokerList(brokers)
	if err != nil {
		return err
	}
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", seeds[0])
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not accepting connections: %w", seeds[0], err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
