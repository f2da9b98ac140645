package bench

import (
	"fmt"
	"io"
	"testing"
	"time"
)

func TestInterleave(t *testing.T) {
	plans := []plan{{parts: 1}, {parts: 16}, {parts: 256}}
	got := interleave(plans, 4)
	want := [][]int{{1, 16, 256}, {16, 256, 1}, {256, 1, 16}, {1, 16, 256}}
	for i := range want {
		var parts []int
		for _, p := range got[i] {
			parts = append(parts, p.parts)
		}
		if fmt.Sprint(parts) != fmt.Sprint(want[i]) {
			t.Errorf("trial %d runs %v, want %v", i+1, parts, want[i])
		}
	}
}

func TestSpread(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want Spread
		text string
	}{
		{nil, Spread{}, "0"},
		{[]float64{5}, Spread{5, 5, 5}, "5"},
		{[]float64{3, 1, 2}, Spread{2, 1, 3}, "2 (1–3)"},
		{[]float64{4, 1, 2, 3}, Spread{2.5, 1, 4}, "2 (1–4)"},
	} {
		got := spreadOf(c.in)
		if got != c.want || got.String() != c.text {
			t.Errorf("spreadOf(%v) = %+v %q, want %+v %q", c.in, got, got.String(), c.want, c.text)
		}
	}
}

// TestAggregate checks that trials of one configuration, and a partition
// count listed twice, land in one row whose median trial stands for it.
func TestAggregate(t *testing.T) {
	plans := []plan{
		{kind: KindSweep, layout: "unified", parts: 16, flush: Flush{Mode: "none"}},
		{kind: KindSweep, layout: "unified", parts: 1, flush: Flush{Mode: "none"}},
		{kind: KindSweep, layout: "unified", parts: 16, flush: Flush{Mode: "none"}},
	}
	res := func(parts int, mb float64, note string) Result {
		return Result{Kind: KindSweep, Layout: "unified", Flush: "none", Partitions: parts, MBPerS: mb, Note: note}
	}
	rows := aggregate(plans, []Result{res(16, 348, ""), res(1, 689, ""), res(16, 1031, ""), res(1, 1225, "capped"), res(16, 900, "")})
	if len(rows) != 2 || rows[0].Partitions != 16 || rows[1].Partitions != 1 {
		t.Fatalf("rows %+v", rows)
	}
	if r := rows[0]; r.Trials != 3 || r.MBPerS != (Spread{900, 348, 1031}) || r.Median.MBPerS != 900 || r.Note != "" {
		t.Errorf("16 partitions: %+v", r)
	}
	if r := rows[1]; r.Trials != 2 || r.Median.MBPerS != 689 || r.Note != "1 of 2 trials: capped" {
		t.Errorf("1 partition: %+v", r)
	}
}

// TestPlanRuns checks what each kind of run writes and how long it may take:
// sustained runs write SustainedTotal (or SustainedFactor times the
// dirty-page limit) under their own cap.
func TestPlanRuns(t *testing.T) {
	cfg := Config{Layouts: []string{"unified"}, Partitions: []int{1, 16}, Flushes: []Flush{{Mode: "none"}, {Mode: "sync"}},
		Total: 100, MaxRun: time.Second, SustainedPartitions: []int{10000}, SustainedMaxRun: time.Minute,
		LimitPartitions: []int{50000}, LimitTotal: 10, Notes: io.Discard}
	for _, c := range []struct {
		sustainedTotal, want int64
	}{{0, SustainedFactor * 1000}, {500, 500}} {
		cfg.SustainedTotal = c.sustainedTotal
		var got []string
		for _, p := range planRuns(&cfg, DirtyLimit{Bytes: 1000}) {
			got = append(got, fmt.Sprintf("%s/%d/%s/%d/%v", p.kind, p.parts, p.flush, p.total, p.maxRun))
		}
		want := []string{"sweep/1/none/100/1s", "sweep/16/none/100/1s", "sweep/1/sync/100/1s", "sweep/16/sync/100/1s",
			fmt.Sprintf("sustained/10000/none/%d/1m0s", c.want), "limit/50000/none/10/1s"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("sustained total %d: plans\n%v\nwant\n%v", c.sustainedTotal, got, want)
		}
	}
}

// TestSustainedTrials runs a tiny storage report: the sweep row runs in
// every trial, the sustained row only in the first SustainedTrials of them
// (all when 0).
func TestSustainedTrials(t *testing.T) {
	for _, c := range []struct {
		sustainedTrials int
		want            string // trial numbers of the sustained runs
	}{{1, "[1]"}, {0, "[1 2 3]"}} {
		cfg := Config{Layouts: []string{"unified"}, Partitions: []int{1}, Flushes: []Flush{{Mode: "none"}}, MessageSize: 64,
			Total: 64 << 10, Producers: 1, Batch: 16, Keys: "uniform", Dir: t.TempDir(), Trials: 3, SegmentBytes: 1 << 20,
			SustainedPartitions: []int{2}, SustainedTotal: 64 << 10, SustainedTrials: c.sustainedTrials, Notes: io.Discard}
		rep, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		trials := map[string][]int{}
		for _, r := range rep.Results {
			trials[r.Kind] = append(trials[r.Kind], r.Trial)
		}
		if got := fmt.Sprint(trials[KindSustained]); got != c.want || fmt.Sprint(trials[KindSweep]) != "[1 2 3]" {
			t.Errorf("sustained trials %d: sustained runs in trials %s (want %s), sweep runs in %v", c.sustainedTrials, got, c.want, trials[KindSweep])
		}
	}
}
