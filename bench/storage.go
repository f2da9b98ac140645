package bench

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/bytesize"
)

// Config is one `unilog bench storage` invocation: every layout x flush
// policy x partition count is one run.
type Config struct {
	Layouts     []string
	Partitions  []int
	Flushes     []Flush
	MessageSize int   // payload bytes per record
	Total       int64 // payload bytes written per run
	Producers   int   // appending goroutines
	Batch       int   // records per append batch, all for one partition
	Keys        string
	Dir         string
	// LimitPartitions are partition counts run after the sweep, with the
	// first flush policy only and LimitTotal bytes each, to find where each
	// layout stops on this machine's limits.
	LimitPartitions []int
	LimitTotal      int64
	// Trials is how often every sweep and sustained configuration runs,
	// interleaved (see interleave); the table shows the median and range.
	Trials int
	// WarmUp runs the first configuration once before the trials and
	// reports nothing of it: the first run on an idle machine is the
	// slowest whatever it is.
	WarmUp bool
	// SustainedPartitions run with the first flush policy, each writing
	// SustainedTotal, by default SustainedFactor times the dirty-page limit,
	// so that the figure is the disk's and not the page cache's.
	SustainedPartitions []int
	SustainedTotal      int64
	// SustainedTrials is how many of the trials include the sustained
	// rows (0: all of them): each writes several times the dirty-page
	// limit, so they are what makes a report long.
	SustainedTrials int
	// SustainedMaxRun caps a sustained run instead of MaxRun (0: MaxRun):
	// a run stopped before it wrote past the dirty-page limit measures the
	// page cache again.
	SustainedMaxRun time.Duration
	Read            bool
	SegmentBytes    int64 // Kafka segment.bytes and unilog file size (default 1 GiB)
	// DiskProbe is the bytes the first disk probe writes; 0 skips it, and
	// the probe before each sustained run (of its size) with it.
	DiskProbe int64
	// MaxRun caps the writing time of one run (0: none). A run that reaches
	// it stops early and says so; its rates cover what it wrote.
	MaxRun   time.Duration
	Progress bool // a progress bar per run on stderr
	Notes    io.Writer
}

// Report is the outcome of Run.
type Report struct {
	Disk DiskBandwidth `json:"disk"`
	// SustainedDisk are the probes of a sustained run's size, one right
	// before each sustained run, in the order run; each run's
	// FractionOfDisk is against its own (sustained_probe.go).
	SustainedDisk []DiskBandwidth `json:"sustained_disk,omitempty"`
	Dirty         DirtyLimit      `json:"dirty_limit"`
	// Rows are the configurations with the median and range of their
	// trials, in planned order; Results every trial, in the order run.
	Rows    []Row    `json:"rows"`
	Results []Result `json:"results"`
}

// SustainedFactor is how many times the dirty-page limit a sustained run
// writes by default.
const SustainedFactor = 3

// keySize is the key every record carries (the 8-byte key the partition was
// chosen for), so that records look like keyed Kafka records.
const keySize = 8

func (c *Config) validate() error {
	switch {
	case len(c.Layouts) == 0, len(c.Partitions) == 0, len(c.Flushes) == 0:
		return errors.New("bench: need at least one layout, partition count and flush policy")
	case c.MessageSize < 16:
		return fmt.Errorf("bench: message size %d below 16 bytes", c.MessageSize)
	case c.Total < int64(c.MessageSize), c.LimitTotal != 0 && c.LimitTotal < int64(c.MessageSize):
		return fmt.Errorf("bench: total %d below one message", c.Total)
	case c.SustainedMaxRun < 0 || c.MaxRun < 0:
		return errors.New("bench: negative time limit")
	case c.Trials < 1:
		return fmt.Errorf("bench: trials %d: want at least 1", c.Trials)
	case c.SustainedTrials < 0 || c.SustainedTrials > c.Trials:
		return fmt.Errorf("bench: sustained trials %d: want 0 to the %d trials", c.SustainedTrials, c.Trials)
	case c.SustainedTotal < 0 || c.SustainedTotal > 0 && c.SustainedTotal < int64(c.MessageSize):
		return fmt.Errorf("bench: sustained total %d below one message", c.SustainedTotal)
	case c.Producers < 1 || c.Batch < 1:
		return errors.New("bench: producers and batch must be at least 1")
	case c.Dir == "":
		return errors.New("bench: no directory")
	}
	for _, p := range slices.Concat(c.Partitions, c.LimitPartitions, c.SustainedPartitions) {
		if p < 1 {
			return fmt.Errorf("bench: partition count %d", p)
		}
	}
	for _, l := range c.Layouts {
		if !slices.Contains(Layouts, l) {
			return fmt.Errorf("bench: unknown layout %q (want one of %v)", l, Layouts)
		}
	}
	_, err := newChooser(c.Keys, 1, 0)
	return err
}

