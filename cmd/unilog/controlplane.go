package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/ha/controlplane"
	"github.com/unilog/unilog/ha/replication"
	"github.com/unilog/unilog/internal/fileops"
)

// defaultNATSListen is the embedded NATS client listener: the standard
// NATS port, so `unilog cluster status` finds it (with the cluster secret).
const defaultNATSListen = "127.0.0.1:4222"

// controlPlaneFlags configure the NATS control plane of `unilog broker`.
func controlPlaneFlags() []cli.Flag {
	env := func(name string) []string { return []string{"UNILOG_" + name} }
	return append([]cli.Flag{
		&cli.StringFlag{Name: "replica-group", Value: "main", Usage: "replica group `NAME` (letters, digits, '-', '_'); nodes of one group replicate one log", EnvVars: env("REPLICA_GROUP")},
		&cli.StringFlag{Name: "advertise", Usage: "Kafka `HOST:PORT` other nodes send clients to (default: the --listen address)", EnvVars: env("ADVERTISE")},
		&cli.StringFlag{Name: "nats", Usage: "join an external NATS, `URLS` nats://host:port,... (default: embed a NATS server)", EnvVars: env("NATS")},
		&cli.StringFlag{Name: "nats-creds", Usage: "NATS credentials `FILE` for --nats", EnvVars: env("NATS_CREDS")},
		&cli.StringFlag{Name: "nats-nkey", Usage: "NATS nkey seed `FILE` for --nats", EnvVars: env("NATS_NKEY")},
		&cli.StringFlag{Name: "cluster-secret-file", Usage: "the cluster's shared secret `FILE`, created (64 hex digits, mode 0600) when missing; default DATA_DIR/" + controlplane.SecretFileName + ". The embedded NATS admits only clients and routes that hold it, and both ends of a replication stream prove it: give every node of a cluster the same file", EnvVars: env("CLUSTER_SECRET_FILE")},
		&cli.StringFlag{Name: "nats-listen", Value: defaultNATSListen, Usage: "embedded NATS client listener `HOST:PORT`", EnvVars: env("NATS_LISTEN")},
		&cli.StringFlag{Name: "nats-cluster-listen", Usage: "embedded NATS route listener `HOST:PORT` (needed with --nats-routes)", EnvVars: env("NATS_CLUSTER_LISTEN")},
		&cli.StringFlag{Name: "nats-routes", Usage: "route the embedded NATS to `URLS` nats-route://host:port,... (the same list on every node, itself included)", EnvVars: env("NATS_ROUTES")},
		&cli.DurationFlag{Name: "lease-duration", Value: controlplane.DefaultLeaseDuration, Usage: "how long an unrenewed leader lease stands; the leader steps down 2/3 of the way in. Longer rides out the loss of a NATS server that led a bucket (embedded ones re-elect in about 1 s, nats-server itself in 4-9 s), shorter fails over sooner", EnvVars: env("LEASE_DURATION")},
		&cli.IntFlag{Name: "nats-replicas", Usage: "replicas of the control plane's buckets (0: 3 when the NATS cluster has 3 or more servers, else 1)", EnvVars: env("NATS_REPLICAS")},
	}, replicationFlags()...)
}

// controlPlane is the embedded NATS server (if any) and this node's
// membership in the control plane.
type controlPlane struct {
	srv  *controlplane.Server
	node *controlplane.Node
	repl *replication.Role
	url  string
	log  logrus.FieldLogger
}

