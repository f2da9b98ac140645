package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/unilog/unilog/internal/poll"
)

// consumedRecord is one line of `consume --format json`.
type consumedRecord struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Timestamp int64   `json:"timestamp"`
	Key       *string `json:"key"`
	Value     *string `json:"value"`
	Headers   []struct {
		Key   string  `json:"key"`
		Value *string `json:"value"`
	} `json:"headers"`
}

func consumeJSON(t *testing.T, addr string, args ...string) []consumedRecord {
	t.Helper()
	r := mustRun(t, "", append([]string{"consume", "--brokers", addr, "--format", "json"}, args...)...)
	return parseConsumed(t, r.stdout)
}

func parseConsumed(t *testing.T, out string) []consumedRecord {
	t.Helper()
	var recs []consumedRecord
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var r consumedRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("consume output line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

var produceSummary = regexp.MustCompile(`produced topic=(\S+) records=(\d+) bytes=(\d+) partitions=(\d+) errors=(\d+) elapsed=\S+`)

// summaryField returns field i (1-based, as in produceSummary) of the
// summary on stderr.
func summaryField(t *testing.T, stderr string, i int) int {
	t.Helper()
	m := produceSummary.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no produce summary in stderr:\n%s", stderr)
	}
	n, _ := strconv.Atoi(m[i])
	return n
}

func createTopic(t *testing.T, addr, topic string, partitions int) {
	t.Helper()
	r := mustRun(t, "", "topic", "create", "--brokers", addr, "--topic", topic, "--partitions", strconv.Itoa(partitions))
	if want := fmt.Sprintf("created topic %s with %d partitions", topic, partitions); !strings.Contains(r.stdout, want) {
		t.Fatalf("topic create printed %q, want %q", r.stdout, want)
	}
}

func TestTopicCommands(t *testing.T) {
	eachBroker(t, func(t *testing.T, addr string) {
		createTopic(t, addr, "orders", 64)
		createTopic(t, addr, "audit", 1)

		if r := runCLI(t, "", "topic", "create", "--brokers", addr, "--topic", "orders", "--partitions", "2"); r.err == nil ||
			!strings.Contains(r.err.Error(), "TOPIC_ALREADY_EXISTS") {
			t.Errorf("creating an existing topic: %v", r.err)
		}
		if r := runCLI(t, "", "topic", "create", "--brokers", addr, "--topic", "x", "--partitions", "0"); r.err == nil {
			t.Error("--partitions 0 accepted")
		}

		list := mustRun(t, "", "topic", "list", "--brokers", addr).stdout
		if !regexp.MustCompile(`(?m)^audit\s+1$`).MatchString(list) || !regexp.MustCompile(`(?m)^orders\s+64$`).MatchString(list) ||
			strings.Contains(list, "__consumer_offsets") {
			t.Fatalf("topic list (user topics only):\n%s", list)
		}

		var in strings.Builder
		for i := range 10 {
			fmt.Fprintf(&in, "line %d\n", i)
		}
		mustRun(t, in.String(), "produce", "--brokers", addr, "--topic", "orders", "--partition", "5")

		desc := mustRun(t, "", "topic", "describe", "--brokers", addr, "orders").stdout
		if !strings.Contains(desc, "topic orders") || !strings.Contains(desc, "partitions 64") {
			t.Fatalf("describe header:\n%s", desc)
		}
		rows := regexp.MustCompile(`(?m)^(\d+)\s+(-?\d+)\s+\[.*?\]\s+\[.*?\]\s+(\d+)\s+(\d+)\s+(\d+)$`).FindAllStringSubmatch(desc, -1)
		if len(rows) != 64 {
			t.Fatalf("describe shows %d partition rows, want 64:\n%s", len(rows), desc)
		}
		for i, row := range rows {
			wantHW := "0"
			if i == 5 {
				wantHW = "10"
			}
			if row[1] != strconv.Itoa(i) || row[3] != "0" || row[4] != wantHW || row[5] != wantHW {
				t.Errorf("describe row %q: want partition %d log start 0 high watermark %s", row[0], i, wantHW)
			}
		}

		if r := runCLI(t, "", "topic", "describe", "--brokers", addr, "--topic", "missing"); r.err == nil ||
			!strings.Contains(r.err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") {
			t.Errorf("describe of a missing topic: %v", r.err)
		}

		if r := mustRun(t, "", "topic", "delete", "--brokers", addr, "orders"); r.stdout != "deleted topic orders\n" {
			t.Errorf("topic delete printed %q", r.stdout)
		}
		if r := runCLI(t, "", "topic", "delete", "--brokers", addr, "orders"); r.err == nil ||
			!strings.Contains(r.err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") {
			t.Errorf("deleting a deleted topic: %v", r.err)
		}
		if r := runCLI(t, "", "topic", "delete", "--brokers", addr); r.err == nil {
			t.Error("topic delete without a topic accepted")
		}
		list = mustRun(t, "", "topic", "list", "--brokers", addr).stdout
		if strings.Contains(list, "orders") || !strings.Contains(list, "audit") {
			t.Fatalf("topic list after delete:\n%s", list)
		}
	})
}

func TestProduceKeysFollowMurmur2(t *testing.T) {
	eachBroker(t, func(t *testing.T, addr string) {
		const partitions = 1000
		createTopic(t, addr, "keyed", partitions)

		// Three rounds of: each Kafka test vector key, 500 more keys, and
		// a line without the separator, which is a record without a key.
		var in strings.Builder
		lines := 0
		for round := range 3 {
			for _, v := range kafkaMurmur2 {
				fmt.Fprintf(&in, "%s\t%s-%d\n", v.key, v.key, round)
				lines++
			}
			for u := range 500 {
				fmt.Fprintf(&in, "user-%d\tuser-%d-%d\n", u, u, round)
				lines++
			}
			fmt.Fprintf(&in, "unkeyed-%d\n", round)
			lines++
		}
		r := mustRun(t, in.String(), "produce", "--brokers", addr, "--topic", "keyed", "--parse-key",
			"--header", "source=test", "--header", "list=a,b")
		if got := summaryField(t, r.stderr, 2); got != lines {
			t.Fatalf("summary says %d records, want %d:\n%s", got, lines, r.stderr)
		}
		if got := summaryField(t, r.stderr, 5); got != 0 {
			t.Fatalf("summary says %d errors:\n%s", got, r.stderr)
		}

		recs := consumeJSON(t, addr, "--topic", "keyed")
		if len(recs) != lines {
			t.Fatalf("consumed %d records, want %d", len(recs), lines)
		}
		want := make(map[string]int32)
		for _, v := range kafkaMurmur2 {
			want[v.key] = kafkaPartition(v.hash, partitions)
		}
		keyPartition := make(map[string]int32)
		lastRound := make(map[string]int)
		unkeyed := 0
		for _, rec := range recs {
			if len(rec.Headers) != 2 || rec.Headers[0].Key != "source" || *rec.Headers[0].Value != "test" ||
				rec.Headers[1].Key != "list" || *rec.Headers[1].Value != "a,b" {
				t.Fatalf("record %+v: headers %+v", rec, rec.Headers)
			}
			if rec.Key == nil {
				unkeyed++
				continue
			}
			key := *rec.Key
			if w, ok := want[key]; ok && rec.Partition != w {
				t.Errorf("key %q in partition %d, Kafka's murmur2 puts it in %d", key, rec.Partition, w)
			}
			if p, seen := keyPartition[key]; seen && p != rec.Partition {
				t.Errorf("key %q in partitions %d and %d", key, p, rec.Partition)
			}
			keyPartition[key] = rec.Partition
			round, err := strconv.Atoi(strings.TrimPrefix(*rec.Value, key+"-"))
			if err != nil {
				t.Fatalf("record value %q", *rec.Value)
			}
			// Same key, same partition: the rounds come back in produce order.
			if prev, seen := lastRound[key]; seen && round != prev+1 || !seen && round != 0 {
				t.Errorf("key %q: round %d after %d", key, round, prev)
			}
			lastRound[key] = round
		}
		if unkeyed != 3 {
			t.Errorf("%d records without a key, want 3", unkeyed)
		}
		used := make(map[int32]bool)
		for _, p := range keyPartition {
			used[p] = true
		}
		// 506 keys hashed over 1000 partitions land in about 400 of them.
		if len(used) < 300 {
			t.Errorf("506 keys landed in only %d partitions", len(used))
		}
		if got := summaryField(t, r.stderr, 4); got < len(used) {
			t.Errorf("summary says %d partitions touched, keys alone used %d", got, len(used))
		}
	})
}

func TestProduceRoundRobinAndFixedKey(t *testing.T) {
	eachBroker(t, func(t *testing.T, addr string) {
		createTopic(t, addr, "rr", 8)
		var in strings.Builder
		for i := range 80 {
			fmt.Fprintf(&in, "v%d\n", i)
		}
		r := mustRun(t, in.String(), "produce", "--brokers", addr, "--topic", "rr")
		if got := summaryField(t, r.stderr, 4); got != 8 {
			t.Errorf("round-robin touched %d partitions, want 8:\n%s", got, r.stderr)
		}
		perPartition := make(map[int32]int)
		for _, rec := range consumeJSON(t, addr, "--topic", "rr") {
			perPartition[rec.Partition]++
		}
		for p := range int32(8) {
			if perPartition[p] != 10 {
				t.Errorf("partition %d has %d records, want 10 (round-robin)", p, perPartition[p])
			}
		}

		r = mustRun(t, "a\nb\nc\n", "produce", "--brokers", addr, "--topic", "rr", "--key", "foobar")
		if got := summaryField(t, r.stderr, 4); got != 1 {
			t.Errorf("fixed key touched %d partitions, want 1", got)
		}
		// murmur2("foobar") mod 8, from Kafka's vector.
		p := kafkaPartition(-790332482, 8)
		recs := consumeJSON(t, addr, "--topic", "rr", "--partition", strconv.Itoa(int(p)), "--from", "10")
		if len(recs) != 3 || *recs[0].Value != "a" || *recs[2].Value != "c" || *recs[1].Key != "foobar" {
			t.Fatalf("partition %d from offset 10: %+v", p, recs)
		}
	})
}

func TestProduceOptions(t *testing.T) {
	eachBroker(t, func(t *testing.T, addr string) {
		createTopic(t, addr, "opts", 3)
		sent := 0
		for _, acks := range []string{"all", "1", "0"} {
			for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
				var in strings.Builder
				for i := range 20 {
					fmt.Fprintf(&in, "%s-%s-%d-%s\n", acks, codec, i, strings.Repeat("x", 100))
				}
				r := mustRun(t, in.String(), "produce", "--brokers", addr, "--topic", "opts", "--acks", acks,
					"--compression", codec, "--partition", "1")
				if got := summaryField(t, r.stderr, 2); got != 20 {
					t.Errorf("acks %s compression %s: %d records produced", acks, codec, got)
				}
				sent += 20
			}
		}
		// acks=0 is fire-and-forget: consume until everything arrived.
		recs := consumeJSON(t, addr, "--topic", "opts", "--partition", "1", "--follow", "--count", strconv.Itoa(sent))
		for i, rec := range recs {
			if rec.Offset != int64(i) {
				t.Fatalf("record %d has offset %d", i, rec.Offset)
			}
		}
		if len(recs) != sent {
			t.Fatalf("consumed %d records, want %d", len(recs), sent)
		}

		f := t.TempDir() + "/lines.txt"
		writeFile(t, f, "k1|from file\nk2|second\n")
		mustRun(t, "", "produce", "--brokers", addr, "--topic", "opts", "--file", f, "-K", "--key-separator", "|", "-p", "2")
		out := mustRun(t, "", "consume", "--brokers", addr, "--topic", "opts", "-p", "2", "--format", "kv", "--key-separator", `\t`).stdout
		if out != "k1\tfrom file\nk2\tsecond\n" {
			t.Fatalf("kv output %q", out)
		}

		if r := runCLI(t, "", "produce", "--brokers", addr, "--topic", "opts", "--file", "/nonexistent/x"); r.err == nil {
			t.Error("missing --file accepted")
		}
	})
}

