package broker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metrics live in the broker's own registry so several brokers in one
// process (tests) do not collide and nothing global leaks in.
type metrics struct {
	reg             *prometheus.Registry
	requests        *prometheus.CounterVec
	latency         *prometheus.HistogramVec
	connections     prometheus.Gauge
	bytesIn         prometheus.Counter
	bytesOut        prometheus.Counter
	producedBytes   prometheus.Counter
	producedRecords prometheus.Counter
	fetchedBytes    prometheus.Counter
	// topicFetched is fetchedBytes by topic: Kafka's per-topic BytesOut,
	// which the console's topics page turns into a rate.
	topicFetched *prometheus.CounterVec
	// produceStages times each stage of a produce (produce_stages.go).
	produceStages *produceStages
}

func newMetrics(b *Broker) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "unilog", Name: "requests_total", Help: "Kafka requests handled, by API.",
		}, []string{"api"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "unilog", Name: "request_duration_seconds", Help: "Kafka request time from decoded to response encoded, by API (Fetch includes its long poll; the socket write is left out).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"api"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "unilog", Name: "connections", Help: "Open client connections.",
		}),
		bytesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "unilog", Name: "network_received_bytes_total", Help: "Request bytes received.",
		}),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "unilog", Name: "network_sent_bytes_total", Help: "Response bytes sent.",
		}),
		producedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "unilog", Name: "produced_bytes_total", Help: "Record batch bytes appended.",
		}),
		producedRecords: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "unilog", Name: "produced_records_total", Help: "Records appended.",
		}),
		fetchedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "unilog", Name: "fetched_bytes_total", Help: "Record batch bytes served.",
		}),
		topicFetched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "unilog", Name: "topic_fetched_bytes_total", Help: "Record batch bytes served, by topic (consumers and followers of partition moves; not the replication stream).",
		}, []string{"topic"}),
		produceStages: newProduceStages(),
	}
	m.reg.MustRegister(m.requests, m.latency, m.connections, m.bytesIn, m.bytesOut,
		m.producedBytes, m.producedRecords, m.fetchedBytes, m.topicFetched, m.produceStages.vec, m.produceStages.total, newGroupCollector(b), newTxnCollector(b), newStoreCollector(b),
		newGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "unilog", Name: "partition_move_steps", Help: "Partition move steps this node runs: copying into its group, or stopping produce in it.",
		}, func() float64 { return float64(b.moves.steps()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "unilog", Name: "partition_move_copied_bytes_total", Help: "Record batch bytes copied into this node's log by partition moves.",
		}, func() float64 { return float64(b.moves.copied.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "unilog", Name: "fetch_sessions", Help: "Incremental fetch sessions cached (KIP-227).",
		}, func() float64 { return float64(b.fetchSessions.count()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "unilog", Name: "fetch_session_partitions", Help: "Partitions held by all cached fetch sessions.",
		}, func() float64 { return float64(b.fetchSessions.partitionCount()) }),
	)
	m.reg.MustRegister(b.statusGauges()...)
	if b.cfg.Metrics != nil {
		m.reg.MustRegister(b.cfg.Metrics)
	}
	return m
}

func (m *metrics) observe(key int16, d time.Duration) {
	name := kmsg.NameForKey(key)
	m.requests.WithLabelValues(name).Inc()
	m.latency.WithLabelValues(name).Observe(d.Seconds())
}
