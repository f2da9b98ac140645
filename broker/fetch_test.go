package broker

import (
	"bufio"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// nextMillisecond returns the first unix millisecond after the one current
// at the call: later than every timestamp taken before it, and no later
// than any taken after it returns.
func nextMillisecond(t testing.TB) int64 {
	t.Helper()
	now := time.Now().UnixMilli()
	eventually(t, "the clock to pass a millisecond", func() (bool, string) { return time.Now().UnixMilli() > now, "" })
	return time.Now().UnixMilli()
}

// waitParked returns once long polls have registered at least n partitions.
func waitParked(t testing.TB, b *Broker, n int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d partitions watched by long polls", n), func() (bool, string) { w := b.st.Stats().Watchers; return w >= n, fmt.Sprint(w) })
}

// TestIdleLongPollReleases is the idle-consumer leak: one consumer polling
// the end of 2,000 empty partitions with a short max wait, round after
// round. Every fetch must leave no registration behind, and the heap must
// stay where it was (each leaked registration costs a channel and a slice
// slot, about 100 bytes: 60 rounds of 2,000 would leak over 10 MiB).
func TestIdleLongPollReleases(t *testing.T) {
	const partitions, rounds = 2000, 60
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "idle", partitions)

	all := make([]int32, partitions)
	for p := range all {
		all[p] = int32(p)
	}
	req := fetchReq("idle", 0, 2*time.Millisecond, all...)
	c := dialRaw(t, b.Addr())
	round := func() {
		t.Helper()
		c.nc.SetDeadline(time.Now().Add(30 * time.Second))
		resp, ok := c.roundTrip(req)
		if !ok {
			t.Fatal("connection closed instead of a fetch response")
		}
		for _, p := range resp.(*kmsg.FetchResponse).Topics[0].Partitions {
			if p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
				t.Fatalf("idle partition %d: %v, %d bytes", p.Partition, kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
			}
		}
		// The handler releases before the response is written.
		if n := b.st.Stats().Watchers; n != 0 {
			t.Fatalf("%d partitions still watched after the fetch returned", n)
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	round()
	before := heap()
	for range rounds {
		round()
	}
	if after := heap(); after > before+4<<20 {
		t.Fatalf("heap grew from %d to %d bytes over %d idle long polls of %d partitions", before, after, rounds, partitions)
	}
	if m := scrapeMetric(t, b, "unilog_fetch_watchers"); m != "0" {
		t.Fatalf("unilog_fetch_watchers %s after the polls, want 0", m)
	}
}

// scrapeMetric returns the value of an unlabelled metric on /metrics.
func scrapeMetric(t testing.TB, b *Broker, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + b.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return v
		}
	}
	t.Fatalf("/metrics has no %s (%v)", name, sc.Err())
	return ""
}

// TestFetchResponseTopicsOwnTheirPartitions: the response's partitions of
// every topic are runs of one pooled array (fetchScratch), each cut at its
// length, so that a partition appended to a topic after the read (a
// denied topic's, by serveAuthorized) moves that topic's run instead of
// overwriting the next topic's; and a second response from the same
// scratch holds its own partitions only.
func TestFetchResponseTopicsOwnTheirPartitions(t *testing.T) {
	sc := new(fetchScratch)
	build := func(parts []fetchPartition) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		f := fetchState{req: req, parts: parts, sc: sc, recs: &fetchRecords{}, spans: make([]span, len(parts)), results: make([]kmsg.FetchResponseTopicPartition, len(parts))}
		for i, p := range parts {
			f.results[i] = kmsg.NewFetchResponseTopicPartition()
			f.results[i].Partition = p.partition
			f.results[i].HighWatermark = int64(100*len(p.topic) + int(p.partition))
		}
		return f.response(nil, false)
	}
	check := func(resp *kmsg.FetchResponse, want map[string][]int32) {
		t.Helper()
		if len(resp.Topics) != len(want) {
			t.Fatalf("%d topics, want %d", len(resp.Topics), len(want))
		}
		for _, rt := range resp.Topics {
			var got []int32
			for _, rp := range rt.Partitions {
				if rp.HighWatermark != int64(100*len(rt.Topic)+int(rp.Partition)) {
					t.Fatalf("%s/%d answers another partition's high watermark %d", rt.Topic, rp.Partition, rp.HighWatermark)
				}
				got = append(got, rp.Partition)
			}
			if fmt.Sprint(got) != fmt.Sprint(want[rt.Topic]) {
				t.Fatalf("%s: partitions %v, want %v", rt.Topic, got, want[rt.Topic])
			}
		}
	}
	resp := build([]fetchPartition{{topic: "a", partition: 0}, {topic: "a", partition: 1}, {topic: "bb", partition: 0}, {topic: "bb", partition: 1}})
	denied := kmsg.NewFetchResponseTopicPartition()
	denied.Partition, denied.HighWatermark = 7, 107
	resp.Topics[0].Partitions = append(resp.Topics[0].Partitions, denied)
	check(resp, map[string][]int32{"a": {0, 1, 7}, "bb": {0, 1}})
	check(build([]fetchPartition{{topic: "bb", partition: 1}}), map[string][]int32{"bb": {1}})
}

// TestFetchTopicsInterleaved: a fetch naming topic a, then b, then a again
// gets three topics back in that order, each partition with its own high
// watermark; the next fetch on the connection, smaller, reusing the pooled
// scratch, answers its one partition only.
func TestFetchTopicsInterleaved(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "a", 2)
	createTopic(t, cl, "b", 1)
	for _, w := range []struct {
		topic     string
		partition int32
		records   int
	}{{"a", 0, 1}, {"a", 1, 2}, {"b", 0, 3}} {
		values := make([]string, w.records)
		for i := range values {
			values[i] = fmt.Sprint(w.topic, w.partition, i)
		}
		if rp := rawProduce(t, cl, w.topic, w.partition, rawBatch(-1, -1, -1, values...)); rp.ErrorCode != 0 {
			t.Fatalf("produce %s/%d: %v", w.topic, w.partition, kerr.ErrorForCode(rp.ErrorCode))
		}
	}
	req := fetchReq("a", 0, 0, 1)
	req.Topics = append(req.Topics, fetchReq("b", 0, 0, 0).Topics[0], fetchReq("a", 0, 0, 0).Topics[0])
	got := func(req *kmsg.FetchRequest) string {
		t.Helper()
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				s = append(s, fmt.Sprintf("%s/%d:%d:%d", rt.Topic, rp.Partition, rp.HighWatermark, len(batches(t, rp.RecordBatches))))
			}
		}
		return strings.Join(s, " ")
	}
	if g, want := got(req), "a/1:2:1 b/0:3:1 a/0:1:1"; g != want {
		t.Fatalf("interleaved fetch answered %q, want %q", g, want)
	}
	if g, want := got(fetchReq("b", 0, 0, 0)), "b/0:3:1"; g != want {
		t.Fatalf("the next fetch answered %q, want %q", g, want)
	}
}
