package broker

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/unilog/unilog/txn"
)

// txnCollector exports the transaction coordinator's state at scrape
// time: how many transactional ids are in each state.
type txnCollector struct {
	b     *Broker
	state *prometheus.Desc
}

func newTxnCollector(b *Broker) *txnCollector {
	return &txnCollector{b: b, state: prometheus.NewDesc("unilog_transactional_ids", "Transactional ids known to the transaction coordinator, by the state of their transaction.", []string{"state"}, nil)}
}

func (c *txnCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.state }

func (c *txnCollector) Collect(ch chan<- prometheus.Metric) {
	coord := c.b.txns.Load()
	if coord == nil {
		return
	}
	counts := coord.Counts()
	for s := txn.Empty; s <= txn.CompleteAbort; s++ {
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, float64(counts[s]), s.String())
	}
}
