package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The kcat tests drive the broker with librdkafka, a client that shares no
// code with franz-go. `make test` installs kcat (make test-deps); without
// it these tests fail rather than pass silently, unless UNILOG_SKIP_KCAT=1.
// Each runs against unilog and, as a control for the test itself, kfake.

func kcatBinary(t *testing.T) string {
	t.Helper()
	if os.Getenv("UNILOG_SKIP_KCAT") == "1" {
		t.Skip("UNILOG_SKIP_KCAT=1")
	}
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat is not installed (%v): run `make test-deps` (Debian package kcat), or set UNILOG_SKIP_KCAT=1 to skip the kcat tests", err)
	}
	return path
}

// runKcat runs kcat with stdin and returns its stdout, failing the test
// with kcat's stderr when it exits non-zero or does not finish.
func runKcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatBinary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v (context: %v)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, ctx.Err(),
			headOf(stdout.String()), headOf(stderr.String()))
	}
	return stdout.String()
}

// headOf keeps a failure message readable when librdkafka repeats an error
// every backoff period.
func headOf(s string) string {
	const max = 4 << 10
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("\n... (%d more bytes)", len(s)-max)
}

func TestKcatListsTopics(t *testing.T) {
	kcatBinary(t)
	eachBroker(t, func(t *testing.T, addr string) {
		createTopic(t, addr, "alpha", 3)
		createTopic(t, addr, "beta", 100)

		out := runKcat(t, "", "-b", addr, "-L")
		for _, want := range []string{`topic "alpha" with 3 partitions:`, `topic "beta" with 100 partitions:`, "1 brokers:"} {
			if !strings.Contains(out, want) {
				t.Errorf("kcat -L lacks %q:\n%s", want, out)
			}
		}

		var md struct {
			Brokers []struct {
				ID   int32  `json:"id"`
				Name string `json:"name"`
			} `json:"brokers"`
			Topics []struct {
				Topic      string `json:"topic"`
				Partitions []struct {
					Partition int32 `json:"partition"`
					Leader    int32 `json:"leader"`
				} `json:"partitions"`
			} `json:"topics"`
		}
		if err := json.Unmarshal([]byte(runKcat(t, "", "-b", addr, "-L", "-J")), &md); err != nil {
			t.Fatal(err)
		}
		if len(md.Brokers) != 1 || md.Brokers[0].Name != addr {
			t.Errorf("brokers %+v, want one at %s", md.Brokers, addr)
		}
		counts := make(map[string]int)
		for _, tp := range md.Topics {
			counts[tp.Topic] = len(tp.Partitions)
			for _, p := range tp.Partitions {
				if p.Leader != md.Brokers[0].ID {
					t.Errorf("%s/%d led by %d", tp.Topic, p.Partition, p.Leader)
				}
			}
		}
		// Kafka and unilog list their internal topics too; kfake has none.
		delete(counts, "__consumer_offsets")
		delete(counts, "__transaction_state")
		if counts["alpha"] != 3 || counts["beta"] != 100 || len(counts) != 2 {
			t.Errorf("kcat -L -J topics %v", counts)
		}
	})
}

// kcatLine is one line of `kcat -C -f '%p %o %k %s\n'`.
type kcatLine struct {
	partition int32
	offset    int64
	key       string
	value     string
}

func parseKcatLines(t *testing.T, out string) []kcatLine {
	t.Helper()
	var lines []kcatLine
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		f := strings.SplitN(l, " ", 4)
		if len(f) != 4 {
			t.Fatalf("kcat line %q", l)
		}
		p, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("kcat line %q", l)
		}
		lines = append(lines, kcatLine{int32(p), o, f[2], f[3]})
	}
	return lines
}

