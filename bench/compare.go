package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/unilog/unilog/internal/promhist"
)

// CompareConfig is one `unilog bench compare`: every system x flush x
// partition count is one run of the same workload, each system started by
// the benchmark itself on loopback in a fresh directory under Dir.
type CompareConfig struct {
	Systems    []string
	Flushes    []string // ServerFlushes
	Partitions []int
	// Load is the produce workload of every run (its Partitions is set per
	// run); its Duration also bounds the catch-up read.
	Load        Load
	Acks        int // Kafka acks; JetStream acknowledges every publish
	Linger      time.Duration
	BatchBytes  int
	MaxInFlight int    // unacknowledged records per producer, every system (KafkaClient.MaxInFlight)
	Compression string // Kafka producers' batch codec (KafkaClient.Compression)
	// Transactional lists the producers every configuration runs with, a
	// dimension of the runs like Flushes: false plain (idempotent under
	// acks -1), true transactional (KafkaClient.Transactional, committing
	// every CommitInterval, read back read_committed; JetStream has no
	// transactions and skips it). nil is {false}.
	Transactional  []bool
	CommitInterval time.Duration
	// Warm writes one record to every partition before each measured run,
	// unreported, so that the run does not pay for creating per-partition
	// files and state (consume queues, Kafka-layout segments, JetStream
	// subjects): a broker's first minute is not its steady state.
	Warm bool
	// WarmRecords writes this many records before each measured run, at
	// full speed from the load's producers, round robin, bounded by the
	// load's Duration, unreported (with Warm, at least one per
	// partition). One record per partition makes the files; a warm-up as
	// large as the run also pays, before it is measured, what a system
	// spends once in its first minute: the heap and request buffers grown
	// from nothing, and unilog's consume queues promoted from the shared
	// journal to files of their own at their 32nd to 64th entry (at 1,000
	// partitions 0.3-1.1 s of broker CPU in a 300,000-record run; at
	// 10,000 a warm-up needs more than 640,000 records for that). A server
	// in a child process is then given time to go quiet (settle.go). The
	// read-back reads the warm-up's records too.
	WarmRecords int64
	// HalfPeak reruns every configuration at half the rate its full-speed
	// run reached in the same trial, for latency at a load the system can
	// sustain. Half of the trial's own peak rather than of the median
	// peak: the rerun follows its peak run at once, on the machine in the
	// state that peak was measured in, and a trial needs no earlier one.
	HalfPeak bool
	// Rate, when not 0, reruns every configuration paced at Rate
	// records/s after its peak (and half-peak) run: the same rate for
	// every system, so that latencies are compared at one load and not
	// each at its own half peak, which differ as much as the systems'
	// peaks (at 1 partition unilog's half peak was six times
	// JetStream's). A system whose peak is below Rate shows it as latency.
	Rate float64
	// PacedDuration, when not 0, makes every paced run (half-peak, Rate)
	// produce for that long at its rate instead of Load's records, so
	// that a fast system's paced run is not over in a second; Load's
	// Duration still bounds it and its read-back, raised to three times
	// PacedDuration (the Kafka layout reads back 5 s of one partition at
	// half peak in 8-10 s).
	PacedDuration time.Duration
	// PacedWarmUp is the start of every paced run left out of its
	// latencies, the client's and the broker's own (Load.LatencyAfter).
	PacedWarmUp time.Duration
	// Trials is how often every configuration runs (0 is once), in the
	// interleaved order of interleave; the rows show median and min-max.
	Trials int
	// WarmUp runs the first configuration once before the trials and
	// reports nothing of it: the first run on an idle machine is slow
	// whatever it measures.
	WarmUp bool
	Dir    string
	// Exec is the unilog executable to start each system with `bench
	// serve` as a child, so that its CPU is its own; empty starts systems
	// in this process (CPU then includes the load generator, and says so).
	Exec     string
	FileSize int64 // unilog commit-log file size; 0: the broker's default
	// ClientGC says how the caller set this process's garbage collector
	// for the clients (cmd/unilog/bench_gc.go), for the report; empty: Go's
	// defaults.
	ClientGC string
	// StopWait bounds each child's graceful shutdown (ServerConfig.StopWait).
	StopWait time.Duration
	Notes    io.Writer
}

