package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/ha/replication"
	"github.com/unilog/unilog/internal/tlsconf"
)

// replicationFlags configure the data plane of `unilog broker`.
func replicationFlags() []cli.Flag {
	env := func(name string) []string { return []string{"UNILOG_" + name} }
	return []cli.Flag{
		&cli.StringFlag{Name: "replication-listen", Value: "127.0.0.1:0", Usage: "`HOST:PORT` followers of this node's replica group replicate from while it leads; advertised in its member record, so give a routable address across machines (port 0 picks a free one)", EnvVars: env("REPLICATION_LISTEN")},
		&cli.StringFlag{Name: "replication", Value: "sync", Usage: "sync (acks=all and offset commits wait until the in-sync followers have the records, flushed with --flush sync) or async (they do not wait; consumers still see only replicated records)", EnvVars: env("REPLICATION")},
		&cli.IntFlag{Name: "min-insync", Value: 1, Usage: "replicas, the leader counted, that must be in sync for an acks=all produce or an offset commit under sync replication, as Kafka's min.insync.replicas; fewer answer NOT_ENOUGH_REPLICAS and store nothing (1: the leader alone, so a leader left alone keeps taking writes; 2 on three nodes: the leader and one follower)", EnvVars: env("MIN_INSYNC")},
		&cli.StringFlag{Name: "replication-tls-ca", Usage: "mutual TLS on the replication stream: both ends present --tls-cert/--tls-key and verify the other's against this PEM CA `FILE`", EnvVars: env("REPLICATION_TLS_CA")},
		&cli.StringFlag{Name: "replication-peers", Usage: "with --replication-tls-ca, the certificate common `NAMES` (comma-separated) a leader accepts as followers (default: any the CA signed)", EnvVars: env("REPLICATION_PEERS")},
	}
}

// replicationConfig is what the flags say about replication.
type replicationConfig struct {
	listen    string
	sync      bool
	minInSync int
	// key is what both ends of a stream prove they hold (the cluster
	// secret's replication key).
	key []byte
	// With --replication-tls-ca: the leader's listener and the follower's
	// dialer configs; nil is plaintext.
	serverTLS, clientTLS *tls.Config
}

func parseReplicationFlags(c *cli.Context) (replicationConfig, error) {
	rc := replicationConfig{listen: c.String("replication-listen"), minInSync: c.Int("min-insync")}
	switch mode := c.String("replication"); mode {
	case "sync":
		rc.sync = true
	case "async":
	default:
		return rc, fmt.Errorf("--replication %q: want sync or async", mode)
	}
	if rc.minInSync < 1 {
		return rc, fmt.Errorf("--min-insync %d: must be 1 or more (it counts the leader, as Kafka's min.insync.replicas)", rc.minInSync)
	}
	if _, _, err := net.SplitHostPort(rc.listen); err != nil {
		return rc, fmt.Errorf("--replication-listen %q: %w", rc.listen, err)
	}
	ca, peers := c.String("replication-tls-ca"), splitList(c.String("replication-peers"))
	if ca == "" {
		if len(peers) > 0 {
			return rc, errors.New("--replication-peers needs --replication-tls-ca")
		}
		return rc, nil
	}
	files := tlsconf.Files{Cert: c.String("tls-cert"), Key: c.String("tls-key"), ClientCA: ca, CA: ca}
	if files.Cert == "" || files.Key == "" {
		return rc, errors.New("--replication-tls-ca needs --tls-cert and --tls-key: the node's certificate on both ends of the stream")
	}
	var err error
	if rc.serverTLS, err = files.Server(); err != nil {
		return rc, fmt.Errorf("--replication-tls-ca: %w", err)
	}
	if len(peers) > 0 {
		rc.serverTLS.VerifyConnection = tlsconf.RequirePeer(peers...)
	}
	if rc.clientTLS, err = files.Client(true); err != nil {
		return rc, fmt.Errorf("--replication-tls-ca: %w", err)
	}
	return rc, nil
}

// role is the replica role's configuration for the broker of cfg in
// group; durable: its log is flushed as records are appended.
func (rc replicationConfig) role(cfg broker.Config, group string, durable bool) replication.RoleConfig {
	return replication.RoleConfig{
		Node: cfg.NodeID, Group: group, Listen: rc.listen,
		MinInSync: rc.minInSync, Durable: durable,
		Key: rc.key, ServerTLS: rc.serverTLS, ClientTLS: rc.clientTLS,
		Logger: cfg.Logger,
	}
}
