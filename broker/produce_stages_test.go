package broker

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/commitlog"
)

// TestProduceStages: a produce moves the count of every stage it goes
// through, and only those: the durability wait under --flush sync with
// acks=-1, the replication wait under sync replication with acks=-1. The
// whole produce is counted once in unilog_produce_seconds, its time the
// sum of its stages'. The runtime's latency histograms are on the same
// page.
func TestProduceStages(t *testing.T) {
	always := []string{"queue", "decode", "validate", "append", "dispatch_wait", "encode", "write"}
	for _, tc := range []struct {
		name       string
		flush      commitlog.FlushMode
		replicated bool
		acks       int16
		moved      []string
		still      []string
	}{
		{"async acks=1", commitlog.FlushAsync, false, 1, always, []string{"durable_wait", "replication_wait"}},
		{"sync acks=1", commitlog.FlushSync, false, 1, always, []string{"durable_wait", "replication_wait"}},
		{"sync acks=-1", commitlog.FlushSync, false, -1, append(always, "durable_wait"), []string{"replication_wait"}},
		{"replicated acks=-1", commitlog.FlushAsync, true, -1, append(always, "replication_wait"), []string{"durable_wait"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			if tc.replicated {
				repl := newFakeReplication()
				repl.set(1<<62, nil) // every append replicated at once
				cfg.Replication, cfg.SyncReplication = repl, true
			}
			so := testStore()
			so.CommitLog.FlushMode = tc.flush
			b := startBrokerWith(t, cfg, so)
			createTopic(t, newClient(t, b.Addr()), "stages", 2)
			metric := func(name string) float64 {
				v, err := strconv.ParseFloat(scrapeMetric(t, b, name), 64)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			count := func(stage string) float64 { return metric(`unilog_produce_stage_seconds_count{stage="` + stage + `"}`) }
			stagesSum := func() (s float64) {
				for _, st := range produceStageNames {
					s += metric(`unilog_produce_stage_seconds_sum{stage="` + st + `"}`)
				}
				return s
			}
			before := map[string]float64{}
			for _, st := range produceStageNames {
				before[st] = count(st)
			}
			totalBefore, totalSumBefore, stagesSumBefore := metric("unilog_produce_seconds_count"), metric("unilog_produce_seconds_sum"), stagesSum()

			raw := dialRaw(t, b.Addr())
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis = 7, tc.acks, 30_000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "stages"
			for p := range int32(2) {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition, rp.Records = p, rawBatch(-1, -1, 0, "x", "y")
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			resp, ok := raw.roundTrip(req)
			if !ok {
				t.Fatal("no produce response")
			}
			for _, p := range resp.(*kmsg.ProduceResponse).Topics[0].Partitions {
				if p.ErrorCode != 0 {
					t.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
				}
			}

			// The write is observed once written, maybe after the client
			// has read the response: wait for it, boundedly.
			for deadline := time.Now().Add(10 * time.Second); count("write") == before["write"] && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			for _, st := range tc.moved {
				if got := count(st) - before[st]; got != 1 {
					t.Errorf("stage %s counted %v times by one produce, want 1", st, got)
				}
			}
			for _, st := range tc.still {
				if got := count(st) - before[st]; got != 0 {
					t.Errorf("stage %s counted %v times by one produce, want 0", st, got)
				}
			}
			if got := metric("unilog_produce_seconds_count") - totalBefore; got != 1 {
				t.Errorf("unilog_produce_seconds counted %v times by one produce, want 1", got)
			}
			whole, parts := metric("unilog_produce_seconds_sum")-totalSumBefore, stagesSum()-stagesSumBefore
			if whole <= 0 || math.Abs(whole-parts) > 1e-6 {
				t.Errorf("the produce took %v s whole, its stages %v s together", whole, parts)
			}
			page := scrape(t, b)
			for _, name := range []string{"go_sched_pauses_total_gc_seconds_bucket", "go_sched_latencies_seconds_bucket", "go_sync_mutex_wait_total_seconds_total"} {
				if !strings.Contains(page, name) {
					t.Errorf("/metrics has no %s", name)
				}
			}
		})
	}
}
