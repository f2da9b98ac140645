package bench

// The end-to-end table's p99 counts from when a record was due, so it
// holds the load generator's delays as well as the broker's: on a machine
// where the clients share the cores with the system, a paced run's tail
// can be the clients' alone. The tail table takes each paced row's p99
// apart with the run's Breakdown and, for unilog's broker, the broker's
// own time (broker_time.go), so that the report itself says where the
// tail was spent rather than leaving it to a reader's guess.

// TailRow is a paced configuration's p99 taken apart, over its trials:
// the record's own p99 beside the p99s of the parts it passes through.
type TailRow struct {
	compareID

	RecordsPerS Spread `json:"records_per_s"`
	P99Ms       Spread `json:"p99_ms"`
	// WholeRunP99Ms is the p99 with the run's latency warm-up
	// (Load.LatencyAfter) counted, over the trials that had one,
	// WarmedUp of them.
	WholeRunP99Ms Spread `json:"whole_run_p99_ms"`
	WarmedUp      int    `json:"warmed_up"`
	// LateToSendP99Ms is the pacing lag: from a record's due time until
	// the producer called Send.
	LateToSendP99Ms Spread `json:"late_to_send_p99_ms"`
	InFlightP99Ms   Spread `json:"in_flight_p99_ms"`
	// RoundTripP99Ms is franz-go's request round trip weighted by bytes,
	// over the trials that timed requests (RoundTrips of them: Kafka
	// clients only).
	RoundTripP99Ms     Spread `json:"round_trip_p99_ms"`
	RoundTrips         int    `json:"round_trips"`
	WaitingForCPUP99Ms Spread `json:"waiting_for_cpu_p99_ms"`
	// BrokerP99Ms is the broker's own p99 (CompareRun.BrokerProduceP99Ms)
	// over the trials that had one, BrokerTimed of them.
	BrokerP99Ms Spread `json:"broker_p99_ms"`
	BrokerTimed int    `json:"broker_timed"`
}

// TailRows are the paced rows (half-peak or a fixed rate) of runs, in
// AggregateCompare's order; peak runs are unpaced, so their tail is their
// queue and not taken apart.
func TailRows(runs []CompareRun) []TailRow {
	var rows []TailRow
	for _, rs := range groupCompare(runs) {
		if rs[0].Load == LoadPeak {
			continue
		}
		pick := func(f func(*CompareRun) float64) Spread { return spreadBy(rs, f) }
		row := TailRow{
			compareID:          idOf(rs),
			RecordsPerS:        pick(func(r *CompareRun) float64 { return r.RecordsPerS }),
			P99Ms:              pick(func(r *CompareRun) float64 { return r.P99Ms }),
			LateToSendP99Ms:    pick(func(r *CompareRun) float64 { return r.Breakdown.PacingLag.P99Ms }),
			InFlightP99Ms:      pick(func(r *CompareRun) float64 { return r.Breakdown.InFlight.P99Ms }),
			WaitingForCPUP99Ms: pick(func(r *CompareRun) float64 { return r.Breakdown.BenchWaitingForCPU.P99Ms }),
		}
		var trips, broker, whole []float64
		for _, r := range rs {
			if r.WholeRun != nil {
				whole = append(whole, r.WholeRun.P99Ms)
			}
			if q := r.Breakdown.Requests; q != nil && q.Requests > 0 {
				trips = append(trips, q.RoundTripPerKiB.P99Ms)
			}
			if p := r.BrokerProduceP99Ms; p != nil {
				broker = append(broker, *p)
			}
		}
		row.WholeRunP99Ms, row.WarmedUp = spreadOf(whole), len(whole)
		row.RoundTripP99Ms, row.RoundTrips = spreadOf(trips), len(trips)
		row.BrokerP99Ms, row.BrokerTimed = spreadOf(broker), len(broker)
		rows = append(rows, row)
	}
	return rows
}

// tailColumns heads the cells of tailCells.
var tailColumns = []string{"system", "flush", "partitions", "load", "trials", "records/s", "p99 ms",
	"p99 ms with the warm-up", "late to send, p99 ms", "in flight, p99 ms", "request round trip, p99 ms", "broker's own time, p99 ms",
	"load generator waiting for a CPU, p99 ms"}

func tailCells(r *TailRow) []string {
	whole, trip, broker := "-", "-", "-"
	if r.WarmedUp > 0 {
		whole = r.WholeRunP99Ms.format(2)
	}
	if r.RoundTrips > 0 {
		trip = r.RoundTripP99Ms.format(2)
	}
	if r.BrokerTimed > 0 {
		broker = r.BrokerP99Ms.format(2)
	}
	return append(r.cells(), r.RecordsPerS.format(0), r.P99Ms.format(2), whole, r.LateToSendP99Ms.format(2), r.InFlightP99Ms.format(2),
		trip, broker, r.WaitingForCPUP99Ms.format(2))
}

// tailIntro heads the tail table in the Markdown section.
const tailIntro = "Where the paced rows' p99 goes (each run's `breakdown` in the JSON, bench/breakdown.go), per record from " +
	"its due time, over the run after its latency warm-up where it had one (*p99 with the warm-up* counts the whole " +
	"run): *late to send* until the producer called Send (the load generator's scheduling, or its previous Send " +
	"blocked on a full buffer); *in flight* from Send to the acknowledgement (the client's linger and buffer, the request, " +
	"the broker). *Request round trip* is franz-go's, from writing a produce request to reading its response whole (the " +
	"network, the broker, the client's reader), weighted by the request's bytes so that its p99 is over records " +
	"(Kafka clients only); *the broker's own time* is unilog's histogram of its produces over the run, from a " +
	"request's frame read off the socket to its response written (`unilog_produce_seconds`, interpolated within its " +
	"bucket; unilog's broker over either layout only); *waiting for a CPU* is the load generator's goroutines' time " +
	"runnable but not running (runtime/metrics). A record's p99 far above the round trip's was spent in the load " +
	"generator (late, or in its buffer behind other records), not in a request. A round trip holds more than the " +
	"broker's own time: franz-go pipelines up to 5 produce requests on a connection and a broker answers them in " +
	"order, so a request also waits in the socket while the broker serves the ones before it, and then for both " +
	"processes' schedulers. Medians of the trials with their range."
