package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/ha/controlplane"
)

func topicMoveCommand() *cli.Command {
	return &cli.Command{
		Name:  "move",
		Usage: "move a partition to another replica group (through the control plane)",
		Description: `Records the move in the control plane; the target group's leader copies the
partition's records from the source group's leader at the same offsets while
producers keep writing, then the source stops taking produce for it, the
target copies the tail and the partition switches to the target group, whose
leader clients then find through Metadata. Prints progress until the move is
done (--wait=false returns once it is recorded); --cancel cancels a move whose
source still takes produce. Kafka tools can do the same
with AlterPartitionReassignments, naming the target group's nodes.`,
		ArgsUsage: " ",
		Flags: append(controlPlaneClientFlags(),
			&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Required: true, Usage: "topic `NAME`"},
			&cli.IntFlag{Name: "partition", Aliases: []string{"p"}, Required: true, Usage: "partition `N`"},
			&cli.StringFlag{Name: "to-group", Usage: "target replica group `NAME`"},
			&cli.BoolFlag{Name: "wait", Value: true, Usage: "wait for the move to finish, printing progress"},
			&cli.BoolFlag{Name: "cancel", Usage: "cancel the partition's move instead (refused once its source stopped taking produce)"},
			&cli.DurationFlag{Name: "timeout", Value: time.Hour, Usage: "give up waiting after this long (the move goes on)"},
		),
		Action: func(c *cli.Context) error {
			md, closeMD, err := bindMetadata(c, "topic move")
			if err != nil {
				return err
			}
			defer closeMD()
			if c.Bool("cancel") {
				topic, p := c.String("topic"), int32(c.Int("partition"))
				if err := md.CancelMove(topic, p); err != nil {
					return fmt.Errorf("topic move --cancel: %w", err)
				}
				fmt.Fprintf(c.App.Writer, "cancelled the move of %s/%d\n", topic, p)
				return nil
			}
			if c.String("to-group") == "" {
				return errors.New("topic move: --to-group is required (or --cancel)")
			}
			if err := knownGroup(c, c.String("to-group")); err != nil {
				return fmt.Errorf("topic move: %w", err)
			}
			mv := plannedMove{Topic: c.String("topic"), Partition: int32(c.Int("partition")), To: c.String("to-group")}
			if t, ok := md.Topic(mv.Topic); ok && int(mv.Partition) < len(t.Groups) {
				mv.From = t.Groups[mv.Partition]
			}
			ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
			defer cancel()
			return runMoves(ctx, md, []plannedMove{mv}, 1, c.Bool("wait"), c.App.Writer)
		},
	}
}

// knownGroup checks that some node ever led the replica group: a move to
// a group that is down waits for its leader, one to a misspelt name would
// wait for ever.
func knownGroup(c *cli.Context, group string) error {
	nc, err := dialControlPlane(c, "topic move")
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(c.Context, 10*time.Second)
	defer cancel()
	st, err := controlplane.ReadStatus(ctx, nc)
	if err != nil {
		return err
	}
	for _, l := range st.Leaders {
		if l.Group == group {
			return nil
		}
	}
	return fmt.Errorf("no node ever led replica group %q", group)
}

// bindMetadata follows the control plane's metadata for a tool.
func bindMetadata(c *cli.Context, what string) (*controlplane.Metadata, func(), error) {
	nc, err := dialControlPlane(c, what)
	if err != nil {
		return nil, nil, err
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	ctx, cancel := context.WithTimeout(c.Context, 10*time.Second)
	defer cancel()
	md, err := controlplane.BindMetadata(ctx, nc, log)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	return md, func() { md.Close(); nc.Close() }, nil
}

// plannedMove is one partition to move from group From to To.
type plannedMove struct {
	Topic     string
	Partition int32
	From, To  string
}

// runMoves starts the moves, at most parallel at a time, and with wait
// prints each one's progress (when it changed, at most every second)
// until all are done.
func runMoves(ctx context.Context, md *controlplane.Metadata, moves []plannedMove, parallel int, wait bool, w io.Writer) error {
	type running struct {
		plannedMove
		started, printed time.Time
		last             string
	}
	var active []*running
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for next := 0; next < len(moves) || len(active) > 0; {
		for ; next < len(moves) && len(active) < parallel; next++ {
			mv := moves[next]
			if err := md.StartMove(mv.Topic, mv.Partition, mv.To, time.Now().UnixMilli()); err != nil {
				return fmt.Errorf("move %s/%d to %s: %w", mv.Topic, mv.Partition, mv.To, err)
			}
			fmt.Fprintf(w, "moving %s/%d from %s to %s\n", mv.Topic, mv.Partition, mv.From, mv.To)
			if wait {
				active = append(active, &running{plannedMove: mv, started: time.Now()})
			}
		}
		if len(active) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("moves still running (they go on): %w", ctx.Err())
		case <-tick.C:
		}
		still := active[:0]
		for _, r := range active {
			state, done, err := moveState(md, r.plannedMove)
			switch {
			case err != nil:
				return err
			case done:
				fmt.Fprintf(w, "moved %s/%d to %s in %s\n", r.Topic, r.Partition, r.To, time.Since(r.started).Round(100*time.Millisecond))
				continue
			case state != r.last && time.Since(r.printed) >= time.Second:
				fmt.Fprintf(w, "  %s/%d: %s\n", r.Topic, r.Partition, state)
				r.last, r.printed = state, time.Now()
			}
			still = append(still, r)
		}
		active = still
	}
	return nil
}

// errMoveGone: a move neither running nor done was cancelled.
var errMoveGone = errors.New("partition move cancelled")

// moveState describes a move's progress; done once the partition is the
// target group's.
func moveState(md *controlplane.Metadata, mv plannedMove) (string, bool, error) {
	t, ok := md.Topic(mv.Topic)
	if !ok {
		return "", false, fmt.Errorf("move %s/%d: %w", mv.Topic, mv.Partition, controlplane.ErrUnknownTopic)
	}
	cur, moving := t.Moves[mv.Partition]
	switch {
	case !moving && int(mv.Partition) < len(t.Groups) && t.Groups[mv.Partition] == mv.To:
		return "", true, nil
	case !moving:
		return "", false, fmt.Errorf("move %s/%d to %s: %w", mv.Topic, mv.Partition, mv.To, errMoveGone)
	case cur.End >= 0:
		return fmt.Sprintf("switching: copying the last offsets up to %d", cur.End), false, nil
	case cur.Fenced:
		return "switching: the source stops taking produce", false, nil
	case cur.SourceEnd > 0:
		return fmt.Sprintf("copied %d of %d offsets (%.0f%%)", cur.Copied, cur.SourceEnd, 100*float64(cur.Copied)/float64(cur.SourceEnd)), false, nil
	}
	return "waiting for the target group's leader", false, nil
}
