package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/unilog/unilog/bench/kafkalayout"
	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/broker/storagetest"
)

// TestCompareHalfPeakInProcess runs unilog in this process at full speed
// and then at half the rate it reached: both runs count every record, the
// second carries its rate, and both say that their CPU includes the load
// generator.
func TestCompareHalfPeakInProcess(t *testing.T) {
	runs, err := Compare(context.Background(), CompareConfig{
		Systems: []string{SystemUnilog}, Flushes: []string{"async"}, Partitions: []int{2},
		Load: Load{MessageSize: 32, Records: 400, Producers: 2}, Acks: 1, HalfPeak: true,
		Dir: t.TempDir(), FileSize: 8 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Load != LoadPeak || runs[1].Load != LoadHalfPeak {
		t.Fatalf("runs %+v", runs)
	}
	for _, r := range runs {
		if r.Error != "" || r.Records != 400 || r.Consume == nil || r.Consume.Records != 400 || r.CPUSource != CPUSelf {
			t.Errorf("%s run: %+v", r.Load, r)
		}
		if r.CachePageUS <= 0 {
			t.Errorf("%s run: no page-cache probe after it", r.Load)
		}
	}
	if got, want := runs[1].Rate, runs[0].RecordsPerS/2; got != want || got <= 0 {
		t.Errorf("half-peak rate %v, want %v", got, want)
	}
}

// TestCompareAtRate: with a Rate every configuration is rerun paced at
// that rate after its peak run, labelled with it, for every system alike.
func TestCompareAtRate(t *testing.T) {
	runs, err := Compare(context.Background(), CompareConfig{
		Systems: []string{SystemUnilog, SystemKfake}, Flushes: []string{"async"}, Partitions: []int{2},
		Load: Load{MessageSize: 32, Records: 400, Producers: 2}, Acks: 1, Rate: 4000,
		Dir: t.TempDir(), FileSize: 8 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	var loads []string
	for _, r := range runs {
		loads = append(loads, r.System+" "+r.Load)
		if r.Error != "" || r.Records != 400 {
			t.Errorf("%s %s run: %+v", r.System, r.Load, r)
		}
		if want := map[string]float64{LoadPeak: 0, "4000/s": 4000}[r.Load]; r.Rate != want {
			t.Errorf("%s %s run paced at %v, want %v", r.System, r.Load, r.Rate, want)
		}
	}
	if got, want := strings.Join(loads, ", "), "unilog peak, unilog 4000/s, kfake peak, kfake 4000/s"; got != want {
		t.Errorf("runs %s, want %s", got, want)
	}
}

// TestComparePacedDuration: a paced run produces for PacedDuration at its
// rate, not the peak run's records, and leaves its first PacedWarmUp out
// of its latencies; the peak run is untouched.
func TestComparePacedDuration(t *testing.T) {
	runs, err := Compare(context.Background(), CompareConfig{
		Systems: []string{SystemUnilog}, Flushes: []string{"async"}, Partitions: []int{2},
		Load: Load{MessageSize: 32, Records: 400, Duration: time.Minute, Producers: 2}, Acks: 1, Rate: 4000,
		PacedDuration: 300 * time.Millisecond, PacedWarmUp: 100 * time.Millisecond,
		Dir: t.TempDir(), FileSize: 8 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("runs %+v", runs)
	}
	peak, paced := runs[0], runs[1]
	if peak.Error != "" || peak.Records != 400 || peak.WholeRun != nil || peak.LatencyAfterS != 0 {
		t.Errorf("peak run: %+v", peak)
	}
	if paced.Error != "" || paced.Records != 1200 || paced.Consume == nil || paced.Consume.Records != 1200 {
		t.Errorf("paced run: %d records produced (want 4000/s for 300 ms: 1200), error %q, read back %+v", paced.Records, paced.Error, paced.Consume)
	}
	if paced.LatencyAfterS != 0.1 || paced.WholeRun == nil {
		t.Errorf("paced run: latency after %v s, whole run %v; want 0.1 and the whole run's", paced.LatencyAfterS, paced.WholeRun)
	}
}

// TestCompareTransactional runs unilog with plain and transactional
// producers, interleaved: both runs produce and read back every record,
// the transactional one past its markers with read_committed. The load's
// Duration bounds the read-back, so a record that never becomes visible
// fails the test instead of holding it until the binary's timeout (once,
// in .ci/run, a read_committed read-back waited 16 minutes).
func TestCompareTransactional(t *testing.T) {
	runs, err := Compare(context.Background(), CompareConfig{
		Systems: []string{SystemUnilog}, Flushes: []string{"async"}, Partitions: []int{2},
		Load: Load{MessageSize: 32, Records: 400, Producers: 2, Duration: time.Minute}, Acks: -1, Transactional: []bool{false, true},
		CommitInterval: time.Millisecond, Trials: 2, Dir: t.TempDir(), FileSize: 8 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4 {
		t.Fatalf("%d runs, want 4", len(runs))
	}
	kinds := map[bool]int{}
	for _, r := range runs {
		kinds[r.Transactional]++
		if r.Error != "" || r.Records != 400 || r.Consume == nil || r.Consume.Records != 400 {
			t.Errorf("transactional %v run: %+v", r.Transactional, r)
		}
	}
	if kinds[false] != 2 || kinds[true] != 2 {
		t.Errorf("runs by kind %v, want 2 of each", kinds)
	}
	if rows := AggregateCompare(runs); len(rows) != 2 || rows[0].Transactional || !rows[1].Transactional {
		t.Errorf("rows %+v, want one plain and one transactional", rows)
	}
}

// TestCompareWarmRecords: a warm-up of WarmRecords goes before every
// measured run, plain and transactional, and counts in nothing measured
// but the read-back, which reads it too; Warm alone writes one record per
// partition.
func TestCompareWarmRecords(t *testing.T) {
	for _, c := range []struct {
		name  string
		warm  bool
		n     int64
		wantN int64
	}{
		{"records", false, 300, 300},
		{"one per partition", true, 0, 3},
		{"both", true, 2, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			runs, err := Compare(context.Background(), CompareConfig{
				Systems: []string{SystemUnilog}, Flushes: []string{"async"}, Partitions: []int{3},
				Load: Load{MessageSize: 32, Records: 200, Producers: 2}, Acks: -1, Transactional: []bool{false, true},
				CommitInterval: time.Millisecond, Warm: c.warm, WarmRecords: c.n, Dir: t.TempDir(), FileSize: 8 << 20,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 2 {
				t.Fatalf("%d runs, want 2", len(runs))
			}
			for _, r := range runs {
				if r.Error != "" || r.WarmRecords != c.wantN || r.Records != 200 || r.Consume == nil || r.Consume.Records != 200+c.wantN {
					t.Errorf("transactional %v run: %+v", r.Transactional, r)
				}
				if !strings.Contains(r.summary(), fmt.Sprintf("after %d warm-up records", c.wantN)) {
					t.Errorf("summary %q does not give the warm-up", r.summary())
				}
			}
		})
	}
}

// TestCompareRejects checks the configuration errors Compare reports
// before starting anything.
func TestCompareRejects(t *testing.T) {
	ok := CompareConfig{Systems: []string{SystemUnilog}, Flushes: []string{"async"}, Partitions: []int{1},
		Load: Load{MessageSize: 64, Records: 1, Producers: 1}, Acks: -1, Dir: t.TempDir()}
	for _, c := range []struct {
		name string
		edit func(*CompareConfig)
	}{
		{"unknown system", func(c *CompareConfig) { c.Systems = []string{"kafka-jvm"} }},
		{"unknown flush", func(c *CompareConfig) { c.Flushes = []string{"interval"} }},
		{"no partitions", func(c *CompareConfig) { c.Partitions = nil }},
		{"stamp does not fit", func(c *CompareConfig) { c.Load.MessageSize = 4 }},
		{"no bound", func(c *CompareConfig) { c.Load.Records = 0 }},
		{"acks 2", func(c *CompareConfig) { c.Acks = 2 }},
		{"transactional acks 1", func(c *CompareConfig) { c.Acks, c.Transactional = 1, []bool{true} }},
		{"no dir", func(c *CompareConfig) { c.Dir = "" }},
		{"negative rate", func(c *CompareConfig) { c.Rate = -1 }},
		{"negative warm-up", func(c *CompareConfig) { c.WarmRecords = -1 }},
		{"negative paced duration", func(c *CompareConfig) { c.PacedDuration = -time.Second }},
		{"paced warm-up the whole run", func(c *CompareConfig) { c.PacedDuration, c.PacedWarmUp = time.Second, time.Second }},
	} {
		cfg := ok
		c.edit(&cfg)
		if _, err := Compare(context.Background(), cfg); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

// TestKafkaLayoutStorageRange checks the answers the broker relies on at
// the edges: an unknown partition and the end offset are ErrStorageRange,
// a batch is read back whole with its base offset stamped.
func TestKafkaLayoutStorageRange(t *testing.T) {
	kl, err := kafkalayout.Open(kafkalayout.Options{Dir: t.TempDir(), SegmentBytes: 1 << 20, Flush: kafkalayout.FlushSync})
	if err != nil {
		t.Fatal(err)
	}
	st := newKafkaLayoutStorage(kl, true)
	defer st.Close()
	batch := make([]byte, 64)
	if _, _, _, err := st.Partition("t", 0).ReadBatch(0, nil); !errors.Is(err, broker.ErrStorageRange) {
		t.Errorf("unknown partition: %v", err)
	}
	five := broker.StorageBatch{Topic: "t", Count: 5, Records: batch}
	out, err := st.Append(nil, []broker.StorageBatch{five, five, five})
	if err != nil || len(out) != 3 {
		t.Fatalf("append 3 batches: %v, %v", out, err)
	}
	for i, a := range out {
		if a.Base != int64(5*i) {
			t.Errorf("batch %d: base %d, want %d", i, a.Base, 5*i)
		}
	}
	got, base, next, err := st.Partition("t", 0).ReadBatch(7, nil)
	if err != nil || base != 5 || next != 10 || len(got) != 64 || got[7] != 5 {
		t.Errorf("read at 7: base %d next %d %d bytes stamp %d: %v", base, next, len(got), got[7], err)
	}
	if _, _, _, err := st.Partition("t", 0).ReadBatch(15, nil); !errors.Is(err, broker.ErrStorageRange) {
		t.Errorf("at the end: %v", err)
	}
	w := st.NewWaiter()
	w.Watch("t", 0, 14)
	select {
	case <-w.C():
	default:
		t.Error("watch below the end not ready")
	}
	w.Release()
	w.Watch("t", 0, 15)
	if _, err := st.Append(nil, []broker.StorageBatch{{Topic: "t", Count: 1, Records: batch}}); err != nil {
		t.Fatal(err)
	}
	<-w.C()
	w.Release()
	if n := len(st.waiters); n != 0 {
		t.Errorf("%d partitions still watched after Release", n)
	}
}

// TestKafkaLayoutStorageConformance runs the Storage suite over the Kafka
// layout the benchmark serves: it replays nothing and deletes no topic, and
// says so when asked.
func TestKafkaLayoutStorageConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T, dir string) broker.Storage {
		kl, err := kafkalayout.Open(kafkalayout.Options{Dir: dir, SegmentBytes: 1 << 20, Flush: kafkalayout.FlushSync})
		if err != nil {
			t.Fatal(err)
		}
		return newKafkaLayoutStorage(kl, true)
	}, storagetest.Options{})
}
