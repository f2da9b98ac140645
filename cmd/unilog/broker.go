package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/internal/bytesize"
	"github.com/unilog/unilog/store"
)

func brokerCommand() *cli.Command {
	env := func(name string) []string { return []string{"UNILOG_" + name} }
	return &cli.Command{
		Name:  "broker",
		Usage: "run a Kafka-protocol broker on a data directory",
		Description: `Serves the Kafka protocol on --listen and /healthz, /metrics, /status and the
console (/ui) on --admin until SIGINT or SIGTERM, then stops accepting, finishes
in-flight requests, flushes and writes a clean checkpoint. A second signal during that shutdown ends the process
at once (the data is safe: the next start recovers from the commit log).

Every flag can also be set by the environment variable shown with it. Sizes take
a plain byte count or a unit: KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB
(powers of 1000).`,
		ArgsUsage: " ",
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "data-dir", Required: true, Usage: "data `DIR` (commit log, consume queues, checkpoint, topics)", EnvVars: env("DATA_DIR")},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9092", Usage: "Kafka listener `HOST:PORT` (port 0 picks a free one)", EnvVars: env("LISTEN")},
			&cli.StringFlag{Name: "admin", Value: "127.0.0.1:9644", Usage: "admin HTTP `HOST:PORT` for /healthz, /metrics and /status (empty disables)", EnvVars: env("ADMIN")},
			&cli.BoolFlag{Name: "admin-ui-write", Usage: "let the console at /ui on the admin port create, grow and delete topics, reset group offsets and delete groups (read-only without)", EnvVars: env("ADMIN_UI_WRITE")},
			&cli.StringFlag{Name: "admin-ui-user", Usage: "with --users: the SASL user `NAME` the console logs in to the Kafka listener as (its ACL grants bound what the console shows and changes)", EnvVars: env("ADMIN_UI_USER")},
			&cli.StringFlag{Name: "admin-ui-password", Usage: "the password of --admin-ui-user (prefer UNILOG_ADMIN_UI_PASSWORD: flags show in ps)", EnvVars: env("ADMIN_UI_PASSWORD")},
			&cli.BoolFlag{Name: "admin-pprof", Usage: "serve Go's profiles under /debug/pprof/ on the admin port (command line, goroutine stacks, CPU, heap and mutex profiles; contended locks are sampled 1 in 100)", EnvVars: env("ADMIN_PPROF")},
			&cli.StringFlag{Name: "start-profile", Usage: "write a CPU profile (pprof) of the start, from exec until the Kafka listener serves, to `FILE`: where a restart's time goes", EnvVars: env("START_PROFILE")},
			&cli.StringFlag{Name: "flush", Value: "async", Usage: "async (background flush every 500ms) or sync (acks=all waits for the flush)", EnvVars: env("FLUSH")},
			&cli.StringFlag{Name: "file-size", Value: "1GiB", Usage: "`SIZE` of each commit log file", EnvVars: env("FILE_SIZE")},
			&cli.StringFlag{Name: "cache-window", Value: "256MiB", Usage: "`SIZE` of the commit log kept in the page cache behind the flushed offset; older pages are dropped after each flush (a consumer further behind reads from disk), or \"off\" to leave them to the kernel", EnvVars: env("CACHE_WINDOW")},
			&cli.IntFlag{Name: "max-mapped-queues", Usage: "consume-queue files mapped at once, `N` (0: 16384); above the partitions written, appends stop unmapping and remapping. Keep well below vm.max_map_count", EnvVars: env("MAX_MAPPED_QUEUES")},
			&cli.DurationFlag{Name: "checkpoint-interval", Value: store.DefaultCheckpointInterval, Usage: "longest time between checkpoints of the consume queues; a crash re-dispatches the log after the last one. Shorter costs a system call per queue written, per checkpoint", EnvVars: env("CHECKPOINT_INTERVAL")},
			&cli.StringFlag{Name: "checkpoint-bytes", Value: "1GiB", Usage: "checkpoint sooner once `SIZE` of log was dispatched since the last one, bounding the replay after a crash", EnvVars: env("CHECKPOINT_BYTES")},
			&cli.BoolFlag{Name: "auto-create-topics", Usage: "create unknown topics on first use, at most 100 per request", EnvVars: env("AUTO_CREATE_TOPICS")},
			&cli.IntFlag{Name: "default-partitions", Value: 1, Usage: "partitions of auto-created topics", EnvVars: env("DEFAULT_PARTITIONS")},
			&cli.StringFlag{Name: "max-message-bytes", Value: "1048588", Usage: "largest record batch accepted, `SIZE` (Kafka's max.message.bytes)", EnvVars: env("MAX_MESSAGE_BYTES")},
			&cli.StringFlag{Name: "max-request-bytes", Value: "100MiB", Usage: "largest request frame accepted, `SIZE`", EnvVars: env("MAX_REQUEST_BYTES")},
			&cli.IntFlag{Name: "max-connections", Value: 4096, Usage: "concurrent client connections; more are closed at accept", EnvVars: env("MAX_CONNECTIONS")},
			&cli.IntFlag{Name: "max-connections-per-ip", Value: 1024, Usage: "concurrent client connections from one address (max.connections.per.ip); more are closed at accept", EnvVars: env("MAX_CONNECTIONS_PER_IP")},
			&cli.DurationFlag{Name: "read-timeout", Value: time.Minute, Usage: "a request whose size has arrived must arrive whole within this", EnvVars: env("READ_TIMEOUT")},
			&cli.DurationFlag{Name: "write-timeout", Value: 30 * time.Second, Usage: "a response not written within this closes the connection", EnvVars: env("WRITE_TIMEOUT")},
			&cli.BoolFlag{Name: "recover-truncate", Usage: "cut the commit log at damage found before the last flushed mark (losing the records from there on) instead of refusing to start", EnvVars: env("RECOVER_TRUNCATE")},
			&cli.IntFlag{Name: "node-id", Usage: "this node's id, unique in the cluster (Metadata, leases, membership)", EnvVars: env("NODE_ID")},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "trace, debug, info, warn or error", EnvVars: env("LOG_LEVEL")},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "text or json", EnvVars: env("LOG_FORMAT")},
		}, controlPlaneFlags()...), brokerSecurityFlags()...),
		Action: runBroker,
	}
}