// benchTopic is the topic (or stream) every end-to-end run uses.
const benchTopic = "bench"

// CompareRun is one run: the produce figures at the top level (the JSON
// fields a reader compares), the catch-up read under consume, and the
// broker's CPU per GB of payload (10^9 bytes) produced and consumed.
type CompareRun struct {
	System      string `json:"system"`
	Flush       string `json:"flush"`
	Partitions  int    `json:"partitions"`
	MessageSize int    `json:"message_size"`
	Producers   int    `json:"producers"`
	Acks        int    `json:"acks"`
	Load        string `json:"load"`  // "peak", "half-peak" or the fixed rate, "N/s"
	Trial       int    `json:"trial"` // 1..Trials; the warm-up run is not kept
	// WarmRecords is how many records were written before the run.
	WarmRecords int64 `json:"warm_records,omitempty"`
	// SettleS is how long the run waited after the warm-up for the
	// server's CPU to go quiet (settle.go), and Settled whether it did
	// within the load's duration (settleLimit without one). Only for a
	// server in a child process, whose CPU is its own.
	SettleS float64 `json:"settle_s,omitempty"`
	Settled bool    `json:"settled,omitempty"`
	// Transactional runs put their records in transactions.
	Transactional bool    `json:"transactional,omitempty"`
	Rate          float64 `json:"rate,omitempty"`
	ProduceResult
	Consume                 *ConsumeResult `json:"consume,omitempty"`
	BrokerCPUProduceS       float64        `json:"broker_cpu_produce_s"`
	BrokerCPUConsumeS       float64        `json:"broker_cpu_consume_s"`
	BrokerCPUSPerGB         float64        `json:"broker_cpu_s_per_gb"`
	BrokerCPUSPerGBConsumed float64        `json:"broker_cpu_s_per_gb_consumed"`
	// ClientCPU is nil when the broker ran in this process: the clients'
	// CPU is then inside the broker's figures and not separable.
	ClientCPU *ClientCPU `json:"client_cpu,omitempty"`
	// CoresUsed is the broker's and the clients' CPU seconds over the wall
	// seconds of the produce phase: near the machine's core count, the run
	// was bound by the cores rather than by either process.
	CoresUsed float64 `json:"cores_used"`
	// BrokerProduceP99Ms is the p99 of the broker's own time of the
	// produce phase's requests, from frame read to response written
	// (broker_time.go); nil for a system that does not time them.
	BrokerProduceP99Ms *float64 `json:"broker_produce_p99_ms,omitempty"`
	CPUSource          string   `json:"cpu_source"`
	// CachePageUS is what a new page of the page cache cost right after
	// the run, in µs (a 32 MiB file written in the benchmark's directory):
	// some hosts charge ten times more for it at times, whatever runs
	// (docs/BENCHMARKS.md, "A host that charges for the page cache"), so a
	// run's CPU figures read against it. 0 when the probe failed.
	CachePageUS float64 `json:"cache_page_us,omitempty"`
	Error       string  `json:"error,omitempty"`
	// produced is set when every record was acknowledged: the run has a
	// peak to pace a half-peak rerun by even if reading back or stopping
	// failed afterwards (the Kafka layout at 10,000 partitions does not
	// stop within childStop).
	produced bool
}

// Load kinds of a CompareRun.
const (
	LoadPeak     = "peak"
	LoadHalfPeak = "half-peak"
)

// warmRecords is how many records to write before a measured run over
// parts partitions.
func (c *CompareConfig) warmRecords(parts int) int64 {
	if c.Warm {
		return max(c.WarmRecords, int64(parts))
	}
	return c.WarmRecords
}

// loadAtRate is the load kind of a CompareConfig.Rate run.
func loadAtRate(rate float64) string { return fmt.Sprintf("%.0f/s", rate) }

