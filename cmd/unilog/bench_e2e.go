package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/bench"
	"github.com/unilog/unilog/internal/bytesize"
)

// The end-to-end benchmarks: load through a client protocol against a
// running broker (produce, consume) or against systems the benchmark starts
// itself (compare, which runs each one with the hidden `bench serve`).

// loadFlags are the workload flags produce and compare share; partitions
// is the --partitions flag, which differs.
func loadFlags(partitions cli.Flag) []cli.Flag {
	return []cli.Flag{
		partitions,
		&cli.StringFlag{Name: "message-size", Value: "1KiB", Usage: "value `SIZE` of each record (at least 8 bytes: the send time stamp)"},
		&cli.Int64Flag{Name: "records", Usage: "records to produce (default: until --duration ends)"},
		&cli.DurationFlag{Name: "duration", Usage: "bound on producing (and on reading back)"},
		&cli.IntFlag{Name: "producers", Value: 4, Usage: "producer connections"},
		&cli.IntFlag{Name: "acks", Value: -1, Usage: "0, 1 or -1 (all: under --flush sync waits for the fsync)"},
		&cli.DurationFlag{Name: "linger", Value: 5 * time.Millisecond, Usage: "producer linger"},
		&cli.StringFlag{Name: "batch-bytes", Value: "1MB", Usage: "producer batch.max.bytes"},
		&cli.StringFlag{Name: "compression", Value: "none", Usage: "Kafka producers' batch compression: none, gzip, snappy, lz4 or zstd"},
		&cli.IntFlag{Name: "max-in-flight", Value: bench.DefaultMaxInFlight, Usage: "unacknowledged records per producer connection, the same bound for every system (franz-go's buffer, JetStream's pending publishes)"},
		&cli.Float64Flag{Name: "rate", Usage: "records/s over all producers (0: as fast as acknowledged); latency counts from when each record was due"},
		&cli.StringFlag{Name: "json", Usage: "write the result(s) as JSON to this `FILE`"},
		&cli.StringFlag{Name: "plot", Usage: "draw to this .svg or .png `FILE`"},
	}
}

func benchProduceCommand() *cli.Command {
	return &cli.Command{
		Name:  "produce",
		Usage: "Kafka-protocol produce load through franz-go: records/s, MB/s, latency percentiles",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "brokers", Aliases: []string{"b"}, Value: defaultBrokers, Usage: "seed brokers, `HOST:PORT,...`"},
			&cli.StringFlag{Name: "topic", Value: "bench", Usage: "topic, created with --partitions when missing"},
			&cli.DurationFlag{Name: "latency-warm-up", Usage: "with --rate, leave the records due in the run's first `DURATION` out of its latencies (sent and acknowledged as usual; the JSON keeps the whole run's under whole_run)"},
		}, loadFlags(&cli.IntFlag{Name: "partitions", Value: 1, Usage: "partitions of the topic"})...),
		Action: runBenchProduce,
	}
}

// kafkaClientOf reads --brokers and --topic; acks=-1 is what a consumer's
// client is validated with.
func kafkaClientOf(c *cli.Context) (bench.KafkaClient, error) {
	brokers, err := splitBrokerList(c.String("brokers"))
	return bench.KafkaClient{Brokers: brokers, Topic: c.String("topic"), Acks: -1}, err
}

// producerOf reads the producer flags into kc.
func producerOf(c *cli.Context, kc *bench.KafkaClient) error {
	n, err := bytesize.Parse(c.String("batch-bytes"))
	if err != nil {
		return fmt.Errorf("--batch-bytes: %w", err)
	}
	kc.Acks, kc.Linger, kc.BatchBytes, kc.MaxInFlight = c.Int("acks"), c.Duration("linger"), int(n), c.Int("max-in-flight")
	kc.Compression = c.String("compression")
	return nil
}

