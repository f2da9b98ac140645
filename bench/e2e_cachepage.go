package bench

import (
	"fmt"
	"strings"
)

// chargedPageUS is the cost of a new page of the page cache above which a
// run is named as having met a host that charges for it: such hosts were
// seen at 10-13 µs a page against 0.8-1.5 otherwise.
const chargedPageUS = 3.0

// maxChargedNamed bounds how many such runs the report names one by one.
const maxChargedNamed = 12

// cachePageText says what a new page of the page cache cost after the
// runs (CompareRun.CachePageUS), and names the runs after which it cost
// more than chargedPageUS; empty when no run was probed.
func cachePageText(runs []CompareRun) string {
	var costs []float64
	var charged []string
	for _, r := range runs {
		if r.CachePageUS <= 0 {
			continue
		}
		costs = append(costs, r.CachePageUS)
		if r.CachePageUS > chargedPageUS {
			charged = append(charged, fmt.Sprintf("%s %s %s partitions %s trial %d (%.2f µs)",
				r.System, r.Flush, commas(int64(r.Partitions)), r.Load, r.Trial, r.CachePageUS))
		}
	}
	if len(costs) == 0 {
		return ""
	}
	s := spreadOf(costs)
	text := fmt.Sprintf("After every run a new %d MiB file was written in the benchmark's directory and timed: a new page of the "+
		"page cache cost %.2f µs (%.2f–%.2f) over the %d runs (bench/unitcost.go; the machine table's probe writes 256 MiB once). ",
		runProbeRegion>>20, s.Median, s.Min, s.Max, len(costs))
	if len(charged) == 0 {
		return text + fmt.Sprintf("No run was followed by one over %.0f µs.", chargedPageUS)
	}
	named := charged[:min(len(charged), maxChargedNamed)]
	text += fmt.Sprintf("%d of them were followed by one over %.0f µs, the host charging for new pages (\"A host that charges for the "+
		"page cache\"), and their CPU figures read high: %s", len(charged), chargedPageUS, strings.Join(named, "; "))
	if more := len(charged) - len(named); more > 0 {
		text += fmt.Sprintf("; and %d more (the JSON's cache_page_us)", more)
	}
	return text + "."
}