// storeOptions turns the storage flags into the options of the data
// directory's store; runBroker fills in its Dir and Logger and gives
// Prepared.Open the Live.
func storeOptions(c *cli.Context) (store.Options, error) {
	so := store.Options{
		CommitLog:          commitlog.Options{RecoverTruncate: c.Bool("recover-truncate")},
		ConsumeQueue:       consumequeue.Options{MaxMapped: c.Int("max-mapped-queues")},
		CheckpointInterval: c.Duration("checkpoint-interval"),
	}
	if so.ConsumeQueue.MaxMapped < 0 {
		return so, fmt.Errorf("--max-mapped-queues %d: must not be negative", so.ConsumeQueue.MaxMapped)
	}
	if so.CheckpointInterval <= 0 {
		return so, fmt.Errorf("--checkpoint-interval %s: must be positive", so.CheckpointInterval)
	}
	var err error
	if so.CheckpointBytes, err = bytesize.ParseIn(c.String("checkpoint-bytes"), 1, math.MaxInt64); err != nil {
		return so, fmt.Errorf("--checkpoint-bytes: %w", err)
	}
	if so.CommitLog.FlushMode, err = commitlog.ParseFlushMode(c.String("flush")); err != nil {
		return so, fmt.Errorf("--flush: %w", err)
	}
	if so.CommitLog.FileSize, err = bytesize.ParseIn(c.String("file-size"), 1, math.MaxInt64); err != nil {
		return so, fmt.Errorf("--file-size: %w", err)
	}
	if w := c.String("cache-window"); w == "off" {
		so.CommitLog.CacheWindow = -1
	} else if so.CommitLog.CacheWindow, err = bytesize.ParseIn(w, 1, math.MaxInt64); err != nil {
		return so, fmt.Errorf("--cache-window: %w", err)
	}
	return so, nil
}

// brokerConfig turns the flags into a broker.Config logging to logOut.
func brokerConfig(c *cli.Context, logOut io.Writer) (broker.Config, error) {
	cfg := broker.Config{
		DataDir:          c.String("data-dir"),
		Listen:           c.String("listen"),
		Admin:            c.String("admin"),
		AdminPprof:       c.Bool("admin-pprof"),
		AutoCreateTopics: c.Bool("auto-create-topics"),
		ReadTimeout:      c.Duration("read-timeout"),
		WriteTimeout:     c.Duration("write-timeout"),
	}
	for _, f := range []struct {
		name string
		dst  *int32
	}{{"max-message-bytes", &cfg.MaxMessageBytes}, {"max-request-bytes", &cfg.MaxRequestBytes}} {
		n, err := bytesize.ParseIn(c.String(f.name), 1, math.MaxInt32)
		if err != nil {
			return cfg, fmt.Errorf("--%s: %w", f.name, err)
		}
		*f.dst = int32(n)
	}
	for _, f := range []struct {
		name string
		min  int
		set  func(int)
	}{
		{"default-partitions", 1, func(n int) { cfg.DefaultPartitions = int32(n) }},
		{"max-connections", 1, func(n int) { cfg.MaxConnections = n }},
		{"max-connections-per-ip", 1, func(n int) { cfg.MaxConnectionsPerIP = n }},
		{"node-id", 0, func(n int) { cfg.NodeID = int32(n) }},
	} {
		n := c.Int(f.name)
		if n < f.min || n > math.MaxInt32 {
			return cfg, fmt.Errorf("--%s %d: must be between %d and %d", f.name, n, f.min, math.MaxInt32)
		}
		f.set(n)
	}
	logger, err := newBrokerLogger(c.String("log-level"), c.String("log-format"), logOut)
	if err != nil {
		return cfg, err
	}
	cfg.Logger = logger
	return cfg, applyBrokerSecurity(c, &cfg, logger)
}