// Run probes the disk, then runs every combination in turn, each in a fresh
// directory under cfg.Dir, emptied afterwards and removed when Run ends
// (see retirement). A run that fails, for example on a machine limit, is
// reported as a row with Error set; Run itself fails only on bad
// configuration or an unusable directory.
func Run(cfg Config) (_ *Report, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Notes == nil {
		cfg.Notes = io.Discard
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	ret, err := newRetirement(cfg.Dir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, ret.Close()) }()
	rep := &Report{}
	if cfg.DiskProbe > 0 {
		d, err := MeasureDisk(cfg.Dir, cfg.DiskProbe)
		if err != nil {
			return nil, err
		}
		rep.Disk = d
		fmt.Fprintf(cfg.Notes, "disk: %.0f MB/s raw sequential write (%s, %s)%s\n",
			d.MBPerS, bytesize.Format(d.Bytes), map[bool]string{true: "O_DIRECT", false: "buffered"}[d.Direct], noteSuffix(d.Note))
	}
	rep.Dirty = ReadDirtyLimit()
	plans := planRuns(&cfg, rep.Dirty)
	measure := func(p plan, trial int) Result {
		c := cfg
		c.Total, c.MaxRun = p.total, p.maxRun
		disk, note := rep.Disk, rep.Disk.Note
		if p.kind == KindSustained && cfg.DiskProbe > 0 {
			disk, note = probeBeforeSustained(&cfg, rep, p.total)
		}
		res := runOne(&c, ret, p.layout, p.parts, p.flush)
		res.Kind, res.Trial = p.kind, trial
		res.DiskMBPerS, res.DiskNote = disk.MBPerS, note
		if disk.MBPerS > 0 {
			res.FractionOfDisk = res.LogMBPerS / disk.MBPerS
		}
		return res
	}
	var repeated, once []plan
	for _, p := range plans {
		if p.kind == KindLimit {
			once = append(once, p)
		} else {
			repeated = append(repeated, p)
		}
	}
	if cfg.WarmUp && len(repeated) > 0 {
		res := measure(repeated[0], 0)
		fmt.Fprintf(cfg.Notes, "warm-up, not reported: %s\n", summary(&res))
	}
	sustainedTrials := cmp.Or(cfg.SustainedTrials, cfg.Trials)
	count := runCounter{total: len(once), started: time.Now()}
	for _, p := range repeated {
		if p.kind == KindSustained {
			count.total += sustainedTrials
		} else {
			count.total += cfg.Trials
		}
	}
	for t, order := range interleave(repeated, cfg.Trials) {
		for _, p := range order {
			if p.kind == KindSustained && t >= sustainedTrials {
				continue
			}
			res := measure(p, t+1)
			fmt.Fprintf(cfg.Notes, "trial %d/%d, %s: %s\n", t+1, cfg.Trials, count.step(), summary(&res))
			rep.Results = append(rep.Results, res)
		}
	}
	for _, p := range once {
		res := measure(p, 1)
		fmt.Fprintf(cfg.Notes, "%s: %s\n", count.step(), summary(&res))
		rep.Results = append(rep.Results, res)
	}
	rep.Rows = aggregate(plans, rep.Results)
	return rep, nil
}

// sustainedTotal is the payload a sustained run writes.
func sustainedTotal(cfg *Config, dirty DirtyLimit) int64 {
	return cmp.Or(cfg.SustainedTotal, max(SustainedFactor*dirty.Bytes, cfg.Total))
}

