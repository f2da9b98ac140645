package broker

import (
	"context"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterID names this single-broker cluster in Metadata.
const clusterID = "unilog"

// advertised is the address a client reaches this broker at: the local
// end of its own connection, so a wildcard listener advertises something
// routable.
func (c *conn) advertised() (string, int32) {
	host, port, err := net.SplitHostPort(c.nc.LocalAddr().String())
	if err != nil {
		return "127.0.0.1", 9092
	}
	p, _ := strconv.Atoi(port)
	return host, int32(p)
}

func (b *Broker) handleMetadata(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)

	for _, cb := range b.brokers(c) {
		br := kmsg.NewMetadataResponseBroker()
		br.NodeID = cb.NodeID
		br.Host = cb.Host
		br.Port = cb.Port
		resp.Brokers = append(resp.Brokers, br)
	}
	resp.ClusterID = kmsg.StringPtr(clusterID)
	resp.ControllerID = b.cfg.NodeID

	// v0 lists everything for an empty list; v1+ for a null one.
	if req.Topics == nil || req.Version == 0 && len(req.Topics) == 0 {
		for _, t := range b.meta.Topics() {
			if isInternalTopic(t.Name) {
				continue // listed only when asked for by name, as Kafka's
			}
			resp.Topics = append(resp.Topics, b.topicMetadata(t))
		}
		return resp, nil
	}
	var creator *autoCreator
	if b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation) {
		creator = b.autoCreator("Metadata")
		defer creator.done(c)
	}
	for _, rt := range req.Topics {
		var name string
		switch {
		case rt.Topic != nil:
			name = *rt.Topic
		default:
			name = b.topicNameByID(rt.TopicID)
		}
		if creator != nil {
			creator.create(name)
		}
		t, ok := b.meta.Topic(name)
		if !ok {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = kmsg.StringPtr(name)
			mt.TopicID = rt.TopicID
			switch {
			case rt.Topic == nil:
				mt.ErrorCode = kerr.UnknownTopicID.Code
			case validTopicName(name) != nil:
				mt.ErrorCode = kerr.InvalidTopicException.Code
			default:
				mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, b.topicMetadata(t))
	}
	return resp, nil
}

func (b *Broker) topicMetadata(t TopicMeta) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(t.Name)
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	// Every partition a node leads has the same replicas: asked once per
	// leader, shared by its partitions (a topic may have 100,000).
	type set struct{ replicas, isr []int32 }
	sets := map[int32]set{}
	for p := int32(0); p < t.Partitions; p++ {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p
		mp.Leader = b.cfg.NodeID
		mp.LeaderEpoch = 0
		if b.cfg.Cluster != nil {
			node, epoch, ok := b.cfg.Cluster.PartitionLeader(t.Name, p)
			mp.Leader, mp.LeaderEpoch = node, epoch
			if !ok {
				mp.Leader, mp.LeaderEpoch = -1, -1
				mp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
		}
		if mp.Leader >= 0 {
			s, ok := sets[mp.Leader]
			if !ok {
				s = set{[]int32{mp.Leader}, []int32{mp.Leader}}
				if b.cfg.Cluster != nil {
					s.replicas, s.isr = b.cfg.Cluster.Replicas(mp.Leader)
				}
				sets[mp.Leader] = s
			}
			mp.Replicas, mp.ISR = s.replicas, s.isr
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
