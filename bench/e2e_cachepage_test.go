package bench

import (
	"strings"
	"testing"
)

// TestCachePageText: the probes after the runs are summed up, and the runs
// after which a new page cost more than chargedPageUS are named, at most
// maxChargedNamed of them.
func TestCachePageText(t *testing.T) {
	run := func(system string, parts, trial int, us float64) CompareRun {
		return CompareRun{System: system, Flush: "async", Partitions: parts, Load: LoadPeak, Trial: trial, CachePageUS: us}
	}
	many := make([]CompareRun, maxChargedNamed+2)
	for i := range many {
		many[i] = run("unilog", 1, i+1, 11)
	}
	for _, tc := range []struct {
		name      string
		runs      []CompareRun
		want      []string
		wantEmpty bool
		notWant   []string
	}{
		{name: "no probe", runs: []CompareRun{run("unilog", 1, 1, 0)}, wantEmpty: true},
		{
			name: "all cheap",
			runs: []CompareRun{run("unilog", 1, 1, 0.8), run("kfake", 1, 1, 1.0), run("unilog", 1, 2, 0.9)},
			want: []string{"0.90 µs (0.80–1.00) over the 3 runs", "No run was followed by one over 3 µs."},
		},
		{
			name:    "one charged",
			runs:    []CompareRun{run("unilog", 10000, 1, 0.9), run("jetstream", 10000, 2, 11.25)},
			want:    []string{"1 of them were followed by one over 3 µs", "jetstream async 10,000 partitions peak trial 2 (11.25 µs)."},
			notWant: []string{"unilog async"},
		},
		{
			name:    "more than named",
			runs:    many,
			want:    []string{"14 of them", "unilog async 1 partitions peak trial 12 (11.00 µs); and 2 more"},
			notWant: []string{"trial 13 ("},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cachePageText(tc.runs)
			if tc.wantEmpty {
				if got != "" {
					t.Fatalf("got %q, want nothing", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in %q", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("%q should not be in %q", w, got)
				}
			}
		})
	}
}
