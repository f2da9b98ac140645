package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/console"
)

func groupCommand() *cli.Command {
	return &cli.Command{
		Name:  "group",
		Usage: "list, describe, reset and delete consumer groups (Kafka admin requests)",
		Subcommands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list consumer groups with their state",
				ArgsUsage: " ",
				Flags:     kafkaClientFlags(),
				Action:    runGroupList,
			},
			{
				Name:      "describe",
				Usage:     "show a group's members, their partitions, and committed offsets and lag",
				ArgsUsage: " ",
				Flags: append(kafkaClientFlags(),
					&cli.StringFlag{Name: "group", Aliases: []string{"g"}, Required: true, Usage: "group `ID`"}),
				Action: runGroupDescribe,
			},
			{
				Name:  "reset",
				Usage: "move a group's committed offsets of a topic (only while the group has no members)",
				Description: `--to says where every partition of the topic goes:
  earliest        the log start offset
  latest          the high watermark (skip everything produced so far)
  N               offset N, clamped into [log start, high watermark]
  2026-12-02T10:00:00Z or @UNIX_MS
                  the first record stored at or after that time (the high watermark if none)
--shift N moves each committed offset by N (negative: back), clamped the same way;
a partition without a commit shifts from the log start.`,
				ArgsUsage: " ",
				Flags: append(kafkaClientFlags(),
					&cli.StringFlag{Name: "group", Aliases: []string{"g"}, Required: true, Usage: "group `ID`"},
					&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Required: true, Usage: "topic `NAME`"},
					&cli.StringFlag{Name: "to", Usage: "earliest, latest, OFFSET, RFC3339 time or @UNIX_MS"},
					&cli.Int64Flag{Name: "shift", Usage: "move the committed offsets by `N`"},
				),
				Action: runGroupReset,
			},
			{
				Name:      "delete",
				Usage:     "delete an empty group and its committed offsets",
				ArgsUsage: " ",
				Flags: append(kafkaClientFlags(),
					&cli.StringFlag{Name: "group", Aliases: []string{"g"}, Required: true, Usage: "group `ID`"}),
				Action: func(c *cli.Context) error {
					g := c.String("group")
					return withAdmin(c, func(adm *kadm.Client) error {
						ctx, cancel := requestContext(c)
						defer cancel()
						resp, err := adm.DeleteGroup(ctx, g)
						if err == nil {
							err = resp.Err
						}
						if err != nil {
							return fmt.Errorf("group delete %s: %w", g, err)
						}
						fmt.Fprintf(c.App.Writer, "deleted group %s\n", g)
						return nil
					})
				},
			},
		},
	}
}

