package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/bench"
	"github.com/unilog/unilog/internal/bytesize"
)

// kafkaBatchSize is a Kafka producer's default batch.size: the default
// append batch is as many records as fit in it.
const kafkaBatchSize = 16 << 10

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "benchmarks",
		Subcommands: []*cli.Command{
			benchStorageCommand(),
			benchProduceCommand(),
			benchConsumeCommand(),
			benchCompareCommand(),
			benchServeCommand(),
			benchServingCommand(),
			benchSectionCommand(),
			benchMachineCommand(),
		},
	}
}

func benchStorageCommand() *cli.Command {
	return &cli.Command{
		Name:  "storage",
		Usage: "compare the unified commit log with a Kafka-style per-partition layout as partitions grow",
		Description: "Measures the raw sequential write bandwidth of --dir first, then runs every layout x flush x partition count\n" +
			"--trials times in an interleaved order after one unreported warm-up run, each in a fresh directory under --dir that\n" +
			"is emptied afterwards and removed when all have run; the table shows the median and min-max, --json every trial. A run that hits a machine limit\n" +
			"(open files, vm.max_map_count) becomes a row saying where and why.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "layouts", Value: "unified,kafka", Usage: "layouts to run: unified, kafka, kafka-madv (the Kafka layout with MADV_RANDOM index mappings, which Kafka does not do)"},
			&cli.StringFlag{Name: "partitions", Value: "1,16,256,1024,4096,10000", Usage: "partition counts, comma separated"},
			&cli.StringFlag{Name: "message-size", Value: "1KiB", Usage: "payload bytes per record"},
			&cli.StringFlag{Name: "total", Value: "1GiB", Usage: "payload bytes written per run (units: KiB, MiB, GiB, KB, MB, GB)"},
			&cli.IntFlag{Name: "producers", Value: 4, Usage: "appending goroutines"},
			&cli.IntFlag{Name: "batch", Usage: "records per append batch, all for one partition (default: as many as fit in 16 KiB, a Kafka producer's batch.size)"},
			&cli.StringFlag{Name: "flush", Value: "none", Usage: "flush policies, comma separated: none, interval:DURATION, sync"},
			&cli.StringFlag{Name: "keys", Value: "uniform", Usage: "partition distribution: uniform or zipf"},
			&cli.StringFlag{Name: "dir", Value: "bench-data", Usage: "directory on the disk under test"},
			&cli.StringFlag{Name: "segment-bytes", Value: "1GiB", Usage: "Kafka segment.bytes and unified commit-log file size"},
			&cli.StringFlag{Name: "disk-probe", Value: "1GiB", Usage: "bytes written by the raw disk bandwidth probe at the start, which the sweep compares with; each sustained run is compared with a probe of its own size right before it (0 skips both)"},
			&cli.StringFlag{Name: "limit-partitions", Usage: "partition counts run after the sweep (first --flush only) to find where each layout stops, e.g. 20000,50000,100000"},
			&cli.StringFlag{Name: "limit-total", Value: "1GiB", Usage: "payload bytes per --limit-partitions run"},
			&cli.IntFlag{Name: "trials", Value: 3, Usage: "runs of every configuration, interleaved; the table shows the median and min–max, --json every trial"},
			&cli.BoolFlag{Name: "warm-up", Value: true, Usage: "run the first configuration once before the trials and report nothing of it (--warm-up=false to see the first-run bias)"},
			&cli.StringFlag{Name: "sustained-partitions", Usage: "partition counts of sustained runs (first --flush only), each writing --sustained-total, e.g. 1,10000"},
			&cli.StringFlag{Name: "sustained-total", Usage: "payload bytes per sustained run (default: 3x the dirty-page limit read from /proc/sys/vm/dirty_* and MemAvailable)"},
			&cli.IntFlag{Name: "sustained-trials", Usage: "how many of the --trials include the sustained runs (default: all)"},
			&cli.DurationFlag{Name: "sustained-max-run", Usage: "cap the writing time of each sustained run instead of --max-run (a capped sustained run may not pass the dirty-page limit)"},
			&cli.DurationFlag{Name: "max-run", Usage: "cap the writing time of each run; a capped run says so and reports what it wrote (0: no cap)"},
			&cli.BoolFlag{Name: "read", Usage: "also read back one partition and then all partitions from a cold page cache"},
			&cli.StringFlag{Name: "json", Usage: "write one JSON object per run to this file (and stay quiet on stderr)"},
			&cli.StringFlag{Name: "plot", Usage: "draw throughput vs partitions to this .svg or .png file"},
			&cli.StringFlag{Name: "markdown", Usage: "write a Markdown report (machine, table, plot) to this file"},
			&cli.StringFlag{Name: "command", Usage: "the command line to quote in the Markdown report (default: this one)"},
		},
		Action: runBenchStorage,
	}
}