func (c *CompareConfig) validate() error {
	switch {
	case len(c.Systems) == 0 || len(c.Flushes) == 0 || len(c.Partitions) == 0:
		return errors.New("bench: compare needs systems, flushes and partition counts")
	case c.Dir == "":
		return errors.New("bench: compare: no directory")
	case c.Trials < 0:
		return fmt.Errorf("bench: compare: trials %d: want at least 1 (0 is once)", c.Trials)
	case c.Rate < 0:
		return fmt.Errorf("bench: compare: rate %v: want 0 (none) or more", c.Rate)
	case c.WarmRecords < 0:
		return fmt.Errorf("bench: compare: warm-up records %d: want 0 (none) or more", c.WarmRecords)
	case c.PacedDuration < 0 || c.PacedWarmUp < 0:
		return errors.New("bench: compare: negative paced duration or warm-up")
	case c.PacedDuration > 0 && c.PacedWarmUp >= c.PacedDuration:
		return fmt.Errorf("bench: compare: paced warm-up %v leaves nothing of a paced run of %v", c.PacedWarmUp, c.PacedDuration)
	}
	for _, s := range c.Systems {
		if !slices.Contains(Systems, s) {
			return fmt.Errorf("bench: unknown system %q (want one of %v)", s, Systems)
		}
	}
	for _, f := range c.Flushes {
		if !slices.Contains(ServerFlushes, f) {
			return fmt.Errorf("bench: flush %q: want async or sync", f)
		}
	}
	l := c.Load
	l.Partitions = 1
	if err := l.validate(); err != nil {
		return err
	}
	for _, txn := range c.Transactional {
		if err := c.kafkaClient("-", txn).validate(); err != nil {
			return err
		}
	}
	return c.kafkaClient("-", false).validate()
}

// compareCase is one configuration of a compare.
type compareCase struct {
	system, flush string
	parts         int
	txn           bool
}

// compareCases lists every configuration: for each partition count, every
// system, flush and producer kind in turn, so that the systems meet the
// machine in the same state. kfake has no flush and runs once per
// partition count and producer kind.
func compareCases(cfg *CompareConfig) []compareCase {
	producerKinds := cfg.Transactional
	if producerKinds == nil {
		producerKinds = []bool{false}
	}
	var cases []compareCase
	for _, parts := range cfg.Partitions {
		for _, sys := range cfg.Systems {
			for i, flush := range cfg.Flushes {
				if sys == SystemKfake && i > 0 {
					break
				}
				for _, txn := range producerKinds {
					if !txn || sys != SystemJetStream {
						cases = append(cases, compareCase{sys, flush, parts, txn})
					}
				}
			}
		}
	}
	return cases
}

// Compare runs every configuration Trials times, interleaved, after an
// unreported warm-up run when WarmUp is set. A run that fails is kept with
// Error set; Compare fails only on configuration.
func Compare(ctx context.Context, cfg CompareConfig) (_ []CompareRun, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Notes == nil {
		cfg.Notes = io.Discard
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: compare: %w", err)
	}
	ret, err := newRetirement(cfg.Dir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, ret.Close()) }()
	cases := compareCases(&cfg)
	trials := max(cfg.Trials, 1)
	if cfg.WarmUp {
		r := compareOne(ctx, &cfg, ret, cases[0], 0, LoadPeak)
		fmt.Fprintf(cfg.Notes, "warm-up, not reported: %s\n", r.summary())
	}
	p := runCounter{total: len(cases) * trials, started: time.Now()}
	perCase := 1
	if cfg.HalfPeak {
		perCase++
	}
	if cfg.Rate > 0 {
		perCase++
	}
	p.total *= perCase
	var runs []CompareRun
	report := func(r CompareRun, t int) {
		r.Trial = t
		if d, err := probeCachePage(cfg.Dir, runProbeRegion); err == nil {
			r.CachePageUS = float64(d) / float64(time.Microsecond)
		}
		runs = append(runs, r)
		fmt.Fprintf(cfg.Notes, "trial %d/%d, %s: %s\n", t, trials, p.step(), r.summary())
	}
	for t, order := range interleave(cases, trials) {
		for _, c := range order {
			r := compareOne(ctx, &cfg, ret, c, 0, LoadPeak)
			report(r, t+1)
			if cfg.HalfPeak {
				if r.produced && r.RecordsPerS > 0 {
					report(compareOne(ctx, &cfg, ret, c, r.RecordsPerS/2, LoadHalfPeak), t+1)
				} else {
					p.total--
				}
			}
			if cfg.Rate > 0 {
				report(compareOne(ctx, &cfg, ret, c, cfg.Rate, loadAtRate(cfg.Rate)), t+1)
			}
			if err := ctx.Err(); err != nil {
				return runs, err
			}
		}
	}
	return runs, nil
}