func loadOf(c *cli.Context) (bench.Load, error) {
	size, err := bytesize.Parse(c.String("message-size"))
	if err != nil {
		return bench.Load{}, fmt.Errorf("--message-size: %w", err)
	}
	return bench.Load{
		MessageSize: int(size),
		Records:     c.Int64("records"),
		Duration:    c.Duration("duration"),
		Producers:   c.Int("producers"),
		Rate:        c.Float64("rate"),
		Progress:    c.String("json") == "" && bench.StderrIsTerminal(),
	}, nil
}

func runBenchProduce(c *cli.Context) error {
	kc, err := kafkaClientOf(c)
	if err == nil {
		err = producerOf(c, &kc)
	}
	if err != nil {
		return fmt.Errorf("bench produce: %w", err)
	}
	load, err := loadOf(c)
	if err != nil {
		return fmt.Errorf("bench produce: %w", err)
	}
	load.LatencyAfter = c.Duration("latency-warm-up")
	if load.LatencyAfter > 0 && load.Rate == 0 {
		return errors.New("bench produce: --latency-warm-up needs --rate: an unpaced run's records are due when sent")
	}
	load.Partitions = c.Int("partitions")
	res, err := bench.RunProduce(c.Context, kc, load)
	if err != nil {
		return fmt.Errorf("bench produce: %w", err)
	}
	return benchOutputs{
		table: func(w io.Writer) error {
			fmt.Fprintf(w, "produced records=%d errors=%d bytes=%d elapsed=%.3fs records/s=%.0f MB/s=%.1f latency ms p50=%.2f p99=%.2f p999=%.2f max=%.2f\n",
				res.Records, res.Errors, res.Bytes, res.Seconds, res.RecordsPerS, res.MBPerS, res.P50Ms, res.P99Ms, res.P999Ms, res.MaxMs)
			if res.FirstError != "" {
				fmt.Fprintf(c.App.ErrWriter, "first error: %s\n", res.FirstError)
			}
			return nil
		},
		json: func(path string) error { return bench.WriteProduceJSON(path, res) },
		plot: func(path string) error { return bench.WriteLatencyPlot(path, res) },
	}.write(c)
}

func benchConsumeCommand() *cli.Command {
	return &cli.Command{
		Name:  "consume",
		Usage: "read every partition of a topic from its start (assigned, no group): catch-up rate and produce-to-consume latency",
		Description: "Latency is from the send time stamped into each value by `bench produce`: run both at once for\n" +
			"produce-to-consume latency; after the fact it is the records' age.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "brokers", Aliases: []string{"b"}, Value: defaultBrokers, Usage: "seed brokers, `HOST:PORT,...`"},
			&cli.StringFlag{Name: "topic", Value: "bench", Usage: "topic to read"},
			&cli.Int64Flag{Name: "records", Usage: "records to read (default: all stored when it starts)"},
			&cli.DurationFlag{Name: "duration", Usage: "give up after this long (0: never)"},
			&cli.StringFlag{Name: "json", Usage: "write the result as JSON to this `FILE`"},
		},
		Action: runBenchConsume,
	}
}

func runBenchConsume(c *cli.Context) error {
	kc, err := kafkaClientOf(c)
	if err != nil {
		return fmt.Errorf("bench consume: %w", err)
	}
	res, err := bench.RunConsume(c.Context, kc, c.Int64("records"), c.Duration("duration"), c.String("json") == "" && bench.StderrIsTerminal())
	if err != nil {
		return fmt.Errorf("bench consume: %w", err)
	}
	return benchOutputs{
		table: func(w io.Writer) error {
			e := res.EndToEnd
			_, err := fmt.Fprintf(w, "consumed records=%d of stored=%d bytes=%d elapsed=%.3fs records/s=%.0f MB/s=%.1f produce-to-consume ms p50=%.2f p99=%.2f p999=%.2f max=%.2f\n",
				res.Records, res.Stored, res.Bytes, res.Seconds, res.RecordsPerS, res.MBPerS, e.P50Ms, e.P99Ms, e.P999Ms, e.MaxMs)
			return err
		},
		json: func(path string) error { return bench.WriteConsumeJSON(path, res) },
	}.write(c)
}