func TestConsumeFrom(t *testing.T) {
	eachBroker(t, func(t *testing.T, addr string) {
		createTopic(t, addr, "events", 4)
		mustRun(t, "a0\na1\na2\na3\na4\n", "produce", "--brokers", addr, "--topic", "events", "-p", "0")
		mustRun(t, "b0\nb1\n", "produce", "--brokers", addr, "--topic", "events", "-p", "3")

		// Timestamps are milliseconds: mark is the first millisecond after
		// the first batches were stored, so the later batch is at or after it.
		before := time.Now().UnixMilli()
		poll.True(t, "the clock to pass a millisecond", func() bool { return time.Now().UnixMilli() > before })
		mark := time.UnixMilli(time.Now().UnixMilli())
		mustRun(t, "a5\na6\n", "produce", "--brokers", addr, "--topic", "events", "-p", "0")

		values := func(args ...string) string {
			t.Helper()
			r := mustRun(t, "", append([]string{"consume", "--brokers", addr, "--topic", "events"}, args...)...)
			return strings.ReplaceAll(strings.TrimSuffix(r.stdout, "\n"), "\n", " ")
		}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"-p", "0"}, "a0 a1 a2 a3 a4 a5 a6"},
			{[]string{"-p", "0", "--from", "earliest"}, "a0 a1 a2 a3 a4 a5 a6"},
			{[]string{"-p", "0", "--from", "3"}, "a3 a4 a5 a6"},
			{[]string{"-p", "0", "--from", "-2"}, "a5 a6"},
			{[]string{"-p", "0", "--from", "latest"}, ""},
			{[]string{"-p", "0", "--from", "3", "--count", "2"}, "a3 a4"},
			{[]string{"-p", "0", "--from", mark.UTC().Format(time.RFC3339Nano)}, "a5 a6"},
			{[]string{"-p", "0", "--from", fmt.Sprintf("@%d", mark.UnixMilli())}, "a5 a6"},
			{[]string{"-p", "3", "-p", "1"}, "b0 b1"},
			{[]string{"-p", "0,3", "--from", "1", "--count", "100", "-q"}, ""}, // checked below by set
			{[]string{"--from", "@" + strconv.FormatInt(mark.Add(time.Hour).UnixMilli(), 10)}, ""},
		} {
			got := values(tc.args...)
			if strings.Contains(strings.Join(tc.args, " "), "0,3") {
				if fields := strings.Fields(got); len(fields) != 7 {
					t.Errorf("consume %q = %q, want a1..a6 and b1", tc.args, got)
				}
				continue
			}
			if got != tc.want {
				t.Errorf("consume %q = %q, want %q", tc.args, got, tc.want)
			}
		}

		r := mustRun(t, "", "consume", "--brokers", addr, "--topic", "events", "-p", "0", "--from", "100")
		if !strings.Contains(r.stderr, "past the high watermark 7") || r.stdout != "" {
			t.Errorf("offset past the end: stdout %q stderr %q", r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, "consumed topic=events records=0") {
			t.Errorf("summary: %q", r.stderr)
		}
		for _, bad := range [][]string{
			{"--topic", "nope"},
			{"--topic", "events", "-p", "4"},
			{"--topic", "events", "--from", "yesterday"},
			{"--topic", "events", "--format", "xml"},
			{"--topic", "events", "--count", "-1"},
		} {
			if r := runCLI(t, "", append([]string{"consume", "--brokers", addr, "--timeout", "5s"}, bad...)...); r.err == nil {
				t.Errorf("consume %q succeeded", bad)
			}
		}
	})
}