func runGroupList(c *cli.Context) error {
	return withAdmin(c, func(adm *kadm.Client) error {
		ctx, cancel := requestContext(c)
		defer cancel()
		groups, err := adm.ListGroups(ctx)
		if err != nil {
			return fmt.Errorf("group list: %w", err)
		}
		tw := tabwriter.NewWriter(c.App.Writer, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL TYPE")
		for _, g := range groups.Sorted() {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", g.Group, g.State, g.ProtocolType)
		}
		return tw.Flush()
	})
}

// formatPartitions renders topic partitions as "t[0 1 2] u[3]".
func formatPartitions(m map[string][]int32) string {
	topics := make([]string, 0, len(m))
	for t := range m {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	var parts []string
	for _, t := range topics {
		ps := append([]int32(nil), m[t]...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		parts = append(parts, fmt.Sprintf("%s%v", t, ps))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func runGroupDescribe(c *cli.Context) error {
	g := c.String("group")
	return withAdmin(c, func(adm *kadm.Client) error {
		ctx, cancel := requestContext(c)
		defer cancel()
		lags, err := adm.Lag(ctx, g)
		if err != nil {
			return fmt.Errorf("group describe %s: %w", g, err)
		}
		l, ok := lags[g]
		if !ok {
			return fmt.Errorf("group describe %s: missing from the answer", g)
		}
		if err := l.Error(); err != nil {
			return fmt.Errorf("group describe %s: %w", g, err)
		}
		if l.State == "Dead" {
			return fmt.Errorf("group describe %s: no such group", g)
		}
		w := c.App.Writer
		fmt.Fprintf(w, "group %s state=%s protocol=%s members=%d lag=%d\n", g, l.State, l.Protocol, len(l.Members), l.Lag.Total())
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		if len(l.Members) > 0 {
			fmt.Fprintln(tw, "\nMEMBER\tINSTANCE\tCLIENT ID\tHOST\tPARTITIONS")
			for _, m := range l.Members {
				inst := "-"
				if m.InstanceID != nil {
					inst = *m.InstanceID
				}
				assigned := map[string][]int32{}
				if ca, ok := m.Assigned.AsConsumer(); ok {
					for _, t := range ca.Topics {
						assigned[t.Topic] = append(assigned[t.Topic], t.Partitions...)
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.MemberID, inst, m.ClientID, m.ClientHost, formatPartitions(assigned))
			}
		}
		fmt.Fprintln(tw, "\nTOPIC\tPARTITION\tCOMMITTED\tEND\tLAG\tMEMBER")
		for _, pl := range l.Lag.Sorted() {
			committed, lag := "-", "-"
			if pl.Commit.At >= 0 {
				committed = strconv.FormatInt(pl.Commit.At, 10)
			}
			if pl.Lag >= 0 {
				lag = strconv.FormatInt(pl.Lag, 10)
			}
			member := "-"
			if pl.Member != nil {
				member = pl.Member.MemberID
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\n", pl.Topic, pl.Partition, committed, pl.End.Offset, lag, member)
		}
		return tw.Flush()
	})
}

// resetTarget is where `group reset` moves one partition.
func resetTarget(to string, shift int64, useShift bool, committed, logStart, end, afterTime int64) int64 {
	var at int64
	switch {
	case useShift:
		at = logStart
		if committed >= 0 {
			at = committed + shift
		}
	case to == "earliest":
		at = logStart
	case to == "latest":
		at = end
	default:
		if n, err := strconv.ParseInt(to, 10, 64); err == nil {
			at = n
		} else {
			at = afterTime
		}
	}
	return min(max(at, logStart), end)
}

// parseResetTo checks --to and returns the unix ms of a time target.
func parseResetTo(to string) (isTime bool, ms int64, err error) {
	switch to {
	case "earliest", "latest":
		return false, 0, nil
	}
	if _, err := strconv.ParseInt(to, 10, 64); err == nil {
		return false, 0, nil
	}
	if s, ok := strings.CutPrefix(to, "@"); ok {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return false, 0, fmt.Errorf("--to %q: want @ followed by unix milliseconds", to)
		}
		return true, n, nil
	}
	t, err := time.Parse(time.RFC3339Nano, to)
	if err != nil {
		return false, 0, fmt.Errorf("--to %q: want earliest, latest, an offset, an RFC 3339 time or @unix-ms", to)
	}
	return true, t.UnixMilli(), nil
}

func runGroupReset(c *cli.Context) error {
	g, topic, to := c.String("group"), c.String("topic"), c.String("to")
	useShift := c.IsSet("shift")
	if useShift == (to != "") {
		return fmt.Errorf("group reset: give exactly one of --to and --shift")
	}
	isTime, ms, err := parseResetTo(to)
	if useShift {
		isTime, err = false, nil
	}
	if err != nil {
		return fmt.Errorf("group reset: %w", err)
	}
	return withAdmin(c, func(adm *kadm.Client) error {
		ctx, cancel := requestContext(c)
		defer cancel()
		resets, err := resetGroupOffsets(ctx, adm, g, topic, resetHow{to: to, shift: c.Int64("shift"), useShift: useShift, isTime: isTime, ms: ms})
		if err != nil {
			return fmt.Errorf("group reset %s: %w", g, err)
		}
		tw := tabwriter.NewWriter(c.App.Writer, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tWAS\tNOW")
		for _, r := range resets {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", r.Topic, r.Partition, r.Was, r.Now)
		}
		return tw.Flush()
	})
}

// resetHow is where `group reset` (and the console) moves a group: --to,
// parsed by parseResetTo, or --shift.
type resetHow struct {
	to       string
	shift    int64
	useShift bool
	isTime   bool
	ms       int64
}

// errGroupActive refuses a reset while the group has members: the offsets
// of a live group are its members' to commit.
var errGroupActive = errors.New("stop them first (offsets of a live group are its members' to commit)")

// resetGroupOffsets commits new offsets for every partition of topic and
// returns them with the ones they replace (-1: none committed).
func resetGroupOffsets(ctx context.Context, adm *kadm.Client, g, topic string, how resetHow) ([]console.Reset, error) {
	described, err := adm.DescribeGroups(ctx, g)
	if err != nil {
		return nil, err
	}
	if d, ok := described[g]; ok && len(d.Members) > 0 {
		return nil, fmt.Errorf("the group has %d active members; %w", len(d.Members), errGroupActive)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("log start offsets of %s: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("high watermarks of %s: %w", topic, err)
	}
	var after kadm.ListedOffsets
	if how.isTime {
		if after, err = adm.ListOffsetsAfterMilli(ctx, how.ms, topic); err != nil {
			return nil, fmt.Errorf("offsets for time %d: %w", how.ms, err)
		}
	}
	current, err := adm.FetchOffsetsForTopics(ctx, g, topic)
	if err != nil {
		return nil, fmt.Errorf("committed offsets: %w", err)
	}
	offs := kadm.Offsets{}
	var resets []console.Reset
	partitions := make(map[int32]bool)
	for p := range starts[topic] {
		partitions[p] = true
	}
	for _, p := range sortedPartitions(partitions) {
		s := starts[topic][p]
		e, _ := ends.Lookup(topic, p)
		committed := int64(-1)
		if o, ok := current.Lookup(topic, s.Partition); ok && o.Err == nil {
			committed = o.At
		}
		afterTime := e.Offset
		if a, ok := after.Lookup(topic, s.Partition); ok && a.Err == nil && a.Offset >= 0 {
			afterTime = a.Offset
		}
		at := resetTarget(how.to, how.shift, how.useShift, committed, s.Offset, e.Offset, afterTime)
		offs.Add(kadm.Offset{Topic: topic, Partition: s.Partition, At: at, LeaderEpoch: -1})
		resets = append(resets, console.Reset{Topic: topic, Partition: s.Partition, Was: committed, Now: at})
	}
	resp, err := adm.CommitOffsets(ctx, g, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return resets, nil
}