func benchCompareCommand() *cli.Command {
	return &cli.Command{
		Name:  "compare",
		Usage: "start each system on loopback and run the same produce + read-back workload on each, sweeping partitions",
		Description: "Systems: unilog (its broker), jetstream (embedded nats-server, file storage, one subject per partition),\n" +
			"unilog-kafka-layout (the same broker over bench/kafkalayout's per-partition logs), kfake (franz-go's in-memory\n" +
			"Kafka, run once per partition count: it has no flush). Each runs as a child\n" +
			"process (`unilog bench serve`) in a fresh directory under --dir, so its CPU is read from /proc; --in-process\n" +
			"runs them in this process instead (CPU then includes the load generator). No JVM Kafka or Redpanda here.\n" +
			"Peak runs are never paced: --rate R adds a rerun of every configuration paced at R records/s, the same\n" +
			"rate for every system, for latencies compared at one load (--half-peak paces each at half its own peak).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "systems", Value: "unilog,unilog-kafka-layout,jetstream", Usage: "systems, comma separated: " + strings.Join(bench.Systems, ", ")},
			&cli.StringFlag{Name: "flush", Value: "async,sync", Usage: "flush settings, comma separated: async, sync"},
			&cli.BoolFlag{Name: "half-peak", Usage: "rerun each configuration at half the rate it reached in the same trial, for latency at a sustainable load"},
			&cli.DurationFlag{Name: "paced-duration", Usage: "make every paced run (--half-peak, --rate) produce for this long at its rate instead of --records (bounded, with its read-back, by --duration raised to three times this)"},
			&cli.DurationFlag{Name: "paced-warm-up", Usage: "leave the records due in each paced run's first `DURATION` out of its latencies (the client's and the broker's own), as a benchmark's warm-up phase: they are sent and acknowledged as usual, and the JSON keeps the whole run's under whole_run"},
			&cli.IntFlag{Name: "trials", Value: 3, Usage: "runs of every configuration, interleaved; the table shows the median and min–max, --json every trial"},
			&cli.BoolFlag{Name: "warm-up", Value: true, Usage: "run the first configuration once before the trials and report nothing of it (--warm-up=false to see the first-run bias)"},
			&cli.BoolFlag{Name: "warm", Usage: "write one record to every partition before each measured run, so that it does not pay for creating per-partition files"},
			&cli.Int64Flag{Name: "warm-records", Usage: "write `N` records (round robin, at full speed, bounded by --duration) before each measured run and report nothing of them, so that it measures the system past its first minute (a heap grown, consume queues promoted); the read-back reads them too"},
			&cli.StringFlag{Name: "transactional", Value: "false", Usage: "producer kinds, comma separated, each run in turn like --flush: false (plain), true (a transactional id per producer, a transaction committed every --commit-interval, read back read_committed; needs --acks -1; not jetstream)"},
			&cli.DurationFlag{Name: "commit-interval", Value: bench.DefaultCommitInterval, Usage: "how often a transactional producer commits (Kafka Streams' commit.interval.ms under exactly-once)"},
			&cli.StringFlag{Name: "dir", Value: "bench-data", Usage: "directory for the systems' data (each run's is emptied after it and removed when all have run)"},
			&cli.StringFlag{Name: "file-size", Value: "1GiB", Usage: "unilog commit-log file size"},
			&cli.BoolFlag{Name: "in-process", Usage: "run the systems in this process instead of child processes"},
			&cli.DurationFlag{Name: "stop-wait", Value: time.Minute, Usage: "how long a system may take to stop gracefully (SIGTERM) before it is killed; the run then says so"},
			&cli.StringFlag{Name: "markdown", Usage: "replace (or append) the end-to-end section of this Markdown `FILE`"},
			&cli.StringFlag{Name: "section", Value: bench.DefaultCompareSection, Usage: "`TITLE` of the section --markdown replaces, so that several compares keep their own sections of one file"},
			&cli.StringFlag{Name: "command", Usage: "the command line to quote in the Markdown section (default: this one)"},
			&cli.StringFlag{Name: "cpu-profile", Usage: "write a CPU profile (pprof) of this process, the load generator's clients (not the systems run as children), over every run to `FILE`"},
		}, loadFlags(&cli.StringFlag{Name: "partitions", Value: "1,100,1000,10000", Usage: "partition counts, comma separated"})...),
		Action: runBenchCompare,
	}
}

