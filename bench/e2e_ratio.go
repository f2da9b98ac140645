package bench

import (
	"fmt"
	"slices"
)

// What a reader of the end-to-end table asks of it is a ratio: unilog
// against the Kafka layout at one partition, against kfake's CPU. Two
// medians divided hide how noisy each trial pair was: the trials of the
// systems interleave, so trial t of every configuration ran in one pass
// over the list, in the machine's state of that pass, and a pass that
// slowed everything slows both figures of its pair. The ratio table
// divides unilog's figures by the other system's trial by trial and gives
// the median and range of those ratios.

// RatioRow is unilog's peak figures over another system's in the same
// configuration, paired by trial.
type RatioRow struct {
	Flush         string `json:"flush"`
	Partitions    int    `json:"partitions"`
	Transactional bool   `json:"transactional,omitempty"`
	Other         string `json:"other"`
	// Pairs counts the trials both systems ran without an error; the
	// spreads are over them.
	Pairs int `json:"pairs"`
	// RecordsPerS is unilog's records/s over the other's: above 1,
	// unilog carried more.
	RecordsPerS Spread `json:"records_per_s"`
	// BrokerCPUSPerGB is unilog's broker CPU per GB produced over the
	// other's: below 1, unilog's broker spent less.
	BrokerCPUSPerGB Spread `json:"broker_cpu_s_per_gb"`
}

// RatioRows pairs each peak configuration of unilog with every other
// system's of the same partition count and flush (kfake's "memory" pairs
// with each flush), the systems in the order they first appear; a trial
// that failed on either side leaves its pair out.
func RatioRows(runs []CompareRun) []RatioRow {
	peaks := map[compareID][]CompareRun{}
	var unilog []compareID
	var systems []string
	for _, rs := range groupCompare(runs) {
		id := idOf(rs)
		if id.Load != LoadPeak {
			continue
		}
		id.Trials = 0
		peaks[id] = rs
		if id.System == SystemUnilog {
			unilog = append(unilog, id)
		} else if !slices.Contains(systems, id.System) {
			systems = append(systems, id.System)
		}
	}
	var rows []RatioRow
	for _, u := range unilog {
		for _, sys := range systems {
			o := u
			o.System = sys
			if _, ok := peaks[o]; !ok {
				o.Flush = "memory"
			}
			var rps, cpu []float64
			for _, ur := range peaks[u] {
				for _, or := range peaks[o] {
					if or.Trial != ur.Trial || ur.Error != "" || or.Error != "" || or.RecordsPerS == 0 || or.BrokerCPUSPerGB == 0 {
						continue
					}
					rps = append(rps, ur.RecordsPerS/or.RecordsPerS)
					cpu = append(cpu, ur.BrokerCPUSPerGB/or.BrokerCPUSPerGB)
				}
			}
			if len(rps) > 0 {
				rows = append(rows, RatioRow{Flush: u.Flush, Partitions: u.Partitions, Transactional: u.Transactional, Other: sys,
					Pairs: len(rps), RecordsPerS: spreadOf(rps), BrokerCPUSPerGB: spreadOf(cpu)})
			}
		}
	}
	return rows
}

// ratioColumns heads the cells of ratioCells.
var ratioColumns = []string{"flush", "partitions", "against", "trial pairs", "records/s, unilog ÷ it", "broker CPU s/GB in, unilog ÷ it"}

func ratioCells(r *RatioRow) []string {
	against := r.Other
	if r.Transactional {
		against += ", transactional"
	}
	return []string{r.Flush, commas(int64(r.Partitions)), against, fmt.Sprint(r.Pairs),
		r.RecordsPerS.format(2) + "x", r.BrokerCPUSPerGB.format(2) + "x"}
}

// ratioIntro heads the ratio table in the Markdown section.
const ratioIntro = "unilog against each other system at peak load, paired by trial: each trial's unilog figure divided by the other " +
	"system's figure of the same trial, which ran in the same pass over the configurations, then the median of those ratios " +
	"with their range. A ratio of the medians above can differ from it; the range says how far one pair can swing on this machine. " +
	"Records/s above 1: unilog carried more. Broker CPU below 1: unilog's broker spent less per GB produced."
