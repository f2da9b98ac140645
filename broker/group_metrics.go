package broker

import (
	"github.com/prometheus/client_golang/prometheus"
)

// groupCollector exports per-group metrics at scrape time from the
// coordinator, so nothing is counted on the request path.
type groupCollector struct {
	b          *Broker
	members    *prometheus.Desc
	generation *prometheus.Desc
	rebalances *prometheus.Desc
	lag        *prometheus.Desc
}

func newGroupCollector(b *Broker) *groupCollector {
	labels := []string{"group"}
	return &groupCollector{
		b:          b,
		members:    prometheus.NewDesc("unilog_group_members", "Members of a consumer group.", labels, nil),
		generation: prometheus.NewDesc("unilog_group_generation", "Generation of a consumer group.", labels, nil),
		rebalances: prometheus.NewDesc("unilog_group_rebalances_total", "Rebalances a consumer group started since the broker started.", labels, nil),
		lag:        prometheus.NewDesc("unilog_group_lag_records", "Records produced after a group's committed offsets, summed over its committed partitions.", labels, nil),
	}
}

func (c *groupCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.members
	ch <- c.generation
	ch <- c.rebalances
	ch <- c.lag
}

func (c *groupCollector) Collect(ch chan<- prometheus.Metric) {
	coord := c.b.groups.Load()
	if coord == nil {
		return
	}
	for _, s := range coord.Groups() {
		ch <- prometheus.MustNewConstMetric(c.members, prometheus.GaugeValue, float64(s.Members), s.Group)
		ch <- prometheus.MustNewConstMetric(c.generation, prometheus.GaugeValue, float64(s.Generation), s.Group)
		ch <- prometheus.MustNewConstMetric(c.rebalances, prometheus.CounterValue, float64(s.Rebalances), s.Group)
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(c.b.groupLag(coord, s.Group)), s.Group)
	}
}