// planRuns lists every configuration: the sweep (flush x layout x
// partitions), the sustained rows and the limit runs. A partition count
// listed twice runs twice per trial and lands in the same row, which is how
// an order effect shows: --partitions 16,1,16,1 --trials 1 --warm-up=false.
func planRuns(cfg *Config, dirty DirtyLimit) []plan {
	var plans []plan
	add := func(kind string, flushes []Flush, partitions []int, total int64, maxRun time.Duration) {
		for _, f := range flushes {
			for _, layout := range cfg.Layouts {
				for _, parts := range partitions {
					plans = append(plans, plan{kind: kind, layout: layout, parts: parts, flush: f, total: total, maxRun: maxRun})
				}
			}
		}
	}
	add(KindSweep, cfg.Flushes, cfg.Partitions, cfg.Total, cfg.MaxRun)
	if len(cfg.SustainedPartitions) > 0 {
		total := sustainedTotal(cfg, dirty)
		fmt.Fprintf(cfg.Notes, "dirty-page limit %s; each sustained run writes %s\n", dirty, bytesize.Format(total))
		add(KindSustained, cfg.Flushes[:1], cfg.SustainedPartitions, total, cmp.Or(cfg.SustainedMaxRun, cfg.MaxRun))
	}
	if len(cfg.LimitPartitions) > 0 {
		add(KindLimit, cfg.Flushes[:1], cfg.LimitPartitions, cmp.Or(cfg.LimitTotal, cfg.Total), cfg.MaxRun)
	}
	return plans
}

func noteSuffix(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}

func runDir(cfg *Config, layout string, parts int, f Flush) string {
	name := strings.NewReplacer(":", "-", ".", "_").Replace(fmt.Sprintf("%s-%d-%s", layout, parts, f))
	return filepath.Join(cfg.Dir, name)
}

func runOne(cfg *Config, ret *retirement, layout string, parts int, f Flush) (res Result) {
	res = Result{Layout: layout, Partitions: parts, MessageSize: cfg.MessageSize, Flush: f.String(),
		Producers: cfg.Producers, Batch: cfg.Batch, Keys: cfg.Keys}
	dir := runDir(cfg, layout, parts, f)
	fail := func(phase string, err error) {
		res.Error, res.ErrorDetail = describe(phase, err), err.Error()
	}
	if err := os.RemoveAll(dir); err != nil {
		fail("cleaning the run directory", err)
		return res
	}
	// The previous run's deletes and write-back must not land in this one.
	unix.Sync()
	defer func() {
		if err := ret.retire(dir); err != nil && res.Error == "" {
			fail("retiring the run directory", err)
		}
		unix.Sync()
	}()
	lcfg := LayoutConfig{Dir: dir, Flush: f, SegmentBytes: cfg.SegmentBytes}
	l, err := OpenLayout(layout, lcfg)
	if err != nil {
		fail("opening", err)
		return res
	}
	open := true
	defer func() {
		if open {
			if err := l.Close(); err != nil && res.Error == "" {
				fail("closing", err)
			}
		}
	}()
	if err := l.Prepare(parts); err != nil {
		res.setResources(measureResources(dir))
		fail("creating partitions", err)
		return res
	}
	unix.Sync()

	w := write(cfg, l, parts, desc(layout, parts, f.String()))
	res.Records, res.Bytes = w.records, w.records*int64(cfg.MessageSize)
	res.LogBytes, res.Note = w.logBytes, w.note
	res.Seconds = w.elapsed.Seconds()
	if res.Seconds > 0 {
		res.MBPerS = float64(res.Bytes) / res.Seconds / 1e6
		res.RecordsPerS = float64(res.Records) / res.Seconds
		res.LogMBPerS = float64(res.LogBytes) / res.Seconds / 1e6
	}
	res.P50US, res.P99US, res.P999US = w.lat.quantile(50), w.lat.quantile(99), w.lat.quantile(99.9)
	res.setResources(measureResources(dir))
	if w.err != nil {
		fail("appending", w.err)
		return res
	}
	if !cfg.Read {
		return res
	}
	if err := l.Flush(); err != nil {
		fail("flushing before the read-back", err)
		return res
	}
	open = false
	if err := l.Close(); err != nil {
		fail("closing before the read-back", err)
		return res
	}
	rr, err := readBack(lcfg, layout, parts, cfg.MaxRun)
	res.Read = rr
	if err != nil {
		fail("reading back", err)
	}
	return res
}

