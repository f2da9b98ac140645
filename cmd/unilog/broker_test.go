package main

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/testnet"
	"github.com/unilog/unilog/store"
)

// parsedBrokerConfig runs the broker command's flag parsing (not Start).
// storeFlags are the store options the broker's flags set.
type storeFlags struct {
	Flush              commitlog.FlushMode
	FileSize           int64
	CacheWindow        int64
	RecoverTruncate    bool
	MaxMappedQueues    int
	CheckpointInterval time.Duration
	CheckpointBytes    int64
}

func parsedBrokerConfig(t *testing.T, args ...string) (broker.Config, string, error) {
	cfg, _, logs, err := parsedNodeConfig(t, args...)
	return cfg, logs, err
}

func parsedNodeConfig(t *testing.T, args ...string) (broker.Config, storeFlags, string, error) {
	t.Helper()
	cmd := brokerCommand()
	var cfg broker.Config
	var so store.Options
	var cerr error
	var logs bytes.Buffer
	cmd.Action = func(c *cli.Context) error {
		if cfg, cerr = brokerConfig(c, &logs); cerr == nil {
			so, cerr = storeOptions(c)
		}
		return nil
	}
	app := &cli.App{Name: "unilog", Commands: []*cli.Command{cmd}, Writer: &bytes.Buffer{}, ErrWriter: &bytes.Buffer{},
		ExitErrHandler: func(*cli.Context, error) {}}
	if err := app.Run(append([]string{"unilog", "broker"}, args...)); err != nil {
		return cfg, storeFlags{}, "", err
	}
	if cerr == nil {
		cfg.Logger.Info("probe")
	}
	sf := storeFlags{
		Flush: so.CommitLog.FlushMode, FileSize: so.CommitLog.FileSize, CacheWindow: so.CommitLog.CacheWindow, RecoverTruncate: so.CommitLog.RecoverTruncate,
		MaxMappedQueues: so.ConsumeQueue.MaxMapped, CheckpointInterval: so.CheckpointInterval, CheckpointBytes: so.CheckpointBytes,
	}
	return cfg, sf, logs.String(), cerr
}