func TestKcatProduceConsume(t *testing.T) {
	kcatBinary(t)
	eachBroker(t, func(t *testing.T, addr string) {
		const partitions = 8
		createTopic(t, addr, "kc", partitions)

		// Every value is STREAM-SEQ. wantPartition says where each stream
		// must land (-1: anywhere) and wantCount how many records it has.
		wantPartition := map[string]int32{"plain": -1, "fixed": 2}
		wantCount := map[string]int{"plain": 50, "fixed": 50}
		var plain, fixed, keyed strings.Builder
		for i := range 50 {
			fmt.Fprintf(&plain, "plain-%d\n", i)
			fmt.Fprintf(&fixed, "fixed-%d\n", i)
		}
		for i := range 4 {
			for _, v := range kafkaMurmur2 {
				fmt.Fprintf(&keyed, "%s:keyed %s-%d\n", v.key, v.key, i)
				wantPartition["keyed "+v.key] = kafkaPartition(v.hash, partitions)
				wantCount["keyed "+v.key]++
			}
		}
		runKcat(t, plain.String(), "-b", addr, "-P", "-t", "kc")
		runKcat(t, fixed.String(), "-b", addr, "-P", "-t", "kc", "-p", "2")
		// murmur2_random is the Java client's partitioner; librdkafka's own
		// default (consistent_random) hashes keys with CRC32 instead.
		runKcat(t, keyed.String(), "-b", addr, "-P", "-t", "kc", "-K:", "-X", "partitioner=murmur2_random")
		for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
			runKcat(t, codec+"-0\n"+codec+"-1\n", "-b", addr, "-P", "-t", "kc", "-p", "5", "-z", codec)
			wantPartition[codec], wantCount[codec] = 5, 2
		}
		// Records from the unilog CLI, read back by kcat.
		mustRun(t, "cli-key\tcli-0\ncli-key\tcli-1\n", "produce", "--brokers", addr, "--topic", "kc", "--parse-key")
		wantPartition["cli"], wantCount["cli"] = partitionOfKey("cli-key", partitions), 2

		got := parseKcatLines(t, runKcat(t, "", "-b", addr, "-C", "-t", "kc", "-e", "-o", "beginning", "-f", `%p %o %k %s\n`))
		nextOffset := make(map[int32]int64)
		lastSeq := make(map[string]map[int32]int)
		gotCount := make(map[string]int)
		for _, l := range got {
			if l.offset != nextOffset[l.partition] {
				t.Errorf("partition %d: offset %d, want %d (gap or reorder)", l.partition, l.offset, nextOffset[l.partition])
			}
			nextOffset[l.partition] = l.offset + 1
			cut := strings.LastIndexByte(l.value, '-')
			if cut < 0 {
				t.Fatalf("unexpected value %q", l.value)
			}
			stream := l.value[:cut]
			seq, err := strconv.Atoi(l.value[cut+1:])
			if want, ok := wantPartition[stream]; err != nil || !ok {
				t.Fatalf("unexpected value %q", l.value)
			} else if want >= 0 && l.partition != want {
				t.Errorf("%q (key %q) in partition %d, want %d", l.value, l.key, l.partition, want)
			}
			if lastSeq[stream] == nil {
				lastSeq[stream] = make(map[int32]int)
			}
			if prev, ok := lastSeq[stream][l.partition]; ok && seq <= prev {
				t.Errorf("partition %d: %q after sequence %d", l.partition, l.value, prev)
			}
			lastSeq[stream][l.partition] = seq
			gotCount[stream]++
		}
		if !reflect.DeepEqual(gotCount, wantCount) {
			t.Errorf("records per stream:\n got %v\nwant %v", gotCount, wantCount)
		}

		// One partition from the beginning, compared with the unilog CLI's view.
		p2 := parseKcatLines(t, runKcat(t, "", "-b", addr, "-C", "-t", "kc", "-p", "2", "-e", "-o", "beginning", "-f", `%p %o %k %s\n`))
		fromCLI := consumeJSON(t, addr, "--topic", "kc", "--partition", "2")
		if len(p2) != len(fromCLI) || len(p2) < 50 {
			t.Fatalf("partition 2: kcat read %d records, unilog consume %d", len(p2), len(fromCLI))
		}
		for i := range p2 {
			if p2[i].partition != 2 || p2[i].value != *fromCLI[i].Value || p2[i].offset != fromCLI[i].Offset {
				t.Errorf("partition 2 record %d: kcat %+v, unilog consume %+v", i, p2[i], fromCLI[i])
			}
		}
	})
}

// partitionOfKey is where the CLI's partitioner puts key among n partitions.
func partitionOfKey(key string, n int) int32 {
	return int32(keyOrRoundRobinPartitioner{}.ForTopic("").Partition(&kgo.Record{Key: []byte(key)}, n))
}

// TestKcatConsumesWideTopic reads a topic of thousands of partitions with
// kcat: librdkafka 2.0.2 lists every partition in every Fetch (it has no
// fetch sessions) and asks for each partition's start with its own
// ListOffsets, the pattern that a wide topic stresses. Every keyed record
// must come back exactly once, in its key's partition, at consecutive
// offsets from 0.
func TestKcatConsumesWideTopic(t *testing.T) {
	kcatBinary(t)
	eachBroker(t, func(t *testing.T, addr string) {
		const partitions, records = 2000, 8000
		createTopic(t, addr, "wide", partitions)
		var in strings.Builder
		for i := range records {
			fmt.Fprintf(&in, "k%d\tv%d\n", i, i)
		}
		mustRun(t, in.String(), "produce", "--brokers", addr, "--topic", "wide", "--parse-key")

		got := parseKcatLines(t, runKcat(t, "", "-b", addr, "-C", "-t", "wide", "-e", "-o", "beginning", "-q", "-f", `%p %o %k %s\n`))
		seen := make(map[string]bool, records)
		next := make(map[int32]int64)
		for _, l := range got {
			if l.value != "v"+strings.TrimPrefix(l.key, "k") {
				t.Fatalf("record %+v: value does not match its key", l)
			}
			if seen[l.key] {
				t.Errorf("key %q read twice", l.key)
			}
			seen[l.key] = true
			if want := partitionOfKey(l.key, partitions); l.partition != want {
				t.Errorf("key %q in partition %d, want %d", l.key, l.partition, want)
			}
			if l.offset != next[l.partition] {
				t.Errorf("partition %d: offset %d, want %d (gap or reorder)", l.partition, l.offset, next[l.partition])
			}
			next[l.partition] = l.offset + 1
		}
		if len(seen) != records {
			t.Errorf("kcat read %d distinct keys of %d (%d records)", len(seen), records, len(got))
		}
		if len(next) < partitions*9/10 {
			t.Errorf("records in %d partitions; %d keys should hit nearly all %d", len(next), records, partitions)
		}
	})
}
