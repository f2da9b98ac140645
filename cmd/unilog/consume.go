package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

func consumeCommand() *cli.Command {
	return &cli.Command{
		Name:  "consume",
		Usage: "print the records of a topic",
		Description: `Without --group, reads the topic's partitions directly (nothing committed), so
anything still within retention can be re-read at will.

--from says where each partition starts:
  earliest          the log start offset (default)
  latest            the high watermark: only records produced from now on (with --follow)
  N                 offset N (clamped into [log start, high watermark], with a warning)
  -N                N records before the high watermark
  2026-12-02T10:00:00Z
                    the first record stored at or after that RFC 3339 time
  @1764669600000    the same with a timestamp in unix milliseconds

Without --follow the command stops at the high watermark each partition had when
it started; with --follow it keeps waiting for new records until SIGINT or --count.

--format value prints the value, kv prints key, --key-separator, value, and json
prints one object per line: {"topic","partition","offset","timestamp" (unix ms),
"key","value","headers":[{"key","value"}]}; a key or value that is not valid UTF-8
is null and given base64-encoded in "key_base64" / "value_base64" instead.

With --group the command is a member of that consumer group instead: the group
assigns the partitions, each starts at the group's committed offset (--from
earliest or latest only says where a partition without one starts), and offsets
are committed as records are printed. It runs until SIGINT or --count.`,
		ArgsUsage: " ",
		Flags: append(kafkaClientFlags(),
			&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Required: true, Usage: "topic `NAME`"},
			&cli.IntSliceFlag{Name: "partition", Aliases: []string{"p"}, Usage: "read only partition `N` (repeatable; default all)"},
			&cli.StringFlag{Name: "from", Aliases: []string{"o"}, Value: "earliest", Usage: "earliest, latest, OFFSET, -N, RFC3339 time or @UNIX_MS (see description)"},
			&cli.Int64Flag{Name: "count", Aliases: []string{"n"}, Usage: "stop after `N` records (0: no limit)"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"F"}, Usage: "keep waiting for new records"},
			&cli.StringFlag{Name: "format", Value: "value", Usage: "value, kv or json"},
			&cli.StringFlag{Name: "key-separator", Value: `\t`, DefaultText: "tab", Usage: "separator between key and value for --format kv"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no summary and no warnings on stderr"},
			&cli.StringFlag{Name: "group", Aliases: []string{"g"}, Usage: "consume as a member of consumer group `ID`, committing as it goes"},
		),
		Action: runConsume,
	}
}

// startKind says how --from picks each partition's first offset.
type startKind int

const (
	startEarliest startKind = iota
	startLatest
	startOffset    // n is the offset
	startBeforeEnd // n records before the high watermark
	startTimestamp // n is unix milliseconds
)

type startSpec struct {
	kind startKind
	n    int64
}

func parseStartSpec(s string) (startSpec, error) {
	switch s {
	case "earliest", "beginning", "start":
		return startSpec{kind: startEarliest}, nil
	case "latest", "end":
		return startSpec{kind: startLatest}, nil
	}
	if ms, ok := strings.CutPrefix(s, "@"); ok {
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || n < 0 {
			return startSpec{}, fmt.Errorf("--from %q: want @ followed by unix milliseconds", s)
		}
		return startSpec{kind: startTimestamp, n: n}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return startSpec{kind: startBeforeEnd, n: -n}, nil
		}
		return startSpec{kind: startOffset, n: n}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return startSpec{kind: startTimestamp, n: t.UnixMilli()}, nil
	}
	return startSpec{}, fmt.Errorf("--from %q: want earliest, latest, an offset, -N, an RFC 3339 time (2026-12-02T10:00:00Z) or @unix-ms", s)
}

// consumeFormat writes one record.
type consumeFormat func(w *bufio.Writer, r *kgo.Record) error

func parseConsumeFormat(name string, sep []byte) (consumeFormat, error) {
	switch name {
	case "value":
		return func(w *bufio.Writer, r *kgo.Record) error {
			w.Write(r.Value)
			return w.WriteByte('\n')
		}, nil
	case "kv":
		return func(w *bufio.Writer, r *kgo.Record) error {
			w.Write(r.Key)
			w.Write(sep)
			w.Write(r.Value)
			return w.WriteByte('\n')
		}, nil
	case "json":
		return writeJSONRecord, nil
	}
	return nil, fmt.Errorf("--format %q: want value, kv or json", name)
}

type jsonRecord struct {
	Topic       string       `json:"topic"`
	Partition   int32        `json:"partition"`
	Offset      int64        `json:"offset"`
	Timestamp   int64        `json:"timestamp"`
	Key         *string      `json:"key"`
	KeyBase64   string       `json:"key_base64,omitempty"`
	Value       *string      `json:"value"`
	ValueBase64 string       `json:"value_base64,omitempty"`
	Headers     []jsonHeader `json:"headers,omitempty"`
}