func (r *Result) setResources(s resources) {
	r.OpenFiles, r.MapAreas, r.DirMapAreas, r.MappedBytes = s.openFiles, s.mapAreas, s.dirMaps, s.mappedBytes
}

func desc(layout string, parts int, flush string) string {
	return fmt.Sprintf("%-7s %6d partitions %-14s", layout, parts, flush)
}

type written struct {
	records  int64
	logBytes int64
	elapsed  time.Duration
	lat      latency
	err      error
	note     string
}

// write runs the producers: each appends batches of cfg.Batch records, every
// batch to one partition drawn from the key distribution, until its share
// of cfg.Total is written or some producer failed.
func write(cfg *Config, l Layout, parts int, description string) written {
	total := max(cfg.Total/int64(cfg.MessageSize), 1)
	body := make([]byte, cfg.MessageSize)
	// Incompressible, like real payloads; the same bytes for every record.
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range body {
		body[i] = byte(rnd.Uint32())
	}
	encSize := int64(commitlog.EncodedSize(&commitlog.Message{Topic: Topic, Key: make([]byte, keySize), Body: body}))

	var (
		done    atomic.Int64 // records appended
		failed  atomic.Bool
		errOnce sync.Once
		runErr  error
		wg      sync.WaitGroup
	)
	lats := make([]latency, cfg.Producers)
	bar := newProgress(cfg.Progress, total*int64(cfg.MessageSize), description, func() int64 { return done.Load() * int64(cfg.MessageSize) }, true)
	start := time.Now()
	var deadline time.Time
	if cfg.MaxRun > 0 {
		deadline = start.Add(cfg.MaxRun)
	}
	var capped atomic.Bool
	for id := range cfg.Producers {
		share := total / int64(cfg.Producers)
		if int64(id) < total%int64(cfg.Producers) {
			share++
		}
		lats[id] = newLatency()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch, _ := newChooser(cfg.Keys, parts, uint64(id)+1)
			ms := make([]commitlog.Message, cfg.Batch)
			keys := make([]byte, keySize*cfg.Batch)
			for share > 0 && !failed.Load() {
				if !deadline.IsZero() && time.Now().After(deadline) {
					capped.Store(true)
					return
				}
				n := int(min(int64(cfg.Batch), share))
				p := ch.next()
				ts := time.Now().UnixMilli()
				for i := range n {
					k := keys[i*keySize : (i+1)*keySize]
					binary.BigEndian.PutUint64(k, uint64(p))
					ms[i] = commitlog.Message{Topic: Topic, Partition: p, ProducerTimestamp: ts, Key: k, Body: body}
				}
				t0 := time.Now()
				err := l.Append(p, ms[:n])
				lats[id].record(time.Since(t0))
				if err != nil {
					errOnce.Do(func() { runErr = atPartition(int(p), err) })
					failed.Store(true)
					return
				}
				share -= int64(n)
				done.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	bar.finish()
	lat := lats[0]
	for _, o := range lats[1:] {
		lat.merge(o)
	}
	n := done.Load()
	w := written{records: n, logBytes: n * encSize, elapsed: elapsed, lat: lat, err: runErr}
	if capped.Load() {
		w.note = fmt.Sprintf("stopped at the %v time limit after %s of %s", cfg.MaxRun, bytesize.Format(n*int64(cfg.MessageSize)), bytesize.Format(total*int64(cfg.MessageSize)))
	}
	return w
}

// summary is the one-line note printed as each run ends.
func summary(r *Result) string {
	s := fmt.Sprintf("%s: %.0f MB/s, %.0f records/s, p99 %.0f µs", desc(r.Layout, r.Partitions, r.Flush), r.MBPerS, r.RecordsPerS, r.P99US)
	if r.Note != "" {
		s += "; " + r.Note
	}
	if r.Error != "" {
		s += "; stopped: " + r.Error
	}
	return s
}