// runCounter counts runs for the notes: run k of n, the time so far and the
// time left at the mean pace so far.
type runCounter struct {
	done, total int
	started     time.Time
}

func (p *runCounter) step() string {
	p.done++
	elapsed := time.Since(p.started)
	left := time.Duration(float64(elapsed) / float64(p.done) * float64(p.total-p.done))
	return fmt.Sprintf("run %d of %d, %v elapsed, about %v left", p.done, p.total, elapsed.Round(time.Second), left.Round(time.Second))
}

func (r *CompareRun) summary() string {
	load := r.Load
	if r.WarmRecords > 0 {
		load += fmt.Sprintf(", after %d warm-up records", r.WarmRecords)
		switch {
		case r.Settled:
			load += fmt.Sprintf(" and %.2f s for the server to go quiet", r.SettleS)
		case r.SettleS > 0:
			load += fmt.Sprintf(" (the server still busy %.2f s later)", r.SettleS)
		}
	}
	if r.Transactional {
		load += ", transactional"
	}
	s := fmt.Sprintf("%-9s %-5s %6d partitions %-9s: %.0f records/s, %.1f MB/s, p99 %.2f ms", r.System, r.Flush, r.Partitions, load, r.RecordsPerS, r.MBPerS, r.P99Ms)
	if r.Consume != nil {
		s += fmt.Sprintf("; read %.0f records/s", r.Consume.RecordsPerS)
	}
	s += fmt.Sprintf("; broker %.1f CPU s/GB produced", r.BrokerCPUSPerGB)
	if r.ClientCPU != nil {
		s += fmt.Sprintf(", clients %.1f", r.ClientCPU.SPerGB)
	}
	s += fmt.Sprintf(", %.2f cores", r.CoresUsed)
	if r.CachePageUS > 0 {
		s += fmt.Sprintf("; a new page-cache page then %.2f µs", r.CachePageUS)
	}
	if r.Error != "" {
		s += "; " + r.Error
	}
	return s
}