type jsonHeader struct {
	Key         string  `json:"key"`
	Value       *string `json:"value"`
	ValueBase64 string  `json:"value_base64,omitempty"`
}

// jsonBytes keeps binary data lossless: JSON strings cannot carry invalid
// UTF-8, so such bytes travel base64-encoded in a sibling field.
func jsonBytes(b []byte) (text *string, b64 string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	return nil, base64.StdEncoding.EncodeToString(b)
}

func writeJSONRecord(w *bufio.Writer, r *kgo.Record) error {
	jr := jsonRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli()}
	jr.Key, jr.KeyBase64 = jsonBytes(r.Key)
	jr.Value, jr.ValueBase64 = jsonBytes(r.Value)
	for _, h := range r.Headers {
		jh := jsonHeader{Key: h.Key}
		jh.Value, jh.ValueBase64 = jsonBytes(h.Value)
		jr.Headers = append(jr.Headers, jh)
	}
	b, err := json.Marshal(jr)
	if err != nil {
		return err
	}
	w.Write(b)
	return w.WriteByte('\n')
}

// consumePlan is where each partition starts and, without --follow, the
// high watermark it stops at.
type consumePlan struct {
	start map[int32]int64
	stop  map[int32]int64 // nil with --follow
}

// partitionBounds are one partition's offsets when the command started.
type partitionBounds struct {
	logStart, highWatermark int64
	afterTime               int64 // first offset at or after the --from time; only for startTimestamp
}

// planConsume resolves --from for each partition. Offsets outside the log are
// clamped, with a warning from warn, rather than left to the client's reset
// policy, so the user sees exactly where reading began.
func planConsume(spec startSpec, follow bool, bounds map[int32]partitionBounds, warn func(format string, args ...any)) consumePlan {
	plan := consumePlan{start: make(map[int32]int64, len(bounds))}
	if !follow {
		plan.stop = make(map[int32]int64, len(bounds))
	}
	for p, b := range bounds {
		var at int64
		switch spec.kind {
		case startEarliest:
			at = b.logStart
		case startLatest:
			at = b.highWatermark
		case startOffset:
			at = spec.n
			if at < b.logStart {
				warn("partition %d: offset %d is below the log start offset %d, starting there", p, at, b.logStart)
				at = b.logStart
			} else if at > b.highWatermark {
				warn("partition %d: offset %d is past the high watermark %d, starting there", p, at, b.highWatermark)
				at = b.highWatermark
			}
		case startBeforeEnd:
			at = max(b.highWatermark-spec.n, b.logStart)
		case startTimestamp:
			at = min(max(b.afterTime, b.logStart), b.highWatermark)
		}
		if !follow {
			if at >= b.highWatermark {
				continue // nothing to read before the stop point
			}
			plan.stop[p] = b.highWatermark
		}
		plan.start[p] = at
	}
	return plan
}

func runConsume(c *cli.Context) error {
	topic := c.String("topic")
	spec, err := parseStartSpec(c.String("from"))
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	sep, err := parseSeparator(c.String("key-separator"))
	if err != nil {
		return fmt.Errorf("consume: --key-separator: %w", err)
	}
	format, err := parseConsumeFormat(c.String("format"), sep)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	count := c.Int64("count")
	if count < 0 {
		return fmt.Errorf("consume: --count %d: must not be negative", count)
	}
	follow := c.Bool("follow")
	quiet := c.Bool("quiet")
	if group := c.String("group"); group != "" {
		return runGroupConsume(c, topic, group, format, count, quiet)
	}
	warn := func(format string, args ...any) {
		if !quiet {
			fmt.Fprintf(c.App.ErrWriter, "consume: "+format+"\n", args...)
		}
	}

	cl, err := newKafkaClient(c, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	defer cl.Close()

	bounds, err := listPartitionBounds(c, kadm.NewClient(cl), topic, c.IntSlice("partition"), spec)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	plan := planConsume(spec, follow, bounds, warn)

	remaining := len(plan.start)
	if remaining > 0 {
		offsets := make(map[int32]kgo.Offset, len(plan.start))
		for p, at := range plan.start {
			offsets[p] = kgo.NewOffset().At(at)
		}
		cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets})
	}
	l := newConsumeLoop(c, cl, format, count)
	// Partitions that reached their stop offset are paused together before
	// the next poll: each pause call copies the client's whole paused set,
	// so one call per partition is quadratic in partitions (minutes at
	// 50,000).
	var ended []int32
	l.more = func() bool {
		if len(ended) > 0 {
			cl.PauseFetchPartitions(map[string][]int32{topic: ended})
			ended = nil
		}
		return remaining > 0
	}
	l.keep = func(r *kgo.Record) bool {
		if plan.stop == nil {
			return true
		}
		end, active := plan.stop[r.Partition]
		if !active || r.Offset >= end {
			return false
		}
		if r.Offset+1 >= end {
			delete(plan.stop, r.Partition)
			ended = append(ended, r.Partition)
			remaining--
		}
		return true
	}
	err = l.run(c)
	if !quiet {
		fmt.Fprintf(c.App.ErrWriter, "consumed topic=%s records=%d partitions=%d elapsed=%s\n",
			topic, l.consumed, len(l.touched), time.Since(l.start).Round(time.Millisecond))
	}
	return err
}

