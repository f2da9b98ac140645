package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/ha/controlplane"
)

func clusterCommand() *cli.Command {
	env := func(name string) []string { return []string{"UNILOG_" + name} }
	return &cli.Command{
		Name:  "cluster",
		Usage: "inspect the cluster through its NATS control plane",
		Subcommands: []*cli.Command{{
			Name:  "status",
			Usage: "print members, replica group leaders, epochs, in-sync sets and replication lag",
			Description: `Reads the control plane's buckets. HEARTBEAT is the age of a member's last
heartbeat by the NATS server's clock; STATE is "gone" once that is past the
member deadline (5s). ROLE, EPOCH and LOG END are what the member last reported;
LAG is how many bytes a follower's log end is behind its group leader's, both
as last reported. IN SYNC lists the followers the leader last reported in sync:
only they may take over its lease.`,
			ArgsUsage: " ",
			Flags: append(controlPlaneClientFlags(),
				&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "give up after this long", EnvVars: env("TIMEOUT")},
			),
			Action: clusterStatus,
		}, clusterRebalanceCommand()},
	}
}

// controlPlaneClientFlags are the flags of the commands that read or
// change the control plane's buckets themselves.
func controlPlaneClientFlags() []cli.Flag {
	env := func(name string) []string { return []string{"UNILOG_" + name} }
	return []cli.Flag{
		&cli.StringFlag{Name: "nats", Value: "nats://" + defaultNATSListen, Usage: "NATS `URLS` of the control plane", EnvVars: env("NATS")},
		&cli.StringFlag{Name: "cluster-secret-file", Usage: "the brokers' --cluster-secret-file `FILE` (by default DATA_DIR/" + controlplane.SecretFileName + "), to sign in to their embedded NATS", EnvVars: env("CLUSTER_SECRET_FILE")},
		&cli.StringFlag{Name: "nats-creds", Usage: "NATS credentials `FILE`", EnvVars: env("NATS_CREDS")},
		&cli.StringFlag{Name: "nats-nkey", Usage: "NATS nkey seed `FILE`", EnvVars: env("NATS_NKEY")},
	}
}

// dialControlPlane connects to the control plane's NATS as the
// controlPlaneClientFlags say; what names the command in errors.
func dialControlPlane(c *cli.Context, what string) (*nats.Conn, error) {
	conn := controlplane.ConnConfig{URLs: c.String("nats"), Creds: c.String("nats-creds"), NKeySeed: c.String("nats-nkey"), Name: "unilog " + what}
	if path := c.String("cluster-secret-file"); path != "" {
		secret, err := controlplane.ReadSecret(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		conn.Secret = secret
	}
	nc, err := controlplane.Dial(conn)
	if errors.Is(err, nats.ErrAuthorization) && conn.Secret == nil {
		return nil, fmt.Errorf("%s: %w (an embedded NATS admits only holders of the cluster secret: give --cluster-secret-file)", what, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return nc, nil
}

func clusterStatus(c *cli.Context) error {
	nc, err := dialControlPlane(c, "cluster status")
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	st, err := controlplane.ReadStatus(ctx, nc)
	if err != nil {
		return fmt.Errorf("cluster status: %w", err)
	}
	leaders := map[string]controlplane.Member{}
	for _, l := range st.Leaders {
		for _, m := range st.Members {
			if m.NodeID == l.NodeID && m.ReplicaGroup == l.Group {
				leaders[l.Group] = m.Member
			}
		}
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tGROUP\tROLE\tEPOCH\tADVERTISE\tLOG END\tLAG\tHEARTBEAT\tSTATE")
	for _, m := range st.Members {
		state := "live"
		if m.Age >= controlplane.DefaultMemberDeadline {
			state = "gone"
		}
		lag := "-"
		if l, ok := leaders[m.ReplicaGroup]; ok && l.NodeID != m.NodeID {
			lag = fmt.Sprint(max(0, l.LogEndOffset-m.LogEndOffset))
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%s\t%d\t%s\t%s ago\t%s\n", m.NodeID, m.ReplicaGroup, m.Role, m.Epoch, m.Advertise, m.LogEndOffset, lag, m.Age.Round(time.Millisecond), state)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "GROUP\tLEADER\tEPOCH\tIN SYNC")
	for _, l := range st.Leaders {
		leader, inSync := fmt.Sprint(l.NodeID), "-"
		if l.NodeID < 0 {
			leader = "none (released)"
		}
		if m, ok := leaders[l.Group]; ok {
			inSync = "none"
			if len(m.InSync) > 0 {
				inSync = strings.Trim(fmt.Sprint(m.InSync), "[]")
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", l.Group, leader, l.Epoch, inSync)
	}
	return w.Flush()
}
