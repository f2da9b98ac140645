package broker

import (
	"context"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
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

func init() {
	register(kmsg.Metadata, 0, 12, (*Broker).handleMetadata, authorizeMetadata)
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

	// v0 lists everything for an empty list; v1+ for a null one. The
	// internal topics are listed too, marked is_internal, as Kafka's: a
	// regex consumer tells them from user topics by that flag.
	if req.Topics == nil || req.Version == 0 && len(req.Topics) == 0 {
		for _, t := range b.meta.Topics() {
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
	// Sized once: appending 100,000 partitions copied them twenty times
	// over, a tenth of the broker's CPU while bench-million's producers
	// asked for their topics.
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, t.Partitions)
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

// authorizeMetadata follows Kafka: asking for all topics lists only those
// the principal can see; a named topic it cannot see is answered with
// TOPIC_AUTHORIZATION_FAILED whether it exists or not. A missing topic is
// auto-created only for a principal that may produce to or administer it;
// for others it is UNKNOWN_TOPIC_OR_PARTITION (Kafka asks for Create).
func authorizeMetadata(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.MetadataRequest)
	b, p := z.b, z.p
	see := func(t string) bool { return b.describable(p, t) }
	explicit := r.Topics != nil && (r.Version > 0 || len(r.Topics) > 0)
	var out, missing []kmsg.MetadataRequestTopic
	asked := make(map[string]bool)
	if explicit {
		name := func(t kmsg.MetadataRequestTopic) string {
			if t.Topic != nil {
				return *t.Topic
			}
			return b.topicNameByID(t.TopicID)
		}
		r.Topics, out = splitByName(r.Topics, name, see)
		r.Topics, missing = splitByName(r.Topics, name, func(t string) bool {
			_, exists := b.meta.Topic(t)
			return exists || b.cfg.Security.ACL.Allow(p, auth.Produce, t) || b.cfg.Security.ACL.Allow(p, auth.Admin, t)
		})
		if r.Topics == nil {
			// Still a list: nil would ask for every topic.
			r.Topics = []kmsg.MetadataRequestTopic{}
		}
		for _, t := range r.Topics {
			asked[name(t)] = true
		}
	}
	resp, err := z.run()
	if err != nil {
		return resp, err
	}
	mr := resp.(*kmsg.MetadataResponse)
	kept := mr.Topics[:0]
	for _, t := range mr.Topics {
		// A v0 request left with no topics has asked for all of them.
		if name := *t.Topic; see(name) && (!explicit || asked[name]) {
			kept = append(kept, t)
		}
	}
	mr.Topics = kept
	for i, t := range append(out, missing...) {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic, mt.TopicID = t.Topic, t.TopicID
		mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		if i >= len(out) {
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		}
		mr.Topics = append(mr.Topics, mt)
	}
	b.secMetrics.denials.WithLabelValues("describe").Add(float64(len(out)))
	return mr, nil
}