// startControlPlane starts or joins NATS and the node, and points cfg's
// metadata and leadership at it.
func startControlPlane(c *cli.Context, cfg *broker.Config, durable bool) (*controlPlane, error) {
	external := c.String("nats")
	routes := splitList(c.String("nats-routes"))
	if external != "" && (len(routes) > 0 || c.String("nats-cluster-listen") != "") {
		return nil, errors.New("--nats joins an external NATS; --nats-routes and --nats-cluster-listen configure the embedded one: give one or the other")
	}
	if external == "" && (c.String("nats-creds") != "" || c.String("nats-nkey") != "") {
		return nil, errors.New("--nats-creds and --nats-nkey need --nats")
	}
	if d := c.Duration("lease-duration"); d < time.Second {
		return nil, fmt.Errorf("--lease-duration %s: must be at least 1s (the leader renews six times a lease)", d)
	}
	advertise := c.String("advertise")
	if advertise == "" {
		advertise = cfg.Listen
	}
	if _, _, err := net.SplitHostPort(advertise); err != nil {
		return nil, fmt.Errorf("--advertise %q: %w", advertise, err)
	}
	rc, err := parseReplicationFlags(c)
	if err != nil {
		return nil, err
	}
	secretFile := c.String("cluster-secret-file")
	if secretFile == "" {
		secretFile = filepath.Join(cfg.DataDir, controlplane.SecretFileName)
	}
	secret, err := controlplane.LoadSecret(secretFile)
	if err != nil {
		return nil, fmt.Errorf("--cluster-secret-file: %w", err)
	}
	rc.key = secret.ReplicationKey()
	if err := setInterBroker(c, cfg, secret); err != nil {
		return nil, err
	}
	cp := &controlPlane{url: external, log: cfg.Logger}
	if cp.repl, err = replication.NewRole(rc.role(*cfg, c.String("replica-group"), durable)); err != nil {
		return nil, fmt.Errorf("--replication-listen: %w", err)
	}
	// Without credentials of its own, an external NATS may be another
	// node's embedded one: the secret signs in there.
	conn := controlplane.ConnConfig{URLs: external, Creds: c.String("nats-creds"), NKeySeed: c.String("nats-nkey")}
	if conn.Creds == "" && conn.NKeySeed == "" {
		conn.Secret = secret
	}
	replicas := c.Int("nats-replicas")
	var natsServer string
	if cp.url == "" {
		natsServer = fmt.Sprintf("unilog-%d", cfg.NodeID)
		cp.srv, err = controlplane.StartServer(controlplane.ServerConfig{
			Name:          natsServer,
			Dir:           filepath.Join(cfg.DataDir, "nats"),
			Listen:        c.String("nats-listen"),
			ClusterListen: c.String("nats-cluster-listen"),
			Routes:        routes,
			Secret:        secret,
			Logger:        cfg.Logger,
		})
		if err != nil {
			cp.close()
			return nil, err
		}
		cp.url = cp.srv.ClientURL()
		conn = controlplane.ConnConfig{URLs: cp.url, Secret: secret}
		if replicas == 0 {
			replicas = embeddedReplicas(routes, c.String("nats-cluster-listen"))
		}
	}
	cp.node, err = controlplane.Start(controlplane.Config{
		Conn:         conn,
		Replicas:     replicas,
		NodeID:       cfg.NodeID,
		ReplicaGroup: c.String("replica-group"),
		Advertise:    advertise,
		// Followers find the leader's log here.
		ReplicationAddr: cp.repl.Addr(),
		OnRoleChange:    cp.repl.RoleChanged,
		Eligible:        cp.repl.Eligible,
		// The epochs acted on and reserved outlive the buckets' word.
		Epochs: controlplane.NewEpochFile(filepath.Join(cfg.DataDir, controlplane.EpochFileName)),
		// Its crash then elects the buckets' streams while its lease
		// lapses, and a follower's stalls nothing.
		NATSServer: natsServer,
		// Renew twice or more before stepping down, with a third of the
		// lease as the safety margin (see the controlplane package doc).
		LeaseDuration: c.Duration("lease-duration"),
		RenewDeadline: c.Duration("lease-duration") * 2 / 3,
		RetryPeriod:   c.Duration("lease-duration") / 6,
		Logger:        cfg.Logger,
	})
	if err != nil {
		cp.close()
		return nil, err
	}
	cp.repl.SetNode(cp.node)
	if err := importFileMetadata(cfg.DataDir, cp.node.Metadata(), cfg.Logger); err != nil {
		cp.close()
		return nil, err
	}
	cfg.Metadata = haMetadata{cp.node.Metadata()}
	cfg.Cluster = haCluster{cp.node, cp.repl, cfg.NodeID}
	cfg.Moves = haMoves{cp.node.Metadata(), cp.node, cp.repl}
	cfg.Replication = cp.repl
	cfg.SyncReplication = rc.sync
	// Serving groups from what this node loaded at Start waits for its
	// role: a deposed leader restarting holds its own term's offsets.
	cfg.AwaitRole = true
	cfg.Metrics = leaseReadMetrics{cp.node.Elector()}
	return cp, nil
}