func TestConsumeFollow(t *testing.T) {
	eachBroker(t, func(t *testing.T, addr string) {
		createTopic(t, addr, "live", 2)
		done := make(chan cliResult, 1)
		go func() {
			done <- runCLI(t, "", "consume", "--brokers", addr, "--topic", "live", "--follow", "--count", "6", "--format", "json")
		}()
		mustRun(t, "x\ny\nz\n", "produce", "--brokers", addr, "--topic", "live", "-p", "0")
		mustRun(t, "u\nv\nw\n", "produce", "--brokers", addr, "--topic", "live", "-p", "1")
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		recs := parseConsumed(t, r.stdout)
		if len(recs) != 6 {
			t.Fatalf("follow returned %d records, want 6: %s", len(recs), r.stdout)
		}

		// --follow without --count ends with the context (SIGINT in real use):
		// cancelled once it has printed all six records, so it is provably in
		// its follow loop, it returns without error.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var stdout, stderr syncBuffer
		follow := make(chan error, 1)
		go func() {
			follow <- testApp(strings.NewReader(""), &stdout, &stderr).RunContext(ctx, []string{"unilog", "consume", "--brokers", addr, "--topic", "live", "--follow", "--from", "earliest"})
		}()
		poll.True(t, "--follow to print the six records", func() bool { return strings.Count(stdout.String(), "\n") == 6 })
		cancel()
		if err := <-follow; err != nil {
			t.Fatalf("interrupted follow: %v, stderr %q", err, stderr.String())
		}
		if n := strings.Count(stdout.String(), "\n"); n != 6 {
			t.Fatalf("interrupted follow printed %d lines, want 6", n)
		}
	})
}

