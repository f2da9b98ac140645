package bench

import (
	"fmt"
	"slices"
	"strings"
)

// CompareRow is one configuration and load of a compare over its trials:
// a line of the end-to-end table. Every figure is a Spread of the trials.
type CompareRow struct {
	compareID

	RecordsPerS             Spread `json:"records_per_s"`
	MBPerS                  Spread `json:"mb_per_s"`
	P50Ms                   Spread `json:"p50_ms"`
	P99Ms                   Spread `json:"p99_ms"`
	P999Ms                  Spread `json:"p999_ms"`
	BrokerCPUSPerGB         Spread `json:"broker_cpu_s_per_gb"`
	BrokerCPUSPerGBConsumed Spread `json:"broker_cpu_s_per_gb_consumed"`
	// ClientCPUSPerGB and ClientCPUSPerGBConsumed are over the trials
	// whose clients' CPU was separable from the broker's; ClientCPUs
	// counts them (0: in-process, the row has no client figure).
	ClientCPUSPerGB         Spread `json:"client_cpu_s_per_gb"`
	ClientCPUSPerGBConsumed Spread `json:"client_cpu_s_per_gb_consumed"`
	ClientCPUs              int    `json:"client_cpus"`
	CoresUsed               Spread `json:"cores_used"`
	// ReadRecordsPerS is over the trials that read back; Reads counts
	// them (0: the row has no read figure).
	ReadRecordsPerS Spread `json:"read_records_per_s"`
	Reads           int    `json:"reads"`
	// Errors is the produce errors per trial.
	Errors Spread `json:"errors"`
	// Failed counts the trials that ended with an Error; Error joins their
	// distinct messages.
	Failed int    `json:"failed,omitempty"`
	Error  string `json:"error,omitempty"`
}

// compareID is what a row of trials is: its configuration, load and how
// many trials it holds, the first cells of the tables.
type compareID struct {
	System     string `json:"system"`
	Flush      string `json:"flush"`
	Partitions int    `json:"partitions"`
	Load       string `json:"load"`
	// Transactional rows put their records in transactions.
	Transactional bool `json:"transactional,omitempty"`
	Trials        int  `json:"trials"`
}

// cells are the first cells of a table's row: system, flush, partitions,
// load and trials.
func (id *compareID) cells() []string {
	load := id.Load
	if id.Transactional {
		load += ", transactional"
	}
	return []string{id.System, id.Flush, commas(int64(id.Partitions)), load, fmt.Sprint(id.Trials)}
}

// idOf is the compareID of the trials rs of one configuration and load.
func idOf(rs []CompareRun) compareID {
	return compareID{System: rs[0].System, Flush: rs[0].Flush, Partitions: rs[0].Partitions, Load: rs[0].Load,
		Transactional: rs[0].Transactional, Trials: len(rs)}
}

type compareKey struct {
	system, flush string
	partitions    int
	load          string
	transactional bool
}

// AggregateCompare groups runs by system, flush, partition count, load and
// producer kind,
// in the order each group first appears (trial 1 runs the configurations
// in their planned order, each peak run before its half-peak rerun).
func AggregateCompare(runs []CompareRun) []CompareRow {
	groups := groupCompare(runs)
	rows := make([]CompareRow, 0, len(groups))
	for _, g := range groups {
		rows = append(rows, compareRowOf(g))
	}
	return rows
}

// groupCompare is AggregateCompare's grouping: the trials of each
// configuration and load, in the order each first appears.
func groupCompare(runs []CompareRun) [][]CompareRun {
	var order []compareKey
	by := map[compareKey][]CompareRun{}
	for _, r := range runs {
		k := compareKey{r.System, r.Flush, r.Partitions, r.Load, r.Transactional}
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], r)
	}
	groups := make([][]CompareRun, len(order))
	for i, k := range order {
		groups[i] = by[k]
	}
	return groups
}

func compareRowOf(rs []CompareRun) CompareRow {
	pick := func(f func(*CompareRun) float64) Spread { return spreadBy(rs, f) }
	row := CompareRow{
		compareID:               idOf(rs),
		RecordsPerS:             pick(func(r *CompareRun) float64 { return r.RecordsPerS }),
		MBPerS:                  pick(func(r *CompareRun) float64 { return r.MBPerS }),
		P50Ms:                   pick(func(r *CompareRun) float64 { return r.P50Ms }),
		P99Ms:                   pick(func(r *CompareRun) float64 { return r.P99Ms }),
		P999Ms:                  pick(func(r *CompareRun) float64 { return r.P999Ms }),
		BrokerCPUSPerGB:         pick(func(r *CompareRun) float64 { return r.BrokerCPUSPerGB }),
		BrokerCPUSPerGBConsumed: pick(func(r *CompareRun) float64 { return r.BrokerCPUSPerGBConsumed }),
		CoresUsed:               pick(func(r *CompareRun) float64 { return r.CoresUsed }),
		Errors:                  pick(func(r *CompareRun) float64 { return float64(r.Errors) }),
	}
	var reads, clientIn, clientOut []float64
	var errs []string
	for _, r := range rs {
		if r.Consume != nil {
			reads = append(reads, r.Consume.RecordsPerS)
		}
		if c := r.ClientCPU; c != nil {
			clientIn, clientOut = append(clientIn, c.SPerGB), append(clientOut, c.SPerGBConsumed)
		}
		if r.Error != "" {
			row.Failed++
			if !slices.Contains(errs, r.Error) {
				errs = append(errs, r.Error)
			}
		}
	}
	row.ReadRecordsPerS, row.Reads = spreadOf(reads), len(reads)
	row.ClientCPUSPerGB, row.ClientCPUSPerGBConsumed, row.ClientCPUs = spreadOf(clientIn), spreadOf(clientOut), len(clientIn)
	if row.Failed > 0 {
		row.Error = fmt.Sprintf("%d of %d trials: %s", row.Failed, len(rs), strings.Join(errs, "; "))
	}
	return row
}

// compareColumns heads the cells of compareCells.
var compareColumns = []string{"system", "flush", "partitions", "load", "trials", "records/s", "MB/s", "p50 ms", "p99 ms", "p999 ms",
	"read records/s", "CPU s/GB in", "CPU s/GB out", "client CPU s/GB in", "client CPU s/GB out", "cores used", "errors", "failed"}

// compareCells is a row as the text and Markdown tables print it: each
// figure as its median (min–max).
func compareCells(r *CompareRow) []string {
	read := "-"
	if r.Reads > 0 {
		read = r.ReadRecordsPerS.format(0)
	}
	clientIn, clientOut := "-", "-"
	if r.ClientCPUs > 0 {
		clientIn, clientOut = r.ClientCPUSPerGB.format(1), r.ClientCPUSPerGBConsumed.format(1)
	}
	failed := "-"
	if r.Error != "" {
		failed = r.Error
	}
	return append(r.cells(),
		r.RecordsPerS.format(0), r.MBPerS.format(1), r.P50Ms.format(2), r.P99Ms.format(2), r.P999Ms.format(2),
		read, r.BrokerCPUSPerGB.format(1), r.BrokerCPUSPerGBConsumed.format(1), clientIn, clientOut, r.CoresUsed.format(2),
		r.Errors.format(0), failed)
}