// dropRemoteDeletes drops the local queues of topics other nodes delete,
// on the watch goroutine: the deletion is done before a re-creation under
// the same name is applied.
func (cp *controlPlane) dropRemoteDeletes(b *broker.Broker) {
	cp.node.Metadata().OnChange(func(ev controlplane.TopicEvent) {
		if !ev.Deleted || !ev.Remote {
			return
		}
		if err := b.DropTopic(ev.Topic.Name); err != nil {
			cp.log.WithError(err).WithField("topic", ev.Topic.Name).Error("topic deleted by another node: local queues not dropped")
		}
	})
}

// embeddedReplicas is 3 once the routes name three servers, counting this
// one whether or not the list includes it.
func embeddedReplicas(routes []string, self string) int {
	n := len(routes)
	if self != "" && !strings.Contains(","+strings.Join(routes, ",")+",", "://"+self+",") {
		n++
	}
	if n >= 3 {
		return 3
	}
	return 1
}

// handOver is the controlled shutdown of a leader (replication.Role's
// HandOver), done before the broker closes: an in-sync follower gets up
// to wait to reach the log end, then takes the lease at once.
func (cp *controlPlane) handOver(wait time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), wait+2*time.Second)
	defer cancel()
	if err := cp.repl.HandOver(ctx, wait); err != nil {
		cp.log.WithError(err).Warn("lease not handed over: followers take over once it lapses")
	}
}

// close releases the lease (a follower takes over at once), leaves, and
// stops the embedded server.
func (cp *controlPlane) close() {
	if cp.repl != nil {
		cp.repl.Close()
	}
	if cp.node != nil {
		cp.node.Close()
	}
	if cp.srv != nil {
		cp.srv.Shutdown()
	}
}

// importedSuffix marks a metadata file already moved into the control
// plane, so topics deleted there later are not imported again.
const importedSuffix = ".imported"

// importFileMetadata moves the topics of a data directory that ran
// without the control plane into it, once. Left behind, they would look
// deleted, and the dispatcher stops indexing the records of deleted
// topics. A control plane that already has topics (another node created
// them) is not merged into.
func importFileMetadata(dir string, m *controlplane.Metadata, log logrus.FieldLogger) error {
	path := filepath.Join(dir, broker.MetadataFileName)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) || len(m.Topics()) > 0 {
		return nil
	}
	file, err := broker.OpenFileMetadata(dir)
	if err != nil {
		return err
	}
	defer file.Close()
	store := haMetadata{m}
	for _, t := range file.Topics() {
		if err := store.CreateTopic(t); err != nil && !errors.Is(err, broker.ErrTopicExists) {
			return fmt.Errorf("import topic %s from %s: %w", t.Name, dir, err)
		}
		log.WithField("topic", t.Name).Info("topic moved from the metadata file into the control plane")
	}
	// The file's next producer id: ids handed out under it stay unique.
	next, err := file.ReserveProducerIDs(0)
	if err != nil {
		return err
	}
	if _, err := m.ReserveProducerIDs(next); err != nil {
		return fmt.Errorf("import producer ids from %s: %w", dir, err)
	}
	var ops fileops.OS
	if err := ops.Rename(path, path+importedSuffix); err != nil {
		return fmt.Errorf("import metadata: %w", err)
	}
	if err := ops.SyncDir(dir); err != nil {
		return fmt.Errorf("import metadata: %w", err)
	}
	return nil
}

