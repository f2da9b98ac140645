package broker

import (
	"github.com/unilog/unilog/internal/fileops"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
)

// Config configures one broker. Zero values take the defaults documented on
// each field, so Config{DataDir: dir, Listen: "127.0.0.1:0"} is a working
// broker.
type Config struct {
	// DataDir holds the topic metadata file and the broker's snapshots
	// beside the store (package store) that Storage serves from it.
	DataDir string
	// Listen is the Kafka listener address (":0" picks a free port).
	// Default 127.0.0.1:9092.
	Listen string
	// Admin is the HTTP address serving /healthz, /metrics and /status
	// (admin.go); empty disables the admin server.
	Admin string
	// AdminPprof serves Go's profiles under /debug/pprof/ on the admin
	// port. Off by default: they show whoever reaches the port the
	// command line, every goroutine's stack and the heap.
	AdminPprof bool
	// AutoCreateTopics creates unknown topics named by Metadata (when the
	// client allows it) and Produce requests, at most
	// maxAutoCreatePerRequest (100) per request.
	AutoCreateTopics bool
	// DefaultPartitions is the partition count of auto-created topics and
	// of CreateTopics asking for -1. Default 1.
	DefaultPartitions int32
	// MaxMessageBytes caps one record batch (Kafka's max.message.bytes).
	// Default 1 MiB + 12 bytes, as Kafka.
	MaxMessageBytes int32
	// MaxRequestBytes caps one request frame (socket.request.max.bytes).
	// Default 100 MiB.
	MaxRequestBytes int32
	// MaxConnections caps concurrently open client connections; further
	// connections are closed right after accept. Default 4096.
	MaxConnections int
	// MaxConnectionsPerIP caps the open connections from one client
	// address (Kafka's max.connections.per.ip), so one host cannot take
	// every slot. Default 1024, a quarter of the default MaxConnections.
	MaxConnectionsPerIP int
	// IdleTimeout closes a connection that sends no request for this
	// long (Kafka's connections.max.idle.ms). Default 10 minutes;
	// negative disables.
	IdleTimeout time.Duration
	// ReadTimeout bounds receiving the rest of a request once its size
	// has arrived (started again after a wait for MaxInflightBytes).
	// Default 1 minute; negative disables.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing one response. Default 30s; negative
	// disables.
	WriteTimeout time.Duration
	// GroupMinSessionTimeout is the shortest session timeout a group
	// member may ask for (group.min.session.timeout.ms). Default 6s.
	GroupMinSessionTimeout time.Duration
	// MaxInflightBytes caps the request bytes held by all connections
	// together (queued.max.request.bytes), counted as they arrive; at
	// least MaxRequestBytes. When every frame holding some waits for more,
	// one is let finish beyond it (limits.go). Default 512 MiB.
	MaxInflightBytes int64
	// MaxFetchBytes caps one Fetch response (fetch.max.bytes) whatever the
	// client asks. Default 55 MiB, as Kafka.
	MaxFetchBytes int32
	// Security: TLS, SASL and ACLs (security.go); nil is a plaintext,
	// unauthenticated listener allowing everything.
	Security *Security
	// NodeID is this broker's id in Metadata responses.
	NodeID int32
	// Metadata, when set, replaces the metadata file in DataDir (the
	// control plane's store); the broker closes it.
	Metadata MetadataStore
	// Cluster, when set, says who leads each partition; nil is a single
	// node leading everything.
	Cluster Cluster
	// Moves, with Cluster, moves partitions between replica groups
	// (move.go); nil: they stay where they are.
	Moves Moves
	// Replication, when set, is the data plane of this node's replica
	// group: consumers see only what it has replicated (its high
	// watermark).
	Replication Replication
	// SyncReplication makes acks=-1 produces and offset commits wait for
	// Replication.WaitReplicated (--replication sync); otherwise they do
	// not wait for followers.
	SyncReplication bool
	// AwaitRole is set when the node's role in its replica group is
	// decided after Start (by Promote or Demote): until the first of them
	// it coordinates no group or transaction and appends nothing of its
	// own. What it loaded from its own log at Start may be an earlier
	// term's (a deposed leader restarting), and a follower's log may
	// still be truncated; answered from it, an offset fetch would read
	// back commits the current leader has since replaced.
	AwaitRole bool
	// Metrics, when set, collects the metrics of the parts wired in around
	// the broker (the control plane's), served on the admin port with the
	// broker's own.
	Metrics prometheus.Collector
	// Logger receives structured logs; nil uses logrus' standard logger.
	Logger logrus.FieldLogger
	// FS is the durability seam of the broker's own files in DataDir (the
	// topic metadata, the offsets and producer-state snapshots): nil is
	// fileops.OS; Open gives it the store's when the store has one, so a
	// power-cut test sees every file of the data directory.
	FS fileops.Replacer
	// Producers, when set, is the producer-state snapshot of DataDir read
	// while the store opened (PreloadProducers over Metadata); nil: Start
	// reads it itself.
	Producers *ProducerPreload
	// Storage is the data the broker serves, normally the *store.Store of
	// DataDir opened over Metadata (Open does both); required by Start.
	// The broker closes it.
	Storage Storage
}

const (
	defaultListen           = "127.0.0.1:9092"
	defaultMaxMessageBytes  = 1<<20 + 12
	defaultMaxRequestBytes  = 100 << 20
	defaultMaxConnections   = 4096
	defaultConnectionsPerIP = 1024
	defaultIdleTimeout      = 10 * time.Minute
	defaultReadTimeout      = time.Minute
	defaultInflightBytes    = 512 << 20
	defaultMaxFetchBytes    = 55 << 20
	defaultWriteTimeout     = 30 * time.Second
)

func (c Config) withDefaults() Config {
	if c.FS == nil {
		c.FS = fileops.OS{}
	}
	if c.Listen == "" {
		c.Listen = defaultListen
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = 1
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = defaultMaxMessageBytes
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = defaultMaxRequestBytes
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = defaultMaxConnections
	}
	if c.MaxConnectionsPerIP <= 0 {
		c.MaxConnectionsPerIP = defaultConnectionsPerIP
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = defaultIdleTimeout
	}
	if c.MaxInflightBytes <= 0 {
		c.MaxInflightBytes = max(defaultInflightBytes, int64(c.MaxRequestBytes))
	}
	if c.MaxFetchBytes <= 0 {
		c.MaxFetchBytes = defaultMaxFetchBytes
	}
	c.Security = c.Security.withDefaults()
	if c.ReadTimeout == 0 {
		c.ReadTimeout = defaultReadTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = defaultWriteTimeout
	}
	if c.Logger == nil {
		c.Logger = logrus.StandardLogger()
	}
	return c
}