func newBrokerLogger(level, format string, out io.Writer) (*logrus.Logger, error) {
	l := logrus.New()
	l.SetOutput(out)
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	l.SetLevel(lvl)
	switch format {
	case "text":
		l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: time.RFC3339Nano})
	case "json":
		l.SetFormatter(&logrus.JSONFormatter{TimestampFormat: time.RFC3339Nano})
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
	return l, nil
}

func runBroker(c *cli.Context) error {
	cfg, err := brokerConfig(c, c.App.ErrWriter)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	so, err := storeOptions(c)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	log := cfg.Logger
	stopProfile, err := startProfile(c.String("start-profile"))
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	defer func() { _ = stopProfile() }()
	restoreGC := brokerStartGC()
	defer restoreGC()

	// Subscribe before Start so a signal during recovery is not lost.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	// The store opens its files and replays its queues' journal while the
	// control plane starts; it recovers once the metadata is there, since
	// it dispatches only the records of the topics that metadata holds.
	so.Dir, so.Logger = cfg.DataDir, log
	type preparedStore struct {
		p   *store.Prepared
		err error
	}
	prepared := make(chan preparedStore, 1)
	go func() {
		p, err := store.Prepare(so)
		prepared <- preparedStore{p, err}
	}()
	cp, err := startControlPlane(c, &cfg, so.CommitLog.FlushMode == commitlog.FlushSync)
	if err != nil {
		if ps := <-prepared; ps.p != nil {
			ps.p.Close()
		}
		return fmt.Errorf("broker: control plane: %w", err)
	}
	cfg.Producers = broker.PreloadProducers(cfg.DataDir, cfg.Metadata)
	ps := <-prepared
	var st *store.Store
	if err = ps.err; err == nil {
		st, err = ps.p.Open(broker.Live(cfg.Metadata))
	}
	if err != nil {
		cfg.Producers.Abandon()
	}
	if errors.Is(err, commitlog.ErrDamaged) {
		cfg.Metadata.Close()
		cp.close()
		return fmt.Errorf("broker: open storage: %w\n\nRecords that were flushed to disk are damaged. See where with\n  unilog inspect --verify --data-dir %s\nthen, to cut the log there and lose the records from the damage on, restart with --recover-truncate", err, cfg.DataDir)
	}
	if err != nil {
		cfg.Metadata.Close()
		cp.close()
		return fmt.Errorf("broker: open storage: %w", err)
	}
	cfg.Storage = st
	b, err := broker.Start(cfg)
	if err != nil {
		cp.close()
		return err
	}
	if err := cp.repl.Attach(b, st); err != nil {
		b.Close()
		cp.close()
		return fmt.Errorf("broker: replication: %w", err)
	}
	cp.repl.Settle(c.Duration("lease-duration"))
	cp.dropRemoteDeletes(b)
	cp.node.SetLogEndOffset(b.LogEndOffset)
	if c.String("advertise") == "" {
		cp.node.SetAdvertise(b.Addr())
	}
	stopConsole, err := startConsole(b, cfg, cp.node, consoleOptions{
		write: c.Bool("admin-ui-write"), user: c.String("admin-ui-user"), password: c.String("admin-ui-password")})
	if err != nil {
		b.Close()
		cp.close()
		return fmt.Errorf("broker: %w", err)
	}
	admin := "disabled"
	if a := b.AdminAddr(); a != "" {
		admin = "http://" + a + "/metrics"
	}
	fmt.Fprintf(c.App.Writer, "control plane %s: node %d, replica group %s\n", cp.url, cfg.NodeID, c.String("replica-group"))
	fmt.Fprintf(c.App.Writer, "unilog broker listening on %s (Kafka), admin %s, data %s\n", b.Addr(), admin, cfg.DataDir)
	restoreGC()
	if err := stopProfile(); err != nil {
		log.WithError(err).Warn("start profile not written")
	}

	select {
	case s := <-sigs:
		log.WithField("signal", s.String()).Info("shutting down: finishing in-flight requests and flushing")
	case <-c.Context.Done():
		log.Info("shutting down: finishing in-flight requests and flushing")
	}
	// Back to the default action: a second signal ends the process now.
	signal.Stop(sigs)
	start := time.Now()
	stopConsole()
	// A leader hands its lease to an in-sync follower first, which takes
	// the writes from here on; then the broker closes. It takes no new
	// connection from here: its clients are on their way to the new leader.
	b.StopAccepting()
	cp.handOver(c.Duration("lease-duration"))
	err = b.Close()
	cp.close()
	if err != nil {
		log.WithError(err).Error("shutdown incomplete")
		return fmt.Errorf("broker: close: %w", err)
	}
	log.WithField("took", time.Since(start).Round(time.Millisecond).String()).Info("broker stopped cleanly")
	return nil
}