// haMetadata is the broker's MetadataStore over the control plane's.
type haMetadata struct{ m *controlplane.Metadata }

func toTopicMeta(t controlplane.Topic) broker.TopicMeta {
	return broker.TopicMeta{Name: t.Name, ID: t.ID, Partitions: t.Partitions, CreatedMs: t.CreatedMs, UntaggedRecords: t.UntaggedRecords,
		Configs: t.Configs, LogStarts: t.LogStarts}
}

func (s haMetadata) Topics() []broker.TopicMeta {
	ts := s.m.Topics()
	out := make([]broker.TopicMeta, len(ts))
	for i, t := range ts {
		out[i] = toTopicMeta(t)
	}
	return out
}

func (s haMetadata) Topic(name string) (broker.TopicMeta, bool) {
	t, ok := s.m.Topic(name)
	return toTopicMeta(t), ok
}

func (s haMetadata) CreateTopic(t broker.TopicMeta) error {
	return brokerError(s.m.CreateTopic(controlplane.Topic{Name: t.Name, ID: t.ID, Partitions: t.Partitions, CreatedMs: t.CreatedMs, UntaggedRecords: t.UntaggedRecords,
		Configs: t.Configs, LogStarts: t.LogStarts}))
}

func (s haMetadata) DeleteTopic(name string) error { return brokerError(s.m.DeleteTopic(name)) }

func (s haMetadata) SetPartitions(name string, partitions int32) error {
	return brokerError(s.m.SetPartitions(name, partitions))
}

// UpdateTopic lets update change the fields the broker owns; the replica
// groups stay the control plane's.
func (s haMetadata) UpdateTopic(name string, update func(*broker.TopicMeta) error) error {
	return brokerError(s.m.UpdateTopic(name, func(t *controlplane.Topic) error {
		tm := toTopicMeta(*t).Clone()
		if err := update(&tm); err != nil {
			return err
		}
		t.Configs, t.LogStarts = tm.Configs, tm.LogStarts
		return nil
	}))
}

func (s haMetadata) ReserveProducerIDs(n int64) (int64, error) { return s.m.ReserveProducerIDs(n) }

// Close leaves the store open: the node owns it and closes it last.
func (s haMetadata) Close() error { return nil }

// brokerError maps the control plane's sentinels onto the broker's.
func brokerError(err error) error {
	switch {
	case errors.Is(err, controlplane.ErrTopicExists):
		return fmt.Errorf("%w: %w", broker.ErrTopicExists, err)
	case errors.Is(err, controlplane.ErrUnknownTopic):
		return fmt.Errorf("%w: %w", broker.ErrUnknownTopic, err)
	}
	return err
}

// haCluster is the broker's Cluster over the control plane node.
type haCluster struct {
	n    *controlplane.Node
	r    *replication.Role
	self int32 // this node's id: PartitionLeader runs per partition, Self() builds a member record
}

func (c haCluster) Brokers() []broker.ClusterBroker {
	self := c.n.Self()
	members := c.n.Members()
	out := make([]broker.ClusterBroker, 0, len(members)+1)
	seenSelf := false
	for _, m := range members {
		if m.NodeID == self.NodeID {
			m, seenSelf = self, true
		}
		out = append(out, clusterBroker(m))
	}
	if !seenSelf {
		out = append(out, clusterBroker(self))
	}
	return out
}

func clusterBroker(m controlplane.Member) broker.ClusterBroker {
	host, port, err := net.SplitHostPort(m.Advertise)
	if err != nil {
		return broker.ClusterBroker{NodeID: m.NodeID, ReplicaGroup: m.ReplicaGroup}
	}
	p, _ := strconv.ParseInt(port, 10, 32)
	return broker.ClusterBroker{NodeID: m.NodeID, Host: host, Port: int32(p), ReplicaGroup: m.ReplicaGroup}
}

