package main

import (
	"bufio"
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

func TestSplitBrokerList(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "127.0.0.1:9092", want: []string{"127.0.0.1:9092"}},
		{in: "a:1, b:2 ,c:3", want: []string{"a:1", "b:2", "c:3"}},
		{in: "", wantErr: true},
		{in: "a:1,,b:2", wantErr: true},
		{in: "a:1,", wantErr: true},
	} {
		got, err := splitBrokerList(tc.in)
		if (err != nil) != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitBrokerList(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseSeparator(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: `\t`, want: "\t"},
		{in: "\t", want: "\t"},
		{in: `|`, want: "|"},
		{in: `::`, want: "::"},
		{in: `\x00`, want: "\x00"},
		{in: `a\nb`, want: "a\nb"},
		{in: "", wantErr: true},
		{in: `\q`, wantErr: true},
	} {
		got, err := parseSeparator(tc.in)
		if (err != nil) != tc.wantErr || string(got) != tc.want {
			t.Errorf("parseSeparator(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestKVFlag(t *testing.T) {
	var f kvFlag
	for _, s := range []string{"cleanup.policy=compact,delete", "retention.ms=1000", "empty="} {
		if err := f.Set(s); err != nil {
			t.Fatalf("Set(%q): %v", s, err)
		}
	}
	want := []kvPair{{"cleanup.policy", "compact,delete"}, {"retention.ms", "1000"}, {"empty", ""}}
	if !reflect.DeepEqual(f.pairs, want) {
		t.Fatalf("pairs = %q, want %q", f.pairs, want)
	}
	for _, bad := range []string{"novalue", "=v", ""} {
		if err := f.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}

func TestParseStartSpec(t *testing.T) {
	ts := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC).UnixMilli()
	for _, tc := range []struct {
		in      string
		want    startSpec
		wantErr bool
	}{
		{in: "earliest", want: startSpec{kind: startEarliest}},
		{in: "beginning", want: startSpec{kind: startEarliest}},
		{in: "latest", want: startSpec{kind: startLatest}},
		{in: "end", want: startSpec{kind: startLatest}},
		{in: "0", want: startSpec{kind: startOffset, n: 0}},
		{in: "42", want: startSpec{kind: startOffset, n: 42}},
		{in: "-10", want: startSpec{kind: startBeforeEnd, n: 10}},
		{in: "2026-12-02T10:00:00Z", want: startSpec{kind: startTimestamp, n: ts}},
		{in: "2026-12-02T11:00:00+01:00", want: startSpec{kind: startTimestamp, n: ts}},
		{in: "2026-12-02T10:00:00.250Z", want: startSpec{kind: startTimestamp, n: ts + 250}},
		{in: fmt.Sprintf("@%d", ts), want: startSpec{kind: startTimestamp, n: ts}},
		{in: "@", wantErr: true},
		{in: "@-5", wantErr: true},
		{in: "@soon", wantErr: true},
		{in: "2026-12-02", wantErr: true},
		{in: "yesterday", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := parseStartSpec(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseStartSpec(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestPlanConsume(t *testing.T) {
	// Partition 0 holds [10, 20), partition 1 is empty at 5, partition 2 holds [0, 3).
	bounds := map[int32]partitionBounds{
		0: {logStart: 10, highWatermark: 20, afterTime: 15},
		1: {logStart: 5, highWatermark: 5, afterTime: 5},
		2: {logStart: 0, highWatermark: 3, afterTime: 3},
	}
	for _, tc := range []struct {
		name      string
		spec      startSpec
		follow    bool
		wantStart map[int32]int64
		wantStop  map[int32]int64
		wantWarns int
	}{
		{
			name:      "earliest",
			spec:      startSpec{kind: startEarliest},
			wantStart: map[int32]int64{0: 10, 2: 0},
			wantStop:  map[int32]int64{0: 20, 2: 3},
		},
		{
			name:      "earliest follow keeps empty partitions",
			spec:      startSpec{kind: startEarliest},
			follow:    true,
			wantStart: map[int32]int64{0: 10, 1: 5, 2: 0},
		},
		{
			name:      "latest reads nothing without follow",
			spec:      startSpec{kind: startLatest},
			wantStart: map[int32]int64{},
			wantStop:  map[int32]int64{},
		},
		{
			name:      "latest follow",
			spec:      startSpec{kind: startLatest},
			follow:    true,
			wantStart: map[int32]int64{0: 20, 1: 5, 2: 3},
		},
		{
			name:      "offset clamped both ways",
			spec:      startSpec{kind: startOffset, n: 2},
			wantStart: map[int32]int64{0: 10, 2: 2},
			wantStop:  map[int32]int64{0: 20, 2: 3},
			wantWarns: 2, // below partition 0's start, past partition 1's end
		},
		{
			name:      "before end",
			spec:      startSpec{kind: startBeforeEnd, n: 4},
			wantStart: map[int32]int64{0: 16, 2: 0},
			wantStop:  map[int32]int64{0: 20, 2: 3},
		},
		{
			name:      "timestamp",
			spec:      startSpec{kind: startTimestamp, n: 1},
			wantStart: map[int32]int64{0: 15},
			wantStop:  map[int32]int64{0: 20},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warns := 0
			plan := planConsume(tc.spec, tc.follow, bounds, func(string, ...any) { warns++ })
			if !reflect.DeepEqual(plan.start, tc.wantStart) {
				t.Errorf("start = %v, want %v", plan.start, tc.wantStart)
			}
			if !reflect.DeepEqual(plan.stop, tc.wantStop) {
				t.Errorf("stop = %v, want %v", plan.stop, tc.wantStop)
			}
			if warns != tc.wantWarns {
				t.Errorf("%d warnings, want %d", warns, tc.wantWarns)
			}
		})
	}
}

func TestSplitKey(t *testing.T) {
	for _, tc := range []struct {
		line, sep  string
		key, value string
		nilKey     bool
	}{
		{line: "k\tv", sep: "\t", key: "k", value: "v"},
		{line: "k\tv\tw", sep: "\t", key: "k", value: "v\tw"},
		{line: "\tv", sep: "\t", key: "", value: "v"},
		{line: "k\t", sep: "\t", key: "k", value: ""},
		{line: "no separator", sep: "\t", nilKey: true, value: "no separator"},
		{line: "a::b", sep: "::", key: "a", value: "b"},
		{line: "a:b", sep: "::", nilKey: true, value: "a:b"},
		{line: "", sep: "\t", nilKey: true, value: ""},
	} {
		k, v := splitKey([]byte(tc.line), []byte(tc.sep))
		if (k == nil) != tc.nilKey || string(k) != tc.key || string(v) != tc.value {
			t.Errorf("splitKey(%q, %q) = %q (nil %v), %q; want %q (nil %v), %q",
				tc.line, tc.sep, k, k == nil, v, tc.key, tc.nilKey, tc.value)
		}
	}
}

// kafkaMurmur2 are the vectors of Apache Kafka's UtilsTest.testMurmur2: the
// Java client's murmur2 of each key as a signed int.
var kafkaMurmur2 = []struct {
	key  string
	hash int32
}{
	{"21", -973932308},
	{"foobar", -790332482},
	{"a-little-bit-long-string", -985981536},
	{"a-little-bit-longer-string", -1486304829},
	{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
	{"abc", 479470107},
}

// kafkaPartition is where the Java client's default partitioner puts a key
// with the given murmur2 hash: toPositive(hash) % n.
func kafkaPartition(hash int32, n int) int32 {
	return int32(int(uint32(hash)&0x7fffffff) % n)
}

func TestKeyOrRoundRobinPartitioner(t *testing.T) {
	for _, name := range []string{"round-robin", "sticky"} {
		part, err := parsePartitioner(name)
		if err != nil {
			t.Fatal(err)
		}
		tp := part.ForTopic("t")
		for _, n := range []int{1, 7, 50, 1000} {
			for _, v := range kafkaMurmur2 {
				r := &kgo.Record{Key: []byte(v.key)}
				if got, want := tp.Partition(r, n), kafkaPartition(v.hash, n); int32(got) != want {
					t.Errorf("%s: key %q over %d partitions -> %d, Kafka puts it in %d", name, v.key, n, got, want)
				}
				if !tp.RequiresConsistency(r) {
					t.Errorf("%s: keyed record must require consistency", name)
				}
			}
		}
	}
	if got := kafkaPartition(-790332482, 50); got != 16 {
		t.Fatalf("kafkaPartition(foobar, 50) = %d, want 16", got)
	}

	tp := keyOrRoundRobinPartitioner{}.ForTopic("t")
	seen := make(map[int]int)
	for range 30 {
		seen[tp.Partition(&kgo.Record{Value: []byte("x")}, 3)]++
	}
	if want := map[int]int{0: 10, 1: 10, 2: 10}; !reflect.DeepEqual(seen, want) {
		t.Fatalf("unkeyed records over 3 partitions: %v, want round-robin %v", seen, want)
	}
}

func TestConsumeFormats(t *testing.T) {
	ts := time.UnixMilli(1764669600123)
	for _, tc := range []struct {
		format string
		rec    kgo.Record
		want   string
	}{
		{format: "value", rec: kgo.Record{Key: []byte("k"), Value: []byte("v")}, want: "v\n"},
		{format: "kv", rec: kgo.Record{Key: []byte("k"), Value: []byte("v")}, want: "k\tv\n"},
		{format: "kv", rec: kgo.Record{Value: []byte("v")}, want: "\tv\n"},
		{
			format: "json",
			rec: kgo.Record{Topic: "t", Partition: 3, Offset: 7, Timestamp: ts, Key: []byte("k"), Value: []byte(`say "hi"`),
				Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("1")}}},
			want: `{"topic":"t","partition":3,"offset":7,"timestamp":1764669600123,"key":"k","value":"say \"hi\"","headers":[{"key":"h","value":"1"}]}` + "\n",
		},
		{
			format: "json",
			rec:    kgo.Record{Topic: "t", Timestamp: ts, Value: []byte{0xff, 0x00}},
			want:   `{"topic":"t","partition":0,"offset":0,"timestamp":1764669600123,"key":null,"value":null,"value_base64":"/wA="}` + "\n",
		},
		{
			format: "json",
			rec:    kgo.Record{Topic: "t", Timestamp: ts, Key: []byte{}, Value: []byte{}},
			want:   `{"topic":"t","partition":0,"offset":0,"timestamp":1764669600123,"key":"","value":""}` + "\n",
		},
	} {
		f, err := parseConsumeFormat(tc.format, []byte("\t"))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		if err := f(w, &tc.rec); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if buf.String() != tc.want {
			t.Errorf("%s format:\n got %s\nwant %s", tc.format, buf.String(), tc.want)
		}
	}
	if _, err := parseConsumeFormat("xml", nil); err == nil {
		t.Error("format xml accepted")
	}
}

// parsedProduce runs the produce command's flag parsing (not its action)
// on args.
func parsedProduce(t *testing.T, args ...string) (*produceOptions, error) {
	t.Helper()
	cmd := produceCommand()
	var po *produceOptions
	var perr error
	cmd.Action = func(c *cli.Context) error {
		po, perr = parseProduceFlags(c)
		return nil
	}
	app := &cli.App{Name: "unilog", Commands: []*cli.Command{cmd}, Writer: &bytes.Buffer{}, ErrWriter: &bytes.Buffer{},
		ExitErrHandler: func(*cli.Context, error) {}}
	if err := app.Run(append([]string{"unilog", "produce"}, args...)); err != nil {
		return nil, err
	}
	return po, perr
}

func TestParseProduceFlags(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		wantErr   string
		partition int32
		key       string
		parseKey  bool
		sep       string
		headers   int
	}{
		{args: []string{"--topic", "t"}, partition: -1, sep: "\t"},
		{args: []string{"-t", "t", "-p", "3"}, partition: 3, sep: "\t"},
		{args: []string{"-t", "t", "--partition", "0"}, partition: 0, sep: "\t"},
		{args: []string{"-t", "t", "--key", "user-1"}, partition: -1, key: "user-1", sep: "\t"},
		{args: []string{"-t", "t", "-K", "--key-separator", ":"}, partition: -1, parseKey: true, sep: ":"},
		{args: []string{"-t", "t", "--header", "a=1", "--header", "b=x,y"}, partition: -1, sep: "\t", headers: 2},
		{args: []string{"-t", "t", "--acks", "0", "--compression", "zstd"}, partition: -1, sep: "\t"},
		{args: []string{"-t", "t", "--acks", "1", "-z", "lz4", "--partitioner", "sticky"}, partition: -1, sep: "\t"},
		{args: []string{"-t", "t", "--acks", "-1", "-z", "gzip"}, partition: -1, sep: "\t"},
		{args: []string{}, wantErr: `Required flag "topic" not set`},
		{args: []string{"-t", "t", "-p", "-2"}, wantErr: "must not be negative"},
		{args: []string{"-t", "t", "--key", "k", "--parse-key"}, wantErr: "exclude each other"},
		{args: []string{"-t", "t", "--acks", "2"}, wantErr: "--acks"},
		{args: []string{"-t", "t", "--compression", "brotli"}, wantErr: "--compression"},
		{args: []string{"-t", "t", "--partitioner", "random"}, wantErr: "--partitioner"},
		{args: []string{"-t", "t", "--key-separator", ""}, wantErr: "separator"},
		{args: []string{"-t", "t", "--header", "novalue"}, wantErr: "KEY=VALUE"},
	} {
		po, err := parsedProduce(t, tc.args...)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want one containing %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if po.partition != tc.partition || string(po.key) != tc.key || po.parseKey != tc.parseKey ||
			string(po.separator) != tc.sep || len(po.headers) != tc.headers {
			t.Errorf("%q: got partition %d key %q parseKey %v sep %q headers %d", tc.args,
				po.partition, po.key, po.parseKey, po.separator, len(po.headers))
		}
		if (tc.key == "") != (po.key == nil) {
			t.Errorf("%q: key %q nil=%v", tc.args, po.key, po.key == nil)
		}
	}
}
