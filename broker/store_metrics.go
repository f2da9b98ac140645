package broker

import "github.com/prometheus/client_golang/prometheus"

// storeCollector exports the storage's Stats as gauges, read once per
// scrape: a gauge function each called Stats, which takes the consume
// queues' journal lock and lists the log's files, eight times a scrape.
type storeCollector struct {
	b      *Broker
	gauges []storeGauge
}

type storeGauge struct {
	desc  *prometheus.Desc
	value func(s *StorageStats) float64
}

func newStoreCollector(b *Broker) *storeCollector {
	gauge := func(name, help string, value func(s *StorageStats) float64) storeGauge {
		return storeGauge{prometheus.NewDesc("unilog_"+name, help, nil, nil), value}
	}
	return &storeCollector{b: b, gauges: []storeGauge{
		gauge("commitlog_bytes", "Bytes held by the commit log (write offset minus retained start).",
			func(s *StorageStats) float64 { return float64(s.LogBytes) }),
		gauge("commitlog_files", "Commit-log files on disk (for the Kafka layout of the benchmark, 0).",
			func(s *StorageStats) float64 { return float64(s.LogFiles) }),
		gauge("dispatcher_lag_bytes", "Commit log bytes not yet indexed by the consume queues.",
			func(s *StorageStats) float64 { return float64(s.LagBytes) }),
		gauge("dispatcher_lag_seconds", "Age of the oldest record not yet indexed.",
			func(s *StorageStats) float64 { return s.LagTime.Seconds() }),
		gauge("consume_queues_small", "Partitions whose consume queue is kept in memory and the shared journal, not yet in files of its own.",
			func(s *StorageStats) float64 { return float64(s.SmallQueues) }),
		gauge("consume_queue_journal_bytes", "Bytes of the small consume queues' records in the shared journal; past 32 MiB a queue gets its files at 32-64 entries instead of 2,048-4,096.",
			func(s *StorageStats) float64 { return float64(s.SmallQueueBytes) }),
		gauge("log_write_failed", "1 once a flush of the commit log or consume queues failed: produce is refused until a restart.",
			func(s *StorageStats) float64 {
				if s.WriteFailed {
					return 1
				}
				return 0
			}),
		gauge("fetch_watchers", "Partitions registered by long-polling fetches waiting for data.",
			func(s *StorageStats) float64 { return float64(s.Watchers) }),
	}}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range c.gauges {
		ch <- g.desc
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.b.st.Stats()
	for _, g := range c.gauges {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value(&s))
	}
}