// haCluster answers a produce's leadership once per topic: without this
// method the broker falls back to PartitionLeader per partition, silently.
var _ interface {
	LeadsTopic(topic string) func(partition int32) bool
} = haCluster{}

// LeadsTopic is PartitionLeader's answer for this node over the
// partitions of a topic, resolved once (broker.topicLeader).
func (c haCluster) LeadsTopic(topic string) func(partition int32) bool {
	leads, epoch := c.n.LeadsTopic(topic)
	if !c.r.Writable(epoch) {
		return func(int32) bool { return false }
	}
	return leads
}

func (c haCluster) PartitionLeader(topic string, partition int32) (int32, int32, bool) {
	m, epoch, ok := c.n.PartitionLeader(topic, partition)
	if ok && m.NodeID == c.self && !c.r.Writable(epoch) {
		// Leading, but the epoch's start is not recorded yet.
		return 0, 0, false
	}
	// A partition that moved reports its group's epoch above the base
	// that keeps its epochs growing across moves (broker.MovedEpoch).
	return m.NodeID, broker.ClampEpoch(c.n.Metadata().Epoch(topic, partition).Under(epoch)), ok
}

// Replicas are the live members of the leader's replica group, and in
// sync the leader with the followers its member record names in sync
// (the set it publishes before its high watermark passes a dropped one).
func (c haCluster) Replicas(leader int32) (replicas, isr []int32) {
	lm, ok := controlplane.Member{}, false
	if self := c.n.Self(); self.NodeID == leader {
		lm, ok = self, true
	}
	members := c.n.Members()
	for _, m := range members {
		if !ok && m.NodeID == leader {
			lm, ok = m, true
		}
	}
	if !ok {
		return []int32{leader}, []int32{leader}
	}
	for _, m := range members {
		if m.ReplicaGroup == lm.ReplicaGroup {
			replicas = append(replicas, m.NodeID)
		}
	}
	if !slices.Contains(replicas, leader) {
		replicas = append(replicas, leader)
	}
	isr = append([]int32{leader}, lm.InSync...)
	slices.Sort(replicas)
	slices.Sort(isr)
	return replicas, slices.Compact(isr)
}

func (c haCluster) Status() broker.NodeStatus {
	s := c.n.Elector().State()
	return broker.NodeStatus{NodeID: c.n.Self().NodeID, ReplicaGroup: s.Group, Role: s.Role.String(), Epoch: s.Epoch}
}

// leaseReadMetrics export the lease reads that failed or were ignored: a
// node that cannot read its group's lease cannot take it over when it
// lapses, and one that ignores what it read says why in its log.
type leaseReadMetrics struct{ e *controlplane.Elector }

var (
	leaseReadErrorsDesc = prometheus.NewDesc("unilog_lease_read_errors_total",
		"Lease reads of a contending node that failed (NATS did not answer, or answered an error).", nil, nil)
	leaseReadsIgnoredDesc = prometheus.NewDesc("unilog_lease_reads_ignored_total",
		"Lease reads of a contending node that it did not act on: stale (an older revision than one already seen) or older_epoch (below the highest epoch it has acted on).",
		[]string{"reason"}, nil)
)

func (leaseReadMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- leaseReadErrorsDesc
	ch <- leaseReadsIgnoredDesc
}

func (m leaseReadMetrics) Collect(ch chan<- prometheus.Metric) {
	s := m.e.ReadStats()
	ch <- prometheus.MustNewConstMetric(leaseReadErrorsDesc, prometheus.CounterValue, float64(s.Failed))
	ch <- prometheus.MustNewConstMetric(leaseReadsIgnoredDesc, prometheus.CounterValue, float64(s.Stale), "stale")
	ch <- prometheus.MustNewConstMetric(leaseReadsIgnoredDesc, prometheus.CounterValue, float64(s.OlderEpoch), "older_epoch")
}