func TestBrokerFlags(t *testing.T) {
	cfg, sf, logs, err := parsedNodeConfig(t, "--data-dir", "/d")
	if err != nil {
		t.Fatal(err)
	}
	want := broker.Config{
		DataDir: "/d", Listen: "127.0.0.1:9092", Admin: "127.0.0.1:9644",
		DefaultPartitions: 1, MaxMessageBytes: 1<<20 + 12, MaxRequestBytes: 100 << 20,
		MaxConnections: 4096, MaxConnectionsPerIP: 1024, IdleTimeout: 10 * time.Minute, ReadTimeout: time.Minute, WriteTimeout: 30 * time.Second,
		MaxInflightBytes: 512 << 20, MaxFetchBytes: 55 << 20,
	}
	wantStore := storeFlags{Flush: commitlog.FlushAsync, FileSize: 1 << 30, CacheWindow: commitlog.DefaultCacheWindow, CheckpointInterval: 10 * time.Second, CheckpointBytes: 1 << 30}
	cfg.Logger = nil
	if cfg != want || sf != wantStore {
		t.Errorf("defaults:\n got %+v %+v\nwant %+v %+v", cfg, sf, want, wantStore)
	}
	if !strings.Contains(logs, `level=info msg=probe`) {
		t.Errorf("default logger writes %q, want logrus text at info", logs)
	}

	cfg, sf, logs, err = parsedNodeConfig(t, "--data-dir", "/x", "--listen", "0.0.0.0:19092", "--admin", "", "--flush", "sync",
		"--file-size", "64MiB", "--auto-create-topics", "--default-partitions", "12", "--max-message-bytes", "4MiB",
		"--max-request-bytes", "8MiB", "--max-connections", "10", "--max-connections-per-ip", "3", "--read-timeout", "1m", "--write-timeout", "5s",
		"--node-id", "3", "--log-level", "warn", "--log-format", "json", "--recover-truncate", "--max-mapped-queues", "60000",
		"--checkpoint-interval", "2s", "--checkpoint-bytes", "64MiB", "--admin-pprof", "--cache-window", "off")
	if err != nil {
		t.Fatal(err)
	}
	if logs != "" {
		t.Errorf("info logged at level warn: %q", logs)
	}
	cfg.Logger.(*logrus.Logger).Warn("probe")
	want = broker.Config{
		DataDir: "/x", Listen: "0.0.0.0:19092", Admin: "", AdminPprof: true,
		AutoCreateTopics: true, DefaultPartitions: 12, MaxMessageBytes: 4 << 20, MaxRequestBytes: 8 << 20,
		MaxConnections: 10, MaxConnectionsPerIP: 3, IdleTimeout: 10 * time.Minute, ReadTimeout: time.Minute, WriteTimeout: 5 * time.Second, NodeID: 3,
		MaxInflightBytes: 512 << 20, MaxFetchBytes: 55 << 20,
	}
	wantStore = storeFlags{Flush: commitlog.FlushSync, FileSize: 64 << 20, CacheWindow: -1, RecoverTruncate: true, MaxMappedQueues: 60000,
		CheckpointInterval: 2 * time.Second, CheckpointBytes: 64 << 20}
	cfg.Logger = nil
	if cfg != want || sf != wantStore {
		t.Errorf("flags:\n got %+v %+v\nwant %+v %+v", cfg, sf, want, wantStore)
	}

	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{}, `Required flag "data-dir" not set`},
		{[]string{"--data-dir", "d", "--flush", "never"}, "--flush"},
		{[]string{"--data-dir", "d", "--file-size", "big"}, "--file-size"},
		{[]string{"--data-dir", "d", "--cache-window", "0"}, "--cache-window"},
		{[]string{"--data-dir", "d", "--max-message-bytes", "3GiB"}, "--max-message-bytes"},
		{[]string{"--data-dir", "d", "--default-partitions", "0"}, "--default-partitions"},
		{[]string{"--data-dir", "d", "--max-connections", "-1"}, "--max-connections"},
		{[]string{"--data-dir", "d", "--max-connections-per-ip", "0"}, "--max-connections-per-ip"},
		{[]string{"--data-dir", "d", "--max-mapped-queues", "-1"}, "--max-mapped-queues"},
		{[]string{"--data-dir", "d", "--checkpoint-interval", "0s"}, "--checkpoint-interval"},
		{[]string{"--data-dir", "d", "--checkpoint-bytes", "0"}, "--checkpoint-bytes"},
		{[]string{"--data-dir", "d", "--log-level", "loud"}, "--log-level"},
		{[]string{"--data-dir", "d", "--log-format", "xml"}, "--log-format"},
	} {
		if _, _, err := parsedBrokerConfig(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%q: error %v, want one containing %q", tc.args, err, tc.wantErr)
		}
	}
}

// The broker reads sizes as the bench does: "unilog bench --file-size 512M"
// worked while "unilog broker --file-size 512M" was refused.
func TestBrokerSizesReadAsBenchReadsThem(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{{"512M", 512 << 20}, {"1.5GiB", 3 << 29}, {"64mib", 64 << 20}, {"1GB", 1e9}, {"1048576", 1 << 20}} {
		_, sf, _, err := parsedNodeConfig(t, "--data-dir", "/d", "--file-size", tc.in)
		if err != nil || sf.FileSize != tc.want {
			t.Errorf("--file-size %s: %d, %v; want %d", tc.in, sf.FileSize, err, tc.want)
		}
	}
}