func TestProduceUnknownTopicFails(t *testing.T) {
	eachBroker(t, func(t *testing.T, addr string) {
		r := runCLI(t, "a\nb\n", "produce", "--brokers", addr, "--topic", "absent", "--timeout", "3s")
		if r.err == nil || !strings.Contains(r.err.Error(), "2 of 2 records failed") {
			t.Fatalf("produce to a missing topic: %v\n%s", r.err, r.stderr)
		}
		if !strings.Contains(r.stderr, "errors=2") || !strings.Contains(r.stderr, "2 records:") {
			t.Fatalf("stderr does not explain the failure:\n%s", r.stderr)
		}
	})
}

// The log start offset moves when old records go (retention in unilog,
// DeleteRecords in kfake, which can do it on demand): describe shows it and
// consume starts there.
func TestConsumeAfterLogStartMoved(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	createTopic(t, addr, "trimmed", 1)
	mustRun(t, "r0\nr1\nr2\nr3\nr4\nr5\n", "produce", "--brokers", addr, "--topic", "trimmed")
	if err := c.DeleteRecords("trimmed", 0, 4); err != nil {
		t.Fatal(err)
	}
	desc := mustRun(t, "", "topic", "describe", "--brokers", addr, "trimmed").stdout
	if !regexp.MustCompile(`(?m)^0\s+\d+\s+\[\d+\]\s+\[\d+\]\s+4\s+6\s+2$`).MatchString(desc) {
		t.Errorf("describe after trimming to offset 4:\n%s", desc)
	}
	for _, from := range []string{"earliest", "1", "-5"} {
		r := mustRun(t, "", "consume", "--brokers", addr, "--topic", "trimmed", "--from", from)
		if r.stdout != "r4\nr5\n" {
			t.Errorf("--from %s after trimming: %q", from, r.stdout)
		}
		if from == "1" && !strings.Contains(r.stderr, "offset 1 is below the log start offset 4") {
			t.Errorf("no clamping warning: %q", r.stderr)
		}
	}
}