func runBenchStorage(c *cli.Context) error {
	cfg, err := benchConfig(c)
	if err != nil {
		return err
	}
	started := time.Now()
	rep, err := bench.Run(cfg)
	if err != nil {
		return err
	}
	return benchOutputs{
		table: func(w io.Writer) error { return bench.WriteTable(w, rep) },
		json:  func(path string) error { return bench.WriteJSON(path, rep) },
		plot:  func(path string) error { return bench.WritePlot(path, rep) },
		markdown: func(path, command, plot string) error {
			info := bench.MarkdownInfo{Command: command, Plot: plot, Config: cfg, Started: started, Duration: time.Since(started)}
			return bench.WriteMarkdown(path, rep, bench.DescribeMachine(cfg.Dir), info)
		},
	}.write(c)
}

// benchOutputs are a benchmark's outputs: the table on stdout, then what
// --json, --plot and --markdown ask for (a flag the command lacks reads as
// empty). markdown gets the command line to quote (--command, or this one)
// and the plot's path relative to the Markdown file.
type benchOutputs struct {
	table    func(io.Writer) error
	json     func(path string) error
	plot     func(path string) error
	markdown func(path, command, plot string) error
}

func (o benchOutputs) write(c *cli.Context) error {
	if err := o.table(c.App.Writer); err != nil {
		return err
	}
	if path := c.String("json"); path != "" {
		if err := o.json(path); err != nil {
			return err
		}
	}
	plot := c.String("plot")
	if plot != "" {
		if err := o.plot(plot); err != nil {
			return err
		}
	}
	path := c.String("markdown")
	if path == "" {
		return nil
	}
	command := c.String("command")
	if command == "" {
		command = shellLine(os.Args)
	}
	if plot != "" {
		if rel, err := filepath.Rel(filepath.Dir(path), plot); err == nil {
			plot = rel
		}
	}
	return o.markdown(path, command, plot)
}

func benchConfig(c *cli.Context) (bench.Config, error) {
	quiet := c.String("json") != ""
	cfg := bench.Config{
		Layouts:   splitList(c.String("layouts")),
		Producers: c.Int("producers"),
		Batch:     c.Int("batch"),
		Keys:      c.String("keys"),
		Dir:       c.String("dir"),
		Read:      c.Bool("read"),
		MaxRun:    c.Duration("max-run"),
		// Sustained runs must write past the dirty-page limit to mean
		// anything, so they have their own cap.
		SustainedMaxRun: c.Duration("sustained-max-run"),
		SustainedTrials: c.Int("sustained-trials"),
		Trials:          c.Int("trials"),
		WarmUp:          c.Bool("warm-up"),
		Progress:        !quiet && bench.StderrIsTerminal(),
	}
	if !quiet {
		cfg.Notes = c.App.ErrWriter
	}
	var err error
	if cfg.Partitions, err = counts(c, "partitions"); err != nil {
		return cfg, err
	}
	if cfg.LimitPartitions, err = counts(c, "limit-partitions"); err != nil {
		return cfg, err
	}
	if cfg.SustainedPartitions, err = counts(c, "sustained-partitions"); err != nil {
		return cfg, err
	}
	if s := c.String("sustained-total"); s != "" {
		if cfg.SustainedTotal, err = bytesize.Parse(s); err != nil {
			return cfg, fmt.Errorf("bench storage: --sustained-total: %w", err)
		}
	}
	for _, s := range splitList(c.String("flush")) {
		f, err := bench.ParseFlush(s)
		if err != nil {
			return cfg, fmt.Errorf("bench storage: --flush: %w", err)
		}
		cfg.Flushes = append(cfg.Flushes, f)
	}
	sizes := []struct {
		flag string
		dst  *int64
	}{{"total", &cfg.Total}, {"segment-bytes", &cfg.SegmentBytes}, {"disk-probe", &cfg.DiskProbe}, {"limit-total", &cfg.LimitTotal}}
	for _, s := range sizes {
		n, err := bytesize.Parse(c.String(s.flag))
		if err != nil {
			return cfg, fmt.Errorf("bench storage: --%s: %w", s.flag, err)
		}
		*s.dst = n
	}
	ms, err := bytesize.Parse(c.String("message-size"))
	if err != nil {
		return cfg, fmt.Errorf("bench storage: --message-size: %w", err)
	}
	cfg.MessageSize = int(ms)
	if cfg.Batch == 0 {
		cfg.Batch = max(kafkaBatchSize/max(cfg.MessageSize, 1), 1)
	}
	return cfg, nil
}

// counts parses a comma-separated list of positive counts; underscores
// (10_000) are allowed.
func counts(c *cli.Context, flag string) ([]int, error) {
	var out []int
	for _, s := range splitList(c.String(flag)) {
		n, err := strconv.Atoi(strings.ReplaceAll(s, "_", ""))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bench: --%s: %q is not a positive count", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// shellLine joins args into a line a shell reads back as the same
// arguments, so that the quoted command can be rerun as it is.
func shellLine(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`|&;<>()*?[]{}~#!") {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}