func TestBrokerFlagsFromEnvironment(t *testing.T) {
	for k, v := range map[string]string{
		"UNILOG_DATA_DIR": "/env", "UNILOG_LISTEN": "127.0.0.1:1", "UNILOG_ADMIN": "127.0.0.1:2", "UNILOG_FLUSH": "sync",
		"UNILOG_FILE_SIZE": "16MiB", "UNILOG_AUTO_CREATE_TOPICS": "true", "UNILOG_DEFAULT_PARTITIONS": "7",
		"UNILOG_MAX_MESSAGE_BYTES": "2MiB", "UNILOG_MAX_REQUEST_BYTES": "3MiB", "UNILOG_MAX_CONNECTIONS": "5", "UNILOG_MAX_CONNECTIONS_PER_IP": "4",
		"UNILOG_READ_TIMEOUT": "2m", "UNILOG_WRITE_TIMEOUT": "3s", "UNILOG_NODE_ID": "9",
		"UNILOG_LOG_LEVEL": "error", "UNILOG_LOG_FORMAT": "json", "UNILOG_RECOVER_TRUNCATE": "true",
		"UNILOG_CHECKPOINT_INTERVAL": "30s", "UNILOG_CHECKPOINT_BYTES": "2GiB", "UNILOG_CACHE_WINDOW": "4GiB",
	} {
		t.Setenv(k, v)
	}
	cfg, sf, _, err := parsedNodeConfig(t)
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.Logger.(*logrus.Logger); l.GetLevel() != logrus.ErrorLevel {
		t.Errorf("log level %v from UNILOG_LOG_LEVEL=error", l.GetLevel())
	} else if _, ok := l.Formatter.(*logrus.JSONFormatter); !ok {
		t.Errorf("formatter %T from UNILOG_LOG_FORMAT=json", l.Formatter)
	}
	cfg.Logger = nil
	want := broker.Config{
		DataDir: "/env", Listen: "127.0.0.1:1", Admin: "127.0.0.1:2",
		AutoCreateTopics: true, DefaultPartitions: 7, MaxMessageBytes: 2 << 20, MaxRequestBytes: 3 << 20,
		MaxConnections: 5, MaxConnectionsPerIP: 4, IdleTimeout: 10 * time.Minute, ReadTimeout: 2 * time.Minute, WriteTimeout: 3 * time.Second, NodeID: 9,
		MaxInflightBytes: 512 << 20, MaxFetchBytes: 55 << 20,
	}
	wantStore := storeFlags{Flush: commitlog.FlushSync, FileSize: 16 << 20, CacheWindow: 4 << 30, RecoverTruncate: true, CheckpointInterval: 30 * time.Second, CheckpointBytes: 2 << 30}
	if cfg != want || sf != wantStore {
		t.Errorf("from environment:\n got %+v %+v\nwant %+v %+v", cfg, sf, want, wantStore)
	}
	// A flag beats its environment variable.
	if cfg, _, err := parsedBrokerConfig(t, "--listen", "127.0.0.1:3"); err != nil || cfg.Listen != "127.0.0.1:3" {
		t.Errorf("--listen over UNILOG_LISTEN: %q, %v", cfg.Listen, err)
	}
}

var listeningLine = regexp.MustCompile(`unilog broker listening on (127\.0\.0\.1:\d+) \(Kafka\), admin (\S+), data (\S+)`)

// runBrokerCommand runs `unilog broker` in-process until ctx ends and
// returns the Kafka address it printed, plus a channel with the result.
func runBrokerCommand(ctx context.Context, t *testing.T, args ...string) (string, <-chan cliResult) {
	t.Helper()
	out, done := startBrokerCommand(ctx, t, args...)
	return listeningLine.FindStringSubmatch(out)[1], done
}

