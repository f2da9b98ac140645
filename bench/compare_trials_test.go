package bench

import (
	"fmt"
	"testing"
)

// TestCompareOrder checks the order of a compare's runs: kfake once per
// partition count and producer kind, JetStream never transactional, and
// over as many trials as configurations each configuration runs first
// exactly once.
func TestCompareOrder(t *testing.T) {
	for _, tc := range []struct {
		cfg  CompareConfig
		want string
	}{
		{CompareConfig{Systems: []string{SystemUnilog, SystemKfake}, Flushes: []string{"async", "sync"}, Partitions: []int{1, 100}},
			"[{unilog async 1 false} {unilog sync 1 false} {kfake async 1 false} {unilog async 100 false} {unilog sync 100 false} {kfake async 100 false}]"},
		{CompareConfig{Systems: []string{SystemUnilog, SystemJetStream}, Flushes: []string{"async"}, Partitions: []int{1, 10000}, Transactional: []bool{false, true}},
			"[{unilog async 1 false} {unilog async 1 true} {jetstream async 1 false} {unilog async 10000 false} {unilog async 10000 true} {jetstream async 10000 false}]"},
	} {
		cases := compareCases(&tc.cfg)
		if got := fmt.Sprint(cases); got != tc.want {
			t.Fatalf("cases %s, want %s", got, tc.want)
		}
		checkInterleave(t, cases)
	}
}

// checkInterleave: over as many trials as cases, each case runs first
// exactly once.
func checkInterleave(t *testing.T, cases []compareCase) {
	t.Helper()
	first := map[compareCase]int{}
	for i, order := range interleave(cases, len(cases)) {
		if len(order) != len(cases) {
			t.Fatalf("trial %d runs %d configurations, want %d", i+1, len(order), len(cases))
		}
		first[order[0]]++
	}
	for _, c := range cases {
		if first[c] != 1 {
			t.Errorf("%v ran first in %d trials, want 1", c, first[c])
		}
	}
}

func TestAggregateCompare(t *testing.T) {
	run := func(sys string, parts int, load string, trial int, rps, p99, cpu float64, read *ConsumeResult, errs int64, fail string) CompareRun {
		r := CompareRun{System: sys, Flush: "async", Partitions: parts, Load: load, Trial: trial, Consume: read, Error: fail, BrokerCPUSPerGB: cpu}
		r.RecordsPerS, r.MBPerS, r.P99Ms, r.Errors = rps, rps/1000, p99, errs
		return r
	}
	read := func(rps float64) *ConsumeResult { return &ConsumeResult{RecordsPerS: rps} }
	clientRun := func(r CompareRun, c *ClientCPU, cores float64) CompareRun {
		r.ClientCPU, r.CoresUsed = c, cores
		return r
	}
	for _, tc := range []struct {
		name string
		runs []CompareRun
		want []string // compareCells of each row, joined
	}{
		{"three trials: median and range, in first-seen order",
			[]CompareRun{
				run("unilog", 10, LoadPeak, 1, 3000, 2, 5, read(900), 0, ""),
				run("unilog", 10, LoadHalfPeak, 1, 1500, 1, 6, read(800), 0, ""),
				run("unilog", 10, LoadPeak, 2, 1000, 4, 7, read(700), 0, ""),
				run("unilog", 10, LoadHalfPeak, 2, 500, 1.5, 6, read(600), 0, ""),
				run("unilog", 10, LoadPeak, 3, 2000, 3, 6, read(800), 0, ""),
				run("unilog", 10, LoadHalfPeak, 3, 1000, 1, 6, read(700), 0, ""),
			},
			[]string{
				"unilog async 10 peak 3 2000 (1000–3000) 2.0 (1.0–3.0) 0.00 3.00 (2.00–4.00) 0.00 800 (700–900) 6.0 (5.0–7.0) 0.0 - - 0.00 0 -",
				"unilog async 10 half-peak 3 1000 (500–1500) 1.0 (0.5–1.5) 0.00 1.00 (1.00–1.50) 0.00 700 (600–800) 6.0 0.0 - - 0.00 0 -",
			}},
		{"even count: mean of the middle two",
			[]CompareRun{
				run("kfake", 1000, LoadPeak, 1, 100, 1, 1, read(10), 0, ""),
				run("kfake", 1000, LoadPeak, 2, 300, 3, 3, read(30), 0, ""),
			},
			[]string{"kfake async 1,000 peak 2 200 (100–300) 0.2 (0.1–0.3) 0.00 2.00 (1.00–3.00) 0.00 20 (10–30) 2.0 (1.0–3.0) 0.0 - - 0.00 0 -"}},
		{"failed trials counted, errors deduplicated, no read",
			[]CompareRun{
				run("jetstream", 1, LoadPeak, 1, 50, 1, 1, nil, 2, "producing: timeout"),
				run("jetstream", 1, LoadPeak, 2, 60, 1, 1, read(40), 0, ""),
				run("jetstream", 1, LoadPeak, 3, 70, 1, 1, nil, 4, "producing: timeout"),
			},
			[]string{"jetstream async 1 peak 3 60 (50–70) 0.1 (0.1–0.1) 0.00 1.00 0.00 40 1.0 0.0 - - 0.00 2 (0–4) 2 of 3 trials: producing: timeout"}},
		{"one trial prints single values",
			[]CompareRun{run("unilog", 1, LoadPeak, 1, 1234, 0.5, 2, nil, 0, "")},
			[]string{"unilog async 1 peak 1 1234 1.2 0.00 0.50 0.00 - 2.0 0.0 - - 0.00 0 -"}},
		{"client CPU and cores over the trials that separate them",
			[]CompareRun{
				clientRun(run("unilog", 1, LoadPeak, 1, 100, 1, 2, read(50), 0, ""), &ClientCPU{SPerGB: 3, SPerGBConsumed: 1}, 1.9),
				clientRun(run("unilog", 1, LoadPeak, 2, 100, 1, 2, read(50), 0, ""), &ClientCPU{SPerGB: 5, SPerGBConsumed: 2}, 2.0),
				clientRun(run("unilog", 1, LoadPeak, 3, 100, 1, 2, nil, 0, "stopping: timeout"), nil, 1.5),
			},
			[]string{"unilog async 1 peak 3 100 0.1 0.00 1.00 0.00 50 2.0 0.0 4.0 (3.0–5.0) 1.5 (1.0–2.0) 1.90 (1.50–2.00) 0 1 of 3 trials: stopping: timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := AggregateCompare(tc.runs)
			if len(rows) != len(tc.want) {
				t.Fatalf("%d rows, want %d: %+v", len(rows), len(tc.want), rows)
			}
			for i, r := range rows {
				if got := fmt.Sprint(compareCells(&r)); got != "["+tc.want[i]+"]" {
					t.Errorf("row %d:\n got %s\nwant [%s]", i, got, tc.want[i])
				}
			}
		})
	}
}
