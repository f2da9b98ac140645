package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// Cluster is what the broker needs from a control plane (package ha/controlplane,
// wired in by cmd/unilog): who is alive and who leads each partition. A
// broker without one (Config.Cluster nil) is a single node leading every
// partition.
type Cluster interface {
	// Brokers lists the live brokers, this one included.
	Brokers() []ClusterBroker
	// PartitionLeader returns the node leading a partition and its leader
	// epoch; false while none does.
	PartitionLeader(topic string, partition int32) (node int32, epoch int32, ok bool)
	// Replicas lists the nodes that hold what leader leads (its replica
	// group, leader included) and those of them in sync with it, as
	// Metadata reports them.
	Replicas(leader int32) (replicas, isr []int32)
	// Status is this node's part in its replica group.
	Status() NodeStatus
}

// ClusterBroker is one live broker as clients reach it. An empty or
// wildcard Host for this broker means "the address the client connected
// to".
type ClusterBroker struct {
	NodeID int32
	Host   string
	Port   int32
	// ReplicaGroup is the group whose log the broker holds (partition
	// moves name their target by its nodes).
	ReplicaGroup string
}

// NodeStatus is the body of the admin GET /status.
type NodeStatus struct {
	NodeID       int32  `json:"node_id"`
	ReplicaGroup string `json:"replica_group"`
	// Role is "leader" or "follower".
	Role  string `json:"role"`
	Epoch uint64 `json:"epoch"`
	// LogEndOffset is the physical end of the local commit log.
	LogEndOffset int64 `json:"log_end_offset"`
	// HighWatermark (leader with replication) is the physical offset below
	// which every record is on every in-sync replica.
	HighWatermark int64 `json:"high_watermark,omitempty"`
	// InSync (leader with replication) lists the in-sync followers with
	// their ends; Followers every follower known, with its lag.
	InSync    []ReplicaStatus `json:"in_sync,omitempty"`
	Followers []ReplicaStatus `json:"followers,omitempty"`
}

// ClampEpoch maps a control-plane epoch onto Kafka's int32 leader epoch.
func ClampEpoch(e uint64) int32 {
	if e > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(e)
}

// LogEndOffset is the physical end of the local commit log.
func (b *Broker) LogEndOffset() int64 { return b.st.WriteOffset() }

// leads reports whether this broker takes writes for the partition.
func (b *Broker) leads(topic string, partition int32) bool {
	if b.cfg.Cluster == nil {
		return true
	}
	node, _, ok := b.cfg.Cluster.PartitionLeader(topic, partition)
	return ok && node == b.cfg.NodeID
}

// brokers is the Metadata broker list; c supplies this broker's address
// when the control plane does not know a routable one.
func (b *Broker) brokers(c *conn) []ClusterBroker {
	host, port := c.advertised()
	if b.cfg.Cluster == nil {
		return []ClusterBroker{{NodeID: b.cfg.NodeID, Host: host, Port: port}}
	}
	list := b.cfg.Cluster.Brokers()
	for i, cb := range list {
		if cb.NodeID == b.cfg.NodeID && (cb.Host == "" || net.ParseIP(cb.Host).IsUnspecified()) {
			list[i].Host, list[i].Port = host, port
		}
	}
	return list
}

func (b *Broker) status() NodeStatus {
	s := NodeStatus{NodeID: b.cfg.NodeID, Role: "leader"}
	if b.cfg.Cluster != nil {
		s = b.cfg.Cluster.Status()
	}
	s.LogEndOffset = b.LogEndOffset()
	b.replicaStatus(&s)
	return s
}

// DropTopic removes the local state of a topic another node deleted from
// the shared metadata: its produce state and consume queues, as a local
// delete does once the metadata change is stored. A topic already
// re-created under the name is left alone. As in a local delete the queues
// go after topicMu is released; no request bounds the wait, which ends
// when the dispatcher is done or closed.
func (b *Broker) DropTopic(name string) error {
	b.topicMu.Lock()
	if _, ok := b.meta.Topic(name); ok {
		b.topicMu.Unlock()
		return nil
	}
	b.forgetTopic(name)
	b.topicMu.Unlock()
	if err := b.st.DeleteTopic(context.Background(), name); err != nil {
		return fmt.Errorf("broker: drop topic %s: %w", name, err)
	}
	b.log.WithField("topic", name).Info("topic deleted by another node: local queues dropped")
	return nil
}

// statusGauges export the node's role and epoch, so a leadership change
// shows on the dashboards that already scrape /metrics.
func (b *Broker) statusGauges() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "unilog", Name: "leader", Help: "1 while this node leads its replica group, else 0.",
		}, func() float64 {
			if b.status().Role == "leader" {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "unilog", Name: "leader_epoch", Help: "Epoch of the newest lease of this node's replica group it has seen.",
		}, func() float64 { return float64(b.status().Epoch) }),
	}
}

func (b *Broker) serveStatus(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(b.status())
}