// startBrokerCommand runs `unilog broker` in-process until ctx ends and
// returns what it printed up to its listening line. The embedded NATS
// takes a free port unless args say otherwise.
func startBrokerCommand(ctx context.Context, t *testing.T, args ...string) (string, <-chan cliResult) {
	t.Helper()
	if !slices.Contains(args, "--nats-listen") && !slices.Contains(args, "--nats") {
		args = append(args, "--nats-listen", "127.0.0.1:0")
	}
	var stdout, stderr syncBuffer
	done := make(chan cliResult, 1)
	go func() {
		err := testApp(strings.NewReader(""), &stdout, &stderr).RunContext(ctx, append([]string{"unilog", "broker"}, args...))
		done <- cliResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if out := stdout.String(); listeningLine.MatchString(out) {
			return out, done
		}
		select {
		case r := <-done:
			t.Fatalf("broker command ended before listening: %v\n%s\n%s", r.err, r.stdout, r.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("broker command printed no address:\n%s\n%s", stdout.String(), stderr.String())
	return "", nil
}

func TestBrokerCommandServesAndStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--file-size", "8MiB", "--flush", "sync"}

	ctx, cancel := context.WithCancel(context.Background())
	addr, done := runBrokerCommand(ctx, t, args...)
	createTopic(t, addr, "kept", 3)
	mustRun(t, "one\ntwo\nthree\n", "produce", "--brokers", addr, "--topic", "kept", "--parse-key")
	cancel()
	r := <-done
	if r.err != nil {
		t.Fatalf("broker command: %v\n%s", r.err, r.stderr)
	}
	if m := listeningLine.FindStringSubmatch(r.stdout); m == nil || !strings.HasPrefix(m[2], "http://127.0.0.1:") || m[3] != dir {
		t.Errorf("listening line %q", r.stdout)
	}
	for _, want := range []string{"shutting down", "broker stopped cleanly"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("logs lack %q:\n%s", want, r.stderr)
		}
	}

	// The same data directory again: topic and records are still there.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	addr, done = runBrokerCommand(ctx, t, append(args, "--log-format", "json")...)
	if list := mustRun(t, "", "topic", "list", "--brokers", addr).stdout; !regexp.MustCompile(`(?m)^kept\s+3$`).MatchString(list) {
		t.Errorf("after restart, topic list:\n%s", list)
	}
	out := mustRun(t, "", "consume", "--brokers", addr, "--topic", "kept").stdout
	if got := strings.Fields(out); len(got) != 3 {
		t.Errorf("after restart consumed %q, want one two three", out)
	}
	cancel()
	if r := <-done; r.err != nil || !strings.Contains(r.stderr, `"msg":"broker stopped cleanly"`) {
		t.Errorf("second run: %v\n%s", r.err, r.stderr)
	}
}

func TestBrokerCommandFailsOnBusyPort(t *testing.T) {
	addr := startTestBroker(t)
	r := runCLI(t, "", "broker", "--data-dir", t.TempDir(), "--listen", addr, "--admin", "", "--file-size", "8MiB", "--nats-listen", "127.0.0.1:0")
	if r.err == nil || !strings.Contains(r.err.Error(), "address already in use") {
		t.Fatalf("second broker on %s: %v", addr, r.err)
	}
}

// TestBrokerCommandControlPlaneFails: the store opens while the control
// plane starts; a control plane that cannot start ends the command with
// its error and releases the data directory, which the next start opens.
func TestBrokerCommandControlPlaneFails(t *testing.T) {
	dir := t.TempDir()
	args := []string{"broker", "--data-dir", dir, "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--file-size", "8MiB"}
	r := runCLI(t, "", append(args, "--nats", "nats://"+testnet.FreeAddr(t))...)
	if r.err == nil || !strings.Contains(r.err.Error(), "control plane") {
		t.Fatalf("broker with no NATS to reach: %v, want a control plane error", r.err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := runBrokerCommand(ctx, t, args[1:]...)
	createTopic(t, addr, "after", 1)
	cancel()
	if r := <-done; r.err != nil {
		t.Fatalf("broker after the failed start: %v\n%s", r.err, r.stderr)
	}
}
