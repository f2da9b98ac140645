package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/urfave/cli/v2"
)

func topicCommand() *cli.Command {
	return &cli.Command{
		Name:  "topic",
		Usage: "create, list, describe and delete topics (Kafka admin requests)",
		Subcommands: []*cli.Command{
			topicCreateCommand(),
			topicListCommand(),
			topicDescribeCommand(),
			topicDeleteCommand(),
			topicMoveCommand(),
		},
	}
}

func topicCreateCommand() *cli.Command {
	return &cli.Command{
		Name:      "create",
		Usage:     "create a topic",
		ArgsUsage: " ",
		Flags: append(kafkaClientFlags(),
			&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Required: true, Usage: "topic `NAME`"},
			&cli.IntFlag{Name: "partitions", Aliases: []string{"p"}, Value: 1, Usage: "number of partitions"},
			&cli.IntFlag{Name: "replication-factor", Value: 1, Usage: "replicas per partition"},
			&cli.GenericFlag{Name: "config", Value: &kvFlag{}, Usage: "topic config `KEY=VALUE` (repeatable)"},
		),
		Action: func(c *cli.Context) error {
			topic := c.String("topic")
			partitions := c.Int("partitions")
			rf := c.Int("replication-factor")
			if partitions < 1 || partitions > 1<<31-1 {
				return fmt.Errorf("topic create: --partitions %d: must be between 1 and 2147483647", partitions)
			}
			if rf < 1 || rf > 1<<15-1 {
				return fmt.Errorf("topic create: --replication-factor %d: must be between 1 and 32767", rf)
			}
			configs := make(map[string]*string)
			for _, p := range kvPairs(c, "config") {
				configs[p.key] = kadm.StringPtr(p.value)
			}
			return withAdmin(c, func(adm *kadm.Client) error {
				ctx, cancel := requestContext(c)
				defer cancel()
				resp, err := adm.CreateTopic(ctx, int32(partitions), int16(rf), configs, topic)
				if err != nil {
					return fmt.Errorf("topic create %s: %w", topic, withErrMessage(err, resp.ErrMessage))
				}
				// Brokers answering CreateTopics below v5 do not echo the
				// layout; then the request is the best account of it.
				if resp.NumPartitions > 0 {
					partitions = int(resp.NumPartitions)
				}
				if resp.ReplicationFactor > 0 {
					rf = int(resp.ReplicationFactor)
				}
				fmt.Fprintf(c.App.Writer, "created topic %s with %d partitions (replication factor %d)\n", topic, partitions, rf)
				return nil
			})
		},
	}
}

func topicListCommand() *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "list topics with their partition counts",
		ArgsUsage: " ",
		Flags:     kafkaClientFlags(),
		Action: func(c *cli.Context) error {
			return withAdmin(c, func(adm *kadm.Client) error {
				ctx, cancel := requestContext(c)
				defer cancel()
				topics, err := adm.ListTopics(ctx)
				if err != nil {
					return fmt.Errorf("topic list: %w", err)
				}
				tw := tabwriter.NewWriter(c.App.Writer, 0, 8, 2, ' ', 0)
				fmt.Fprintln(tw, "TOPIC\tPARTITIONS")
				for _, t := range topics.Sorted() {
					fmt.Fprintf(tw, "%s\t%d\n", t.Topic, len(t.Partitions))
				}
				return tw.Flush()
			})
		},
	}
}