// compareOne starts the system in a fresh directory, creates the topic,
// produces the load (at rate when it is not 0), reads everything back, and
// stops the system, whose directory ret then keeps; kind is the run's Load.
func compareOne(ctx context.Context, cfg *CompareConfig, ret *retirement, c compareCase, rate float64, kind string) (r CompareRun) {
	sys, flush, parts := c.system, c.flush, c.parts
	load := cfg.Load
	load.Partitions, load.Rate = parts, rate
	if rate > 0 {
		load.LatencyAfter = cfg.PacedWarmUp
		if cfg.PacedDuration > 0 {
			load.Records = int64(math.Ceil(rate * cfg.PacedDuration.Seconds()))
			load.Duration = max(load.Duration, 3*cfg.PacedDuration)
		}
	}
	r = CompareRun{System: sys, Flush: flush, Partitions: parts, MessageSize: load.MessageSize, Producers: load.Producers,
		Acks: cfg.Acks, Load: kind, Rate: rate, Transactional: c.txn}
	switch sys {
	case SystemJetStream:
		r.Acks = -1
	case SystemKfake:
		r.Flush = "memory"
	}
	fail := func(phase string, err error) {
		if r.Error == "" {
			r.Error = fmt.Sprintf("%s: %v", phase, err)
		}
	}
	dir := filepath.Join(cfg.Dir, fmt.Sprintf("%s-%s-%d", sys, flush, parts))
	if err := os.RemoveAll(dir); err != nil {
		fail("cleaning", err)
		return r
	}
	defer func() {
		if err := ret.retire(dir); err != nil {
			fail("retiring the run directory", err)
		}
	}()
	scfg := ServerConfig{System: sys, Flush: flush, Dir: dir, FileSize: cfg.FileSize, StopWait: cfg.StopWait}
	var (
		srv Server
		err error
	)
	if cfg.Exec != "" {
		srv, err = StartChild(cfg.Exec, scfg)
	} else {
		srv, err = StartServer(scfg)
	}
	if err != nil {
		fail("starting", err)
		return r
	}
	defer func() {
		if err := srv.Close(); err != nil {
			fail("stopping", err)
		}
	}()
	r.CPUSource = srv.CPUSource()
	t, err := newTarget(sys, srv.Addr(), cfg, c.txn)
	if err != nil {
		fail("connecting", err)
		return r
	}
	defer t.Close()
	if err := t.Prepare(ctx, parts); err != nil {
		fail("creating the topic", err)
		return r
	}
	if n := cfg.warmRecords(parts); n > 0 {
		warm := Load{Partitions: parts, MessageSize: load.MessageSize, Records: n, Duration: load.Duration, Producers: load.Producers}
		w, err := produce(ctx, t, warm)
		if err == nil && w.FirstError != "" {
			err = errors.New(w.FirstError)
		}
		if err != nil {
			fail("warming up", err)
			return r
		}
		r.WarmRecords = w.Records
		if cpuSeparable(srv) {
			waited, quiet, err := waitQuiet(srv.CPU, settleInterval, cmp.Or(load.Duration, settleLimit))
			if err != nil {
				fail("waiting for the server to go quiet", err)
				return r
			}
			r.SettleS, r.Settled = waited.Seconds(), quiet
		}
	}
	cpu := func() (cpuSample, bool) {
		s, err := sampleCPU(srv)
		if err != nil {
			fail("reading CPU", err)
		}
		return s, err == nil
	}
	timer := timerOf(srv)
	var times0 []promhist.Bucket
	if timer != nil {
		if times0, err = timer.produceTimes(); err != nil {
			fail("reading the broker's produce times", err)
			return r
		}
	}
	var scrapeErr error
	if timer != nil && load.LatencyAfter > 0 {
		// The broker's own times, like the client's, from the warm-up's end.
		load.atMeasure = func() { times0, scrapeErr = timer.produceTimes() }
	}
	cpu0, ok := cpu()
	if !ok {
		return r
	}
	r.ProduceResult, err = produce(ctx, t, load)
	if err == nil && scrapeErr != nil {
		fail("reading the broker's produce times", scrapeErr)
		return r
	}
	if err != nil {
		fail("producing", err)
		return r
	}
	if r.FirstError != "" {
		fail("producing", errors.New(r.FirstError))
	}
	r.produced = r.Error == ""
	cpu1, ok := cpu()
	if !ok {
		return r
	}
	r.setProduceCPU(cpu0, cpu1, cpuSeparable(srv))
	if timer != nil {
		if err := r.setBrokerP99(timer, times0); err != nil {
			fail("reading the broker's produce times", err)
			return r
		}
		// Serving the scrape is the broker's CPU but neither phase's.
		if cpu1, ok = cpu(); !ok {
			return r
		}
	}
	// Offsets count the transactions' markers too: read the records. A
	// transactional run whose produce failed has no count to read back:
	// its last transaction was aborted (EndTransaction with TryCommit
	// aborts after an error), so read_committed never sees records it
	// acknowledged, and a read-back waiting for them waited for good.
	var want int64
	if c.txn {
		if !r.produced {
			return r
		}
		want = r.Records + r.WarmRecords
	}
	cr, err := consume(ctx, t, parts, want, load.Duration, false)
	r.Consume = &cr
	if err != nil {
		fail("consuming", err)
		return r
	}
	cpu2, ok := cpu()
	if !ok {
		return r
	}
	r.setConsumeCPU(cpu1, cpu2, cr.Bytes)
	if want := cmp.Or(want, cr.Stored); cr.Records < want {
		fail("consuming", fmt.Errorf("read %d of %d records within %v", cr.Records, want, cfg.Load.Duration))
	}
	return r
}

// perGB is seconds per 10^9 bytes; 0 when nothing moved.
func perGB(seconds float64, bytes int64) float64 {
	if bytes <= 0 {
		return 0
	}
	return seconds / (float64(bytes) / 1e9)
}

func newTarget(sys, addr string, cfg *CompareConfig, txn bool) (target, error) {
	if sys == SystemJetStream {
		return newJetStreamTarget(addr, benchTopic, cfg.MaxInFlight)
	}
	return newKafkaTarget(cfg.kafkaClient(addr, txn))
}

func (c *CompareConfig) kafkaClient(addr string, txn bool) KafkaClient {
	return KafkaClient{Brokers: []string{addr}, Topic: benchTopic, Acks: c.Acks, Linger: c.Linger, BatchBytes: c.BatchBytes, MaxInFlight: c.MaxInFlight, Compression: c.Compression,
		Transactional: txn, CommitInterval: c.CommitInterval}
}