// consumeLoop polls and prints records until SIGINT/SIGTERM, --count,
// a fetch error, or more says stop.
type consumeLoop struct {
	cl       *kgo.Client
	out      *bufio.Writer
	format   consumeFormat
	count    int64 // 0: no limit
	consumed int64
	touched  map[int32]struct{}
	start    time.Time
	// more reports whether to poll again; nil: until stopped.
	more func() bool
	// keep says whether a fetched record is printed; nil: all.
	keep func(r *kgo.Record) bool
	// printed gets each poll's records once they reached the output.
	printed func(rs []*kgo.Record)
}

func newConsumeLoop(c *cli.Context, cl *kgo.Client, format consumeFormat, count int64) *consumeLoop {
	return &consumeLoop{
		cl:      cl,
		out:     bufio.NewWriterSize(c.App.Writer, 64<<10),
		format:  format,
		count:   count,
		touched: make(map[int32]struct{}),
		start:   time.Now(),
	}
}

func (l *consumeLoop) run(c *cli.Context) error {
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var fetchErr error
	for (l.more == nil || l.more()) && (l.count == 0 || l.consumed < l.count) {
		fetches := l.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			fetchErr = fmt.Errorf("consume: partition %d: %w", errs[0].Partition, errs[0].Err)
			break
		}
		var writeErr error
		var printed []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			if writeErr != nil || (l.count > 0 && l.consumed >= l.count) || l.keep != nil && !l.keep(r) {
				return
			}
			writeErr = l.format(l.out, r)
			l.consumed++
			l.touched[r.Partition] = struct{}{}
			printed = append(printed, r)
		})
		if writeErr == nil {
			writeErr = l.out.Flush()
		}
		if writeErr != nil {
			return fmt.Errorf("consume: write output: %w", writeErr)
		}
		if l.printed != nil {
			l.printed(printed)
		}
	}
	if err := l.out.Flush(); err != nil {
		return fmt.Errorf("consume: write output: %w", err)
	}
	return fetchErr
}

// listPartitionBounds fetches the topic's partitions and their offsets;
// partitions lists the ones wanted (empty: all).
func listPartitionBounds(c *cli.Context, adm *kadm.Client, topic string, partitions []int, spec startSpec) (map[int32]partitionBounds, error) {
	ctx, cancel := requestContext(c)
	defer cancel()
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	td, ok := topics[topic]
	if !ok {
		return nil, fmt.Errorf("topic %s: missing from the metadata answer", topic)
	}
	if td.Err != nil {
		return nil, fmt.Errorf("topic %s: %w", topic, td.Err)
	}
	want := make(map[int32]bool)
	if len(partitions) == 0 {
		for p := range td.Partitions {
			want[p] = true
		}
	}
	for _, p := range partitions {
		if _, ok := td.Partitions[int32(p)]; p < 0 || p > 1<<31-1 || !ok {
			return nil, fmt.Errorf("topic %s has no partition %d (it has %d)", topic, p, len(td.Partitions))
		}
		want[int32(p)] = true
	}

	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("log start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("high watermarks: %w", err)
	}
	var afterTime kadm.ListedOffsets
	if spec.kind == startTimestamp {
		if afterTime, err = adm.ListOffsetsAfterMilli(ctx, spec.n, topic); err != nil {
			return nil, fmt.Errorf("offsets for time %d: %w", spec.n, err)
		}
	}

	bounds := make(map[int32]partitionBounds, len(want))
	for _, p := range sortedPartitions(want) {
		var b partitionBounds
		for _, l := range []struct {
			what   string
			list   kadm.ListedOffsets
			offset *int64
		}{
			{"log start offset", starts, &b.logStart},
			{"high watermark", ends, &b.highWatermark},
			{"offset for time", afterTime, &b.afterTime},
		} {
			if l.list == nil {
				continue
			}
			o, ok := l.list.Lookup(topic, p)
			if !ok {
				return nil, fmt.Errorf("partition %d: no %s in the answer", p, l.what)
			}
			if o.Err != nil {
				return nil, fmt.Errorf("partition %d: %s: %w", p, l.what, o.Err)
			}
			*l.offset = o.Offset
		}
		bounds[p] = b
	}
	return bounds, nil
}

func sortedPartitions(set map[int32]bool) []int32 {
	ps := make([]int32, 0, len(set))
	for p := range set {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}
