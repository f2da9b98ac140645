package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestPartitionOrder(t *testing.T) {
	keyed := func(keys ...string) [][]byte {
		lines := make([][]byte, len(keys))
		for i, k := range keys {
			lines[i] = []byte(k + "\tvalue")
		}
		return lines
	}
	var many []string
	for i := range 1000 {
		many = append(many, "key-"+strconv.Itoa(i%300))
	}
	for _, tc := range []struct {
		name    string
		lines   [][]byte
		n       int
		inInput bool // nil: hand over in input order
	}{
		{name: "unknown partition count", lines: keyed("a", "b", "c"), n: 0, inInput: true},
		{name: "one partition", lines: keyed("a", "b", "c"), n: 1, inInput: true},
		{name: "one record", lines: keyed("a"), n: 10, inInput: true},
		{name: "a line without a key", lines: append(keyed("a", "b"), []byte("v")), n: 10, inInput: true},
		{name: "an empty key is a key", lines: keyed("", "a", "", "b"), n: 10},
		{name: "300 keys over 37 partitions", lines: keyed(many...), n: 37},
	} {
		order := partitionOrder(tc.lines, []byte("\t"), tc.n)
		if tc.inInput {
			if order != nil {
				t.Errorf("%s: order %v, want input order", tc.name, order)
			}
			continue
		}
		if len(order) != len(tc.lines) {
			t.Fatalf("%s: order of %d records for %d", tc.name, len(order), len(tc.lines))
		}
		seen := make([]bool, len(tc.lines))
		prevPart, prevIdx := int32(-1), int32(-1)
		for _, i := range order {
			if seen[i] {
				t.Fatalf("%s: record %d handed over twice", tc.name, i)
			}
			seen[i] = true
			key, _ := splitKey(tc.lines[i], []byte("\t"))
			p := int32(keyOrRoundRobinPartitioner{}.ForTopic("").Partition(&kgo.Record{Key: key}, tc.n))
			switch {
			case p < prevPart:
				t.Fatalf("%s: partition %d after %d", tc.name, p, prevPart)
			case p == prevPart && i < prevIdx:
				t.Fatalf("%s: partition %d: record %d after %d", tc.name, p, i, prevIdx)
			}
			prevPart, prevIdx = p, i
		}
	}
}

// TestPartitionCounterKeepsSticky: the wrapper that notes the partition
// count passes franz-go's new-batch call on, without which the sticky
// partitioner would put every record without a key in one partition, and
// does not offer it for the round-robin partitioner, which a second
// Partition call after it would make skip partitions.
func TestPartitionCounterKeepsSticky(t *testing.T) {
	rr, err := parsePartitioner("round-robin")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := (partitionCounter{Partitioner: rr, n: new(atomic.Int64)}).ForTopic("t").(kgo.TopicPartitionerOnNewBatch); ok {
		t.Fatal("the wrapped round-robin partitioner has OnNewBatch")
	}
	sticky, err := parsePartitioner("sticky")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	tp := partitionCounter{Partitioner: sticky, n: &n}.ForTopic("t")
	nb, ok := tp.(kgo.TopicPartitionerOnNewBatch)
	if !ok {
		t.Fatal("the wrapped sticky partitioner lost OnNewBatch")
	}
	used := make(map[int]bool)
	for range 50 {
		used[tp.Partition(&kgo.Record{Value: []byte("v")}, 100)] = true
		nb.OnNewBatch()
	}
	if len(used) < 2 {
		t.Fatalf("50 new batches went to partitions %v", used)
	}
	if n.Load() != 0 {
		t.Fatalf("records without a key set the partition count to %d", n.Load())
	}
	tp.Partition(&kgo.Record{Key: []byte("k")}, 100)
	if n.Load() != 100 {
		t.Fatalf("a keyed record over 100 partitions noted %d", n.Load())
	}
}

// TestProduceGroupsByPartition: keyed lines spread over many more
// partitions than franz-go buffers records go to the broker in one batch
// per partition (and per request that cut a partition's records), and
// each partition keeps its lines in input order. In input order they went
// in about one batch per record.
func TestProduceGroupsByPartition(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	const partitions, lines = 20000, 40000
	createTopic(t, addr, "grouped", partitions)

	var (
		mu       sync.Mutex
		requests int
		batches  int
	)
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		requests++
		for _, topic := range kreq.(*kmsg.ProduceRequest).Topics {
			batches += len(topic.Partitions)
		}
		return nil, nil, false
	})
	var in strings.Builder
	for i := range lines {
		fmt.Fprintf(&in, "key-%d\t%d\n", i%(lines/2), i)
	}
	path := filepath.Join(t.TempDir(), "lines")
	if err := os.WriteFile(path, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "", "produce", "--brokers", addr, "--topic", "grouped", "--parse-key", "--file", path)
	if got := summaryField(t, r.stderr, 2); got != lines {
		t.Fatalf("summary says %d records, want %d:\n%s", got, lines, r.stderr)
	}
	used := summaryField(t, r.stderr, 4)
	mu.Lock()
	t.Logf("%d records, %d partitions: %d batches in %d requests", lines, used, batches, requests)
	if batches > used+requests {
		t.Errorf("%d batches for %d partitions in %d requests", batches, used, requests)
	}
	mu.Unlock()

	last := make(map[int32]int)
	for _, rec := range consumeJSON(t, addr, "--topic", "grouped") {
		i, err := strconv.Atoi(*rec.Value)
		if err != nil {
			t.Fatalf("record value %q", *rec.Value)
		}
		if prev, ok := last[rec.Partition]; ok && i <= prev {
			t.Fatalf("partition %d: line %d after line %d", rec.Partition, i, prev)
		}
		last[rec.Partition] = i
	}
}