func topicDescribeCommand() *cli.Command {
	return &cli.Command{
		Name:      "describe",
		Usage:     "show partitions with leader, log start offset and high watermark",
		ArgsUsage: "[TOPIC...]",
		Flags: append(kafkaClientFlags(),
			&cli.StringSliceFlag{Name: "topic", Aliases: []string{"t"}, Usage: "topic `NAME` (repeatable; default all topics)"},
		),
		Action: func(c *cli.Context) error {
			names := append(c.StringSlice("topic"), c.Args().Slice()...)
			return withAdmin(c, func(adm *kadm.Client) error {
				ctx, cancel := requestContext(c)
				defer cancel()
				topics, err := adm.ListTopics(ctx, names...)
				if err != nil {
					return fmt.Errorf("topic describe: %w", err)
				}
				var errs []error
				topics.EachError(func(t kadm.TopicDetail) {
					errs = append(errs, fmt.Errorf("topic describe %s: %w", t.Topic, t.Err))
				})
				if len(errs) > 0 {
					return errors.Join(errs...)
				}
				if len(topics) == 0 {
					return nil
				}
				starts, err := adm.ListStartOffsets(ctx, topics.Names()...)
				if err != nil {
					return fmt.Errorf("topic describe: log start offsets: %w", err)
				}
				ends, err := adm.ListEndOffsets(ctx, topics.Names()...)
				if err != nil {
					return fmt.Errorf("topic describe: high watermarks: %w", err)
				}
				return writeTopicDescription(c.App.Writer, topics, starts, ends)
			})
		},
	}
}

// writeTopicDescription prints one block per topic. A partition whose
// offsets could not be listed shows the error in place of the numbers rather
// than hiding the rest of the topic.
func writeTopicDescription(w io.Writer, topics kadm.TopicDetails, starts, ends kadm.ListedOffsets) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for i, t := range topics.Sorted() {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "topic %s\tpartitions %d\n", t.Topic, len(t.Partitions))
		fmt.Fprintln(tw, "PARTITION\tLEADER\tREPLICAS\tISR\tLOG-START\tHIGH-WATERMARK\tRECORDS")
		for _, p := range t.Partitions.Sorted() {
			s, sok := starts.Lookup(t.Topic, p.Partition)
			e, eok := ends.Lookup(t.Topic, p.Partition)
			offsets := "-\t-\t-"
			switch {
			case p.Err != nil:
				offsets = "error: " + p.Err.Error() + "\t\t"
			case !sok || !eok:
			case s.Err != nil:
				offsets = "error: " + s.Err.Error() + "\t\t"
			case e.Err != nil:
				offsets = "error: " + e.Err.Error() + "\t\t"
			default:
				offsets = fmt.Sprintf("%d\t%d\t%d", s.Offset, e.Offset, e.Offset-s.Offset)
			}
			fmt.Fprintf(tw, "%d\t%d\t%v\t%v\t%s\n", p.Partition, p.Leader, p.Replicas, p.ISR, offsets)
		}
	}
	return tw.Flush()
}

func topicDeleteCommand() *cli.Command {
	return &cli.Command{
		Name:      "delete",
		Usage:     "delete topics; their records leave the commit log by retention",
		ArgsUsage: "[TOPIC...]",
		Flags: append(kafkaClientFlags(),
			&cli.StringSliceFlag{Name: "topic", Aliases: []string{"t"}, Usage: "topic `NAME` (repeatable)"},
		),
		Action: func(c *cli.Context) error {
			names := append(c.StringSlice("topic"), c.Args().Slice()...)
			if len(names) == 0 {
				return errors.New("topic delete: name at least one topic (--topic T)")
			}
			return withAdmin(c, func(adm *kadm.Client) error {
				ctx, cancel := requestContext(c)
				defer cancel()
				resps, err := adm.DeleteTopics(ctx, names...)
				if err != nil {
					return fmt.Errorf("topic delete: %w", err)
				}
				var errs []error
				for _, name := range names {
					r, ok := resps[name]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("topic delete %s: missing from the broker's answer", name))
					case r.Err != nil:
						errs = append(errs, fmt.Errorf("topic delete %s: %w", name, withErrMessage(r.Err, r.ErrMessage)))
					default:
						fmt.Fprintf(c.App.Writer, "deleted topic %s\n", name)
					}
				}
				return errors.Join(errs...)
			})
		},
	}
}

// withAdmin runs fn with an admin client on --brokers and closes it after.
func withAdmin(c *cli.Context, fn func(*kadm.Client) error) error {
	cl, err := newKafkaClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	return fn(kadm.NewClient(cl))
}

// withErrMessage appends the broker's free-text error message, which often
// says more than the error code (e.g. which config key was rejected).
func withErrMessage(err error, msg string) error {
	if msg == "" {
		return err
	}
	return fmt.Errorf("%w (%s)", err, msg)
}
