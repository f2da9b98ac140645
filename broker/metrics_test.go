package broker

import (
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestTopicFetchedBytes: unilog_topic_fetched_bytes_total counts what
// fetches serve of each topic, adds up to unilog_fetched_bytes_total, and
// goes with its topic; unilog_commitlog_files counts the log's files, and
// the small consume queues' gauges count the three partitions written,
// whose queues (30 entries in all) are in the journal.
func TestTopicFetchedBytes(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "tf-a", 2)
	createTopic(t, cl, "tf-b", 1)
	produceValues(t, cl, "tf-a", 2, "a", 20)
	produceValues(t, cl, "tf-b", 1, "b", 10)
	consumeN(t, b.Addr(), "tf-a", 20)
	consumeN(t, b.Addr(), "tf-b", 10)

	num := func(name string) float64 {
		v, err := strconv.ParseFloat(scrapeMetric(t, b, name), 64)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	a, bb := num(`unilog_topic_fetched_bytes_total{topic="tf-a"}`), num(`unilog_topic_fetched_bytes_total{topic="tf-b"}`)
	if a <= 0 || bb <= 0 || a+bb != num("unilog_fetched_bytes_total") {
		t.Errorf("tf-a %v + tf-b %v bytes fetched, total %v", a, bb, num("unilog_fetched_bytes_total"))
	}
	if n := num("unilog_commitlog_files"); n < 1 {
		t.Errorf("unilog_commitlog_files %v", n)
	}
	if n := num("unilog_consume_queues_small"); n < 3 {
		t.Errorf("unilog_consume_queues_small %v, want at least the 3 partitions written", n)
	}
	if n := num("unilog_consume_queue_journal_bytes"); n < 30*41 {
		t.Errorf("unilog_consume_queue_journal_bytes %v, want at least the 30 entries' records", n)
	}

	if _, err := kadm.NewClient(cl).DeleteTopics(testCtx(t), "tf-a"); err != nil {
		t.Fatal(err)
	}
	if m := scrape(t, b); strings.Contains(m, `topic="tf-a"`) || !strings.Contains(m, `topic="tf-b"`) {
		t.Errorf("after deleting tf-a the per-topic series are:\n%s", grepLines(m, "unilog_topic_fetched_bytes_total"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
