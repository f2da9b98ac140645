package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func pacedRun(system, load string, trial int, p99, late, flight, trip, cpu float64) CompareRun {
	r := CompareRun{System: system, Flush: "async", Partitions: 100, Load: load, Trial: trial}
	r.RecordsPerS = 1000 * float64(trial)
	r.P99Ms = p99
	r.Breakdown.PacingLag.P99Ms = late
	r.Breakdown.InFlight.P99Ms = flight
	r.Breakdown.BenchWaitingForCPU.P99Ms = cpu
	if trip > 0 {
		r.Breakdown.Requests = &RequestTimes{Requests: 10, RoundTripPerKiB: Latencies{P99Ms: trip}}
	}
	if system == SystemUnilog {
		broker := trip / 2
		r.BrokerProduceP99Ms = &broker
	}
	return r
}

// warmedUp is r with a latency warm-up whose whole run had p99 whole.
func warmedUp(r CompareRun, whole float64) CompareRun {
	r.LatencyAfterS, r.WholeRun = 1, &Latencies{P99Ms: whole}
	return r
}

// TestTailRows: only the paced rows are taken apart, each part the median
// of its trials with their range, and a client without request timings
// (JetStream) has no round trip.
func TestTailRows(t *testing.T) {
	runs := []CompareRun{
		pacedRun(SystemUnilog, LoadPeak, 1, 300, 0, 290, 20, 1),
		pacedRun(SystemUnilog, LoadHalfPeak, 1, 200, 120, 180, 8, 3),
		pacedRun(SystemJetStream, "50000/s", 1, 150, 2, 148, 0, 1),
		pacedRun(SystemUnilog, LoadPeak, 2, 310, 0, 300, 21, 1),
		warmedUp(pacedRun(SystemUnilog, LoadHalfPeak, 2, 100, 60, 90, 12, 5), 400),
		warmedUp(pacedRun(SystemUnilog, LoadHalfPeak, 3, 150, 80, 140, 10, 4), 300),
		pacedRun(SystemJetStream, "50000/s", 2, 170, 4, 160, 0, 2),
	}
	rows := TailRows(runs)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want the 2 paced ones: %+v", len(rows), rows)
	}
	u, js := rows[0], rows[1]
	if u.Load != LoadHalfPeak || u.Trials != 3 || js.System != SystemJetStream || js.Trials != 2 {
		t.Fatalf("rows %+v", rows)
	}
	for _, c := range []struct {
		name      string
		got, want Spread
	}{
		{"p99", u.P99Ms, Spread{150, 100, 200}},
		{"p99 with the warm-up", u.WholeRunP99Ms, Spread{350, 300, 400}},
		{"late to send", u.LateToSendP99Ms, Spread{80, 60, 120}},
		{"in flight", u.InFlightP99Ms, Spread{140, 90, 180}},
		{"round trip", u.RoundTripP99Ms, Spread{10, 8, 12}},
		{"waiting for a CPU", u.WaitingForCPUP99Ms, Spread{4, 3, 5}},
		{"broker's own", u.BrokerP99Ms, Spread{5, 4, 6}},
		{"jetstream late to send", js.LateToSendP99Ms, Spread{3, 2, 4}},
	} {
		if c.got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, c.got, c.want)
		}
	}
	if u.WarmedUp != 2 || js.WarmedUp != 0 {
		t.Errorf("warmed up in %d and %d trials, want 2 and 0", u.WarmedUp, js.WarmedUp)
	}
	if u.RoundTrips != 3 || js.RoundTrips != 0 || u.BrokerTimed != 3 || js.BrokerTimed != 0 {
		t.Errorf("round trips timed in %d and %d trials, the broker in %d and %d, want 3 and 0 each", u.RoundTrips, js.RoundTrips, u.BrokerTimed, js.BrokerTimed)
	}
	var b bytes.Buffer
	if err := WriteCompareTable(&b, runs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "late to send, p99 ms") {
		t.Errorf("the text table has no tail table:\n%s", b.String())
	}
}

// TestWriteCompareMarkdownTail: the section has the tail table under the
// runs' table when some runs were paced, and none when all ran at peak.
func TestWriteCompareMarkdownTail(t *testing.T) {
	paced := []CompareRun{
		pacedRun(SystemUnilog, LoadPeak, 1, 300, 0, 290, 20, 1),
		warmedUp(pacedRun(SystemUnilog, LoadHalfPeak, 1, 200, 120, 180, 8, 3), 250),
		pacedRun(SystemJetStream, LoadHalfPeak, 1, 150, 2, 148, 0, 1),
	}
	for _, c := range []struct {
		name string
		runs []CompareRun
		want []string
	}{
		{"paced", paced, []string{
			"| " + strings.Join(tailColumns, " | ") + " |",
			"| unilog | async | 100 | half-peak | 1 | 1000 | 200.00 | 250.00 | 120.00 | 180.00 | 8.00 | 4.00 | 3.00 |",
			"| jetstream | async | 100 | half-peak | 1 | 1000 | 150.00 | - | 2.00 | 148.00 | - | - | 1.00 |",
		}},
		{"peak only", paced[:1], nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
			if err := WriteCompareMarkdown(path, c.runs, CompareInfo{}); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s := string(b)
			for _, w := range c.want {
				if !strings.Contains(s, w) {
					t.Errorf("missing %q in:\n%s", w, s)
				}
			}
			if c.want == nil && strings.Contains(s, "late to send") {
				t.Errorf("a tail table for peak runs only:\n%s", s)
			}
		})
	}
}
