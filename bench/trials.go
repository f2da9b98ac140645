package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Run kinds: the sweep (trials, interleaved), the sustained rows (also
// trials, writing several times the dirty-page limit) and the limit runs
// (once each: they find where a layout stops, which does not vary).
const (
	KindSweep     = "sweep"
	KindSustained = "sustained"
	KindLimit     = "limit"
)

// plan is one configuration to measure.
type plan struct {
	kind   string
	layout string
	parts  int
	flush  Flush
	total  int64
	maxRun time.Duration // Config.MaxRun, or SustainedMaxRun for sustained runs
}

func (p plan) key() rowKey {
	return rowKey{p.kind, p.layout, p.flush.String(), p.parts}
}

type rowKey struct {
	kind, layout, flush string
	partitions          int
}

// interleave returns the order of every trial's runs: trial t runs every
// configuration once, starting t places further into the list. The same
// configuration therefore never holds the same position twice in a row,
// and a position effect (the first run after an idle disk, the page cache
// of the previous run still being written back) spreads over all
// configurations instead of landing on one of them.
// Both bench storage (plans) and bench compare (compareCases) order their
// trials with it.
func interleave[T any](configs []T, trials int) [][]T {
	out := make([][]T, trials)
	for t := range trials {
		s := t % max(len(configs), 1)
		out[t] = append(slices.Clone(configs[s:]), configs[:s]...)
	}
	return out
}

// Spread is a median with the range it came from.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func spreadOf(vs []float64) Spread {
	if len(vs) == 0 {
		return Spread{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: m, Min: s[0], Max: s[len(s)-1]}
}

// spreadBy is the Spread of f over the trials rs.
func spreadBy[T any](rs []T, f func(*T) float64) Spread {
	vs := make([]float64, len(rs))
	for i := range rs {
		vs[i] = f(&rs[i])
	}
	return spreadOf(vs)
}

// String prints "median (min–max)", or the one value of a single trial.
func (s Spread) String() string { return s.format(0) }

// format is String with prec digits after the decimal point.
func (s Spread) format(prec int) string {
	if s.Min == s.Max {
		return fmt.Sprintf("%.*f", prec, s.Median)
	}
	return fmt.Sprintf("%.*f (%.*f–%.*f)", prec, s.Median, prec, s.Min, prec, s.Max)
}

// Row is one configuration over all its trials: the table's line.
type Row struct {
	Kind        string `json:"kind"`
	Layout      string `json:"layout"`
	Partitions  int    `json:"partitions"`
	Flush       string `json:"flush"`
	Trials      int    `json:"trials"`
	MBPerS      Spread `json:"mb_per_s"`
	RecordsPerS Spread `json:"records_per_s"`
	P50US       Spread `json:"p50_us"`
	P99US       Spread `json:"p99_us"`
	P999US      Spread `json:"p999_us"`
	// Median is the trial whose MB/s is the median (the lower middle one
	// for an even count): its resources and read-back stand for the row.
	Median Result `json:"-"`
	// Note joins the distinct errors and notes of the trials.
	Note string `json:"note,omitempty"`
	// Failed counts trials that ended in an error.
	Failed int `json:"failed,omitempty"`
}

// FractionOfDisk is the median trial's stored bytes over the disk probe.
func (r *Row) FractionOfDisk() float64 { return r.Median.FractionOfDisk }

// aggregate groups trials by configuration, in the order configurations
// were first planned.
func aggregate(plans []plan, results []Result) []Row {
	byKey := map[rowKey][]Result{}
	for _, r := range results {
		k := rowKey{r.Kind, r.Layout, r.Flush, r.Partitions}
		byKey[k] = append(byKey[k], r)
	}
	var rows []Row
	seen := map[rowKey]bool{}
	for _, p := range plans {
		k := p.key()
		rs := byKey[k]
		if seen[k] || len(rs) == 0 {
			continue
		}
		seen[k] = true
		rows = append(rows, rowOf(rs))
	}
	return rows
}

func rowOf(rs []Result) Row {
	pick := func(f func(*Result) float64) Spread { return spreadBy(rs, f) }
	sorted := slices.Clone(rs)
	slices.SortStableFunc(sorted, func(a, b Result) int { return cmp.Compare(a.MBPerS, b.MBPerS) })
	row := Row{
		Kind: rs[0].Kind, Layout: rs[0].Layout, Partitions: rs[0].Partitions, Flush: rs[0].Flush, Trials: len(rs),
		MBPerS:      pick(func(r *Result) float64 { return r.MBPerS }),
		RecordsPerS: pick(func(r *Result) float64 { return r.RecordsPerS }),
		P50US:       pick(func(r *Result) float64 { return r.P50US }),
		P99US:       pick(func(r *Result) float64 { return r.P99US }),
		P999US:      pick(func(r *Result) float64 { return r.P999US }),
		Median:      sorted[(len(sorted)-1)/2],
	}
	var notes []string
	for _, r := range rs {
		if r.Error != "" {
			row.Failed++
		}
		if n := joinNote(r.Error, r.Note); n != "" && !slices.Contains(notes, n) {
			notes = append(notes, n)
		}
	}
	if len(rs) > 1 && len(notes) > 0 {
		row.Note = fmt.Sprintf("%d of %d trials: ", countNoted(rs), len(rs))
	}
	row.Note += strings.Join(notes, "; ")
	return row
}

func countNoted(rs []Result) int {
	n := 0
	for _, r := range rs {
		if r.Error != "" || r.Note != "" {
			n++
		}
	}
	return n
}