func runBenchCompare(c *cli.Context) error {
	load, err := loadOf(c)
	if err != nil {
		return fmt.Errorf("bench compare: %w", err)
	}
	load.Progress = false
	parts, err := counts(c, "partitions")
	if err != nil {
		return err
	}
	var kc bench.KafkaClient
	if err := producerOf(c, &kc); err != nil {
		return fmt.Errorf("bench compare: %w", err)
	}
	fileSize, err := bytesize.Parse(c.String("file-size"))
	if err != nil {
		return fmt.Errorf("bench compare: --file-size: %w", err)
	}
	var txns []bool
	for _, s := range splitList(c.String("transactional")) {
		txn, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("bench compare: --transactional: %w", err)
		}
		txns = append(txns, txn)
	}
	// --rate is the paced rerun's; peak runs are never paced.
	rate := load.Rate
	load.Rate = 0
	cfg := bench.CompareConfig{
		Systems: splitList(c.String("systems")), Flushes: splitList(c.String("flush")), Partitions: parts,
		Load: load, Acks: kc.Acks, Linger: kc.Linger, BatchBytes: kc.BatchBytes, MaxInFlight: kc.MaxInFlight, Compression: kc.Compression,
		Transactional: txns, CommitInterval: c.Duration("commit-interval"),
		Warm: c.Bool("warm"), WarmRecords: c.Int64("warm-records"), HalfPeak: c.Bool("half-peak"), Rate: rate,
		PacedDuration: c.Duration("paced-duration"), PacedWarmUp: c.Duration("paced-warm-up"), Trials: c.Int("trials"), WarmUp: c.Bool("warm-up"),
		Dir: c.String("dir"), FileSize: fileSize, StopWait: c.Duration("stop-wait"),
	}
	if c.String("json") == "" {
		cfg.Notes = c.App.ErrWriter
	}
	if !c.Bool("in-process") {
		if cfg.Exec, err = os.Executable(); err != nil {
			return fmt.Errorf("bench compare: %w", err)
		}
		cfg.ClientGC = tuneClientGC()
	}
	stopProfile, err := startProfile(c.String("cpu-profile"))
	if err != nil {
		return fmt.Errorf("bench compare: %w", err)
	}
	started := time.Now()
	runs, err := bench.Compare(c.Context, cfg)
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	return benchOutputs{
		table: func(w io.Writer) error { return bench.WriteCompareTable(w, runs) },
		json:  func(path string) error { return bench.WriteCompareJSON(path, runs) },
		plot:  func(path string) error { return bench.WriteComparePlot(path, runs) },
		markdown: func(path, command, plot string) error {
			info := bench.CompareInfo{Section: c.String("section"), Command: command, Plot: plot, Config: cfg, Started: started, Duration: time.Since(started)}
			return bench.WriteCompareMarkdown(path, runs, info)
		},
	}.write(c)
}

// benchServeCommand is how bench compare starts a system as a child
// process: it prints bench.ServeReady and the address, then serves until
// SIGTERM or SIGINT.
func benchServeCommand() *cli.Command {
	return &cli.Command{
		Name:   "serve",
		Usage:  "run one system under test (started by bench compare)",
		Hidden: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "system", Required: true},
			&cli.StringFlag{Name: "flush", Value: "async"},
			&cli.StringFlag{Name: "dir", Required: true},
			&cli.Int64Flag{Name: "file-size"},
		},
		Action: func(c *cli.Context) error {
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sigs)
			srv, err := bench.StartServer(bench.ServerConfig{System: c.String("system"), Flush: c.String("flush"), Dir: c.String("dir"), FileSize: c.Int64("file-size")})
			if err != nil {
				return err
			}
			fmt.Fprintln(c.App.Writer, bench.ServeLine(srv))
			select {
			case <-sigs:
			case <-c.Context.Done():
			}
			return srv.Close()
		},
	}
}
