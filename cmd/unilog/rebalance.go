package main

import (
	"context"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/ha/controlplane"
)

func clusterRebalanceCommand() *cli.Command {
	return &cli.Command{
		Name:  "rebalance",
		Usage: "move partitions so that every replica group holds about as many (or as many bytes)",
		Description: `Plans moves that even out the partitions (--by partitions) or their bytes
(--by bytes, sized by DescribeLogDirs through --brokers) over the replica groups
that have a leader, prints the plan, and runs it (unless --dry-run), --parallel
moves at a time, printing progress until all are done (interrupted, the
running moves go on). Internal topics stay where they are.`,
		ArgsUsage: " ",
		Flags: append(append(controlPlaneClientFlags(), kafkaClientFlags()...),
			&cli.StringFlag{Name: "by", Value: "partitions", Usage: "what to even out: partitions or bytes"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan only"},
			&cli.IntFlag{Name: "parallel", Value: 1, Usage: "moves running at a time"},
		),
		Action: clusterRebalance,
	}
}

func clusterRebalance(c *cli.Context) error {
	weight := func(string, int32) int64 { return 1 }
	switch c.String("by") {
	case "partitions":
	case "bytes":
		sizes, err := partitionSizes(c)
		if err != nil {
			return fmt.Errorf("cluster rebalance: %w", err)
		}
		weight = func(t string, p int32) int64 { return sizes[t][p] }
	default:
		return fmt.Errorf("cluster rebalance: --by %q: partitions or bytes", c.String("by"))
	}
	if c.Int("parallel") < 1 {
		return fmt.Errorf("cluster rebalance: --parallel %d: at least 1", c.Int("parallel"))
	}
	md, closeMD, err := bindMetadata(c, "cluster rebalance")
	if err != nil {
		return err
	}
	defer closeMD()
	nc, err := dialControlPlane(c, "cluster rebalance")
	if err != nil {
		return err
	}
	defer nc.Close()
	sctx, scancel := context.WithTimeout(c.Context, 10*time.Second)
	st, err := controlplane.ReadStatus(sctx, nc)
	scancel()
	if err != nil {
		return fmt.Errorf("cluster rebalance: %w", err)
	}
	var groups []string
	for _, l := range st.Leaders {
		if l.NodeID >= 0 {
			groups = append(groups, l.Group)
		}
	}
	sort.Strings(groups)
	plan := controlplane.PlanRebalance(md.Topics(), groups, weight)
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	noun := "moves"
	if len(plan) == 1 {
		noun = "move"
	}
	fmt.Fprintf(w, "%d %s over replica groups %v, evening out %s\n", len(plan), noun, groups, c.String("by"))
	if len(plan) > 0 {
		fmt.Fprintln(w, "TOPIC\tPARTITION\tFROM\tTO\tWEIGHT")
	}
	moves := make([]plannedMove, len(plan))
	for i, mv := range plan {
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%d\n", mv.Topic, mv.Partition, mv.From, mv.To, mv.Weight)
		moves[i] = plannedMove{Topic: mv.Topic, Partition: mv.Partition, From: mv.From, To: mv.To}
	}
	if err := w.Flush(); err != nil || c.Bool("dry-run") {
		return err
	}
	return runMoves(c.Context, md, moves, c.Int("parallel"), true, c.App.Writer)
}

// partitionSizes are the partitions' bytes as their leaders report them
// (DescribeLogDirs): a group a partition moved away from still stores its
// old copy until retention.
func partitionSizes(c *cli.Context) (map[string]map[int32]int64, error) {
	sizes := map[string]map[int32]int64{}
	err := withAdmin(c, func(adm *kadm.Client) error {
		ctx, cancel := requestContext(c)
		defer cancel()
		meta, err := adm.Metadata(ctx)
		if err != nil {
			return err
		}
		dirs, err := adm.DescribeAllLogDirs(ctx, nil)
		if err != nil {
			return err
		}
		for _, t := range meta.Topics {
			sizes[t.Topic] = map[int32]int64{}
			for _, p := range t.Partitions {
				if d, ok := dirs[p.Leader]; ok {
					d.EachPartition(func(dp kadm.DescribedLogDirPartition) {
						if dp.Topic == t.Topic && dp.Partition == p.Partition {
							sizes[t.Topic][p.Partition] = dp.Size
						}
					})
				}
			}
		}
		return nil
	})
	return sizes, err
}
