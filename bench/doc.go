// Package bench holds unilog's benchmarks; the product never imports it.
//
// # Storage (bench storage)
//
// Run compares layouts below the protocol: the unified commit log
// (dispatcher + consume queues) against the Kafka layout of
// bench/kafkalayout, both storing the same commitlog record bytes through
// the Layout interface, so that a run measures only where the bytes go.
// Every configuration (layout x flush x partitions) runs Config.Trials
// times in an interleaved order (trial t starts t configurations further
// into the list) after one unreported warm-up run, because on a shared VM
// the first run after an idle period and the run right after a large one
// are slow whatever they measure; a Row gives the median with min-max and
// the JSON keeps every trial. Sustained rows write SustainedFactor times the
// dirty-page limit (ReadDirtyLimit: /proc/sys/vm/dirty_* and MemAvailable),
// so that their figure is the disk's write-back and not the page cache's.
//
// # End to end (bench produce, consume, compare)
//
// The load runs through real clients against a running system: franz-go
// for the Kafka protocol (unilog, any Kafka broker, kfake), nats.go for
// JetStream. Both sit behind the small target/sender/receiver interfaces
// (target.go), so that pacing, counting and histograms are the same code
// for every system. Compare starts each system itself (StartChild runs
// `unilog bench serve`, so the broker's CPU is read from /proc/PID/stat;
// StartServer runs it in this process, whose rusage then also counts the
// load generator, and every run says which in cpu_source). Every system
// gets the same bound of unacknowledged records per producer
// (KafkaClient.MaxInFlight, JetStream's pending publishes), and Warm writes
// one record per partition before the measured run, so that per-partition
// files created on first use are not counted as the steady state
// (WarmRecords writes as many records as asked, for a run past the
// system's first minute, and then waits for a server in a child process
// to go quiet). Compare
// repeats every configuration in trials ordered like the storage ones,
// after one unreported warm-up run; AggregateCompare makes the CompareRows
// (median and min-max) the table and plot show, while the JSON keeps every
// CompareRun with its trial. A half-peak rerun is paced at half of its own
// trial's peak, run right after it; TailRows take the paced rows' p99
// apart with each run's Breakdown (late to send, in flight, the request's
// round trip), so that the report says how much of a tail was the load
// generator's; RatioRows divide unilog's peak records/s and broker CPU
// by each other system's trial by trial, so that a claimed ratio comes
// with how far one pair of runs swings. A CompareInfo.Section title lets
// several compares keep their own sections of one Markdown file.
//
// Record value format: every end-to-end value is MessageSize bytes whose
// first 8 are the time the record was due to be sent, unix nanoseconds,
// big endian; the rest are fixed incompressible bytes. Produce latency runs
// from that time to the acknowledgement, so a paced run (--rate) charges a
// system that falls behind for the wait it causes; the consumer reads the
// stamp back for produce-to-consume latency. There is no version or CRC:
// the value is transient benchmark payload, never stored by bench, and the
// systems under test checksum what they store.
//
// What produce latency counts: a paced run gives record n of the run the
// due time start + n/rate, evenly spaced, not in bursts; a producer
// goroutine sleeps until then, stamps the record and hands it to its
// client. The acknowledgement callback (a franz-go promise, a JetStream
// PubAck) ends the measurement. So the figure holds everything between a
// record becoming due and its acknowledgement reaching the application:
// a producer goroutine scheduled late, the client's buffering (Send
// blocks while --max-in-flight records wait), the network, the broker,
// and for Kafka producers the client's linger (--linger, 5 ms unless
// set; franz-go's own default is 10 ms): a partition's first record may
// wait that long for more before its batch is sent. JetStream's
// asynchronous publishes do not linger. The broker's own share is in
// unilog_produce_stage_seconds on its admin port. A paced run may leave
// the records due in its first Load.LatencyAfter out (they are sent and
// acknowledged all the same; the whole run's figures stay in WholeRun):
// the start of a run is fresh clients beside a fresh system, not the
// load the run is paced at.
package bench