// --config reaches the broker intact, commas included. (This runs on
// kfake: unilog's one list config, cleanup.policy, takes only "delete";
// controlplane_test.go creates a topic with configs on unilog.)
func TestTopicCreateConfigs(t *testing.T) {
	addr := startFakeKafka(t)
	mustRun(t, "", "topic", "create", "--brokers", addr, "--topic", "cfg", "--config", "retention.ms=1234",
		"--config", "cleanup.policy=compact,delete")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(context.Background(), "cfg")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[string]string)
	for _, c := range rc.Configs {
		if c.Value != nil {
			got[c.Key] = *c.Value
		}
	}
	if got["retention.ms"] != "1234" || got["cleanup.policy"] != "compact,delete" {
		t.Errorf("configs after create: retention.ms=%q cleanup.policy=%q", got["retention.ms"], got["cleanup.policy"])
	}
}

// The first record is answered before the rest are handed to franz-go, so
// the topic's Metadata is read once, not again for the records that arrived
// while it was read (at 100,000 partitions a second read cost the client a
// tenth of its CPU, issue 19), and every record still arrives once.
func TestProduceReadsMetadataOnce(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	const partitions, lines = 1000, 10000
	createTopic(t, addr, "once", partitions)

	var metadata atomic.Int32
	c.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		for _, topic := range kreq.(*kmsg.MetadataRequest).Topics {
			// The first answer is slow, as one of 100,000 partitions
			// is, so that the input is read while it is awaited.
			if topic.Topic != nil && *topic.Topic == "once" && metadata.Add(1) == 1 {
				time.Sleep(300 * time.Millisecond)
			}
		}
		return nil, nil, false
	})
	// So is the first Produce answer (once: without KeepControl), so that
	// the client outlives the 100 ms MetadataMinAge after that read, and a
	// second read asked for by then would be seen.
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		time.Sleep(300 * time.Millisecond)
		return nil, nil, false
	})
	var in strings.Builder
	for i := range lines {
		fmt.Fprintf(&in, "key-%d\tvalue %d\n", i, i)
	}
	r := mustRun(t, in.String(), "produce", "--brokers", addr, "--topic", "once", "--parse-key")
	if got := summaryField(t, r.stderr, 2); got != lines {
		t.Fatalf("summary says %d records, want %d:\n%s", got, lines, r.stderr)
	}
	if n := metadata.Load(); n != 1 {
		t.Errorf("produce asked for the topic's Metadata %d times, want once", n)
	}

	seen := make(map[string]bool)
	for _, rec := range consumeJSON(t, addr, "--topic", "once") {
		if seen[*rec.Value] {
			t.Fatalf("%q read twice", *rec.Value)
		}
		seen[*rec.Value] = true
	}
	if len(seen) != lines {
		t.Fatalf("read back %d records, want %d", len(seen), lines)
	}
}
