package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func peakRun(system, flush string, partitions, trial int, rps, cpu float64) CompareRun {
	r := CompareRun{System: system, Flush: flush, Partitions: partitions, Load: LoadPeak, Trial: trial, BrokerCPUSPerGB: cpu}
	r.RecordsPerS = rps
	return r
}

// TestRatioRows: each pair is one trial of both systems, divided before
// the median is taken (which the medians' ratio is not); a failed trial
// leaves its pair out; kfake's "memory" pairs with each flush; paced runs,
// other partition counts and a system without unilog beside it make no row.
func TestRatioRows(t *testing.T) {
	failed := peakRun(SystemUnilogKafkaLayout, "async", 1, 4, 1, 1)
	failed.Error = "produce: boom"
	runs := []CompareRun{
		peakRun(SystemUnilog, "async", 1, 1, 100, 1.0),
		peakRun(SystemUnilogKafkaLayout, "async", 1, 1, 50, 2.0),
		peakRun(SystemKfake, "memory", 1, 1, 10, 10),
		peakRun(SystemUnilog, "sync", 1, 1, 60, 1.5),
		peakRun(SystemUnilogKafkaLayout, "sync", 1, 1, 30, 3.0),
		peakRun(SystemUnilog, "async", 1, 2, 200, 1.0),
		peakRun(SystemUnilogKafkaLayout, "async", 1, 2, 250, 0.5),
		peakRun(SystemKfake, "memory", 1, 2, 20, 5),
		peakRun(SystemUnilog, "async", 1, 3, 300, 1.0),
		peakRun(SystemUnilogKafkaLayout, "async", 1, 3, 150, 1.0),
		peakRun(SystemUnilog, "async", 1, 4, 300, 1.0),
		failed,
		pacedRun(SystemUnilog, LoadHalfPeak, 1, 10, 1, 9, 2, 1),
		peakRun(SystemJetStream, "async", 100, 1, 10, 10),
	}
	rows := RatioRows(runs)
	want := []RatioRow{
		{Flush: "async", Partitions: 1, Other: SystemUnilogKafkaLayout, Pairs: 3,
			RecordsPerS: Spread{2, 0.8, 2}, BrokerCPUSPerGB: Spread{1, 0.5, 2}},
		{Flush: "async", Partitions: 1, Other: SystemKfake, Pairs: 2,
			RecordsPerS: Spread{10, 10, 10}, BrokerCPUSPerGB: Spread{0.15, 0.1, 0.2}},
		{Flush: "sync", Partitions: 1, Other: SystemUnilogKafkaLayout, Pairs: 1,
			RecordsPerS: Spread{2, 2, 2}, BrokerCPUSPerGB: Spread{0.5, 0.5, 0.5}},
		{Flush: "sync", Partitions: 1, Other: SystemKfake, Pairs: 1,
			RecordsPerS: Spread{6, 6, 6}, BrokerCPUSPerGB: Spread{0.15, 0.15, 0.15}},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	near := func(a, b Spread) bool {
		d := func(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 }
		return d(a.Median, b.Median) && d(a.Min, b.Min) && d(a.Max, b.Max)
	}
	for i, w := range want {
		g := rows[i]
		if g.Flush != w.Flush || g.Partitions != w.Partitions || g.Other != w.Other || g.Pairs != w.Pairs ||
			!near(g.RecordsPerS, w.RecordsPerS) || !near(g.BrokerCPUSPerGB, w.BrokerCPUSPerGB) {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestWriteCompareRatios: the Markdown section and the text table carry
// the ratios; a compare without unilog has none.
func TestWriteCompareRatios(t *testing.T) {
	runs := []CompareRun{
		peakRun(SystemUnilog, "async", 1, 1, 120, 1.0),
		peakRun(SystemUnilogKafkaLayout, "async", 1, 1, 100, 0.8),
		peakRun(SystemUnilog, "async", 1, 2, 90, 1.0),
		peakRun(SystemUnilogKafkaLayout, "async", 1, 2, 100, 1.0),
	}
	row := "| async | 1 | unilog-kafka-layout | 2 | 1.05 (0.90–1.20)x | 1.12 (1.00–1.25)x |"
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if err := WriteCompareMarkdown(path, runs, CompareInfo{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "| "+strings.Join(ratioColumns, " | ")+" |") || !strings.Contains(string(b), row) {
		t.Errorf("no ratio table with %q in:\n%s", row, b)
	}
	var text bytes.Buffer
	if err := WriteCompareTable(&text, runs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "1.05 (0.90–1.20)x") {
		t.Errorf("text table without the ratio:\n%s", text.String())
	}
	if err := WriteCompareMarkdown(path, runs[1:2], CompareInfo{}); err != nil {
		t.Fatal(err)
	}
	if b, _ = os.ReadFile(path); strings.Contains(string(b), "paired by trial") {
		t.Errorf("a ratio table without unilog:\n%s", b)
	}
}
