package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
)

// Authorization is applied around the handlers, not inside them: a request
// is split into what the principal may touch, which the handler serves as
// usual, and what it may not, which is answered here with
// TOPIC_AUTHORIZATION_FAILED (GROUP_AUTHORIZATION_FAILED for groups). So
// the handlers stay free of ACL code and a denied topic is never
// auto-created or even looked up. Requests of any API this file does not
// know are refused whole (fail closed), so a new API is never open by
// accident: add its case here.

// authorizeTopic reports whether principal may do op on topic; without an
// ACL everything is allowed.
func (b *Broker) authorizeTopic(principal string, op auth.Operation, topic string) bool {
	acl := b.cfg.Security.ACL
	if acl == nil || acl.Allow(principal, op, topic) {
		return true
	}
	b.secMetrics.denials.WithLabelValues(op.String()).Inc()
	return false
}

// authorizeGroup reports whether principal may use the consumer group
// (every group API; authz_group.go answers GROUP_AUTHORIZATION_FAILED
// when it is false).
func (b *Broker) authorizeGroup(principal, group string) bool {
	return b.authorizeTopic(principal, auth.Group, group)
}

// describable: any topic permission lets the principal see the topic.
func (b *Broker) describable(principal, topic string) bool {
	acl := b.cfg.Security.ACL
	return acl == nil || acl.Allow(principal, auth.Produce, topic) ||
		acl.Allow(principal, auth.Consume, topic) || acl.Allow(principal, auth.Admin, topic)
}

// errAcksZeroDenied closes the connection: the only way to tell an acks=0
// producer that a write failed.
var errAcksZeroDenied = errors.New("acks=0 produce to a topic the principal may not write")

// splitByName partitions items into those whose name allow accepts and
// the rest.
func splitByName[T any](items []T, name func(T) string, allow func(string) bool) (kept, denied []T) {
	for _, it := range items {
		if allow(name(it)) {
			kept = append(kept, it)
		} else {
			denied = append(denied, it)
		}
	}
	return kept, denied
}

// serveAuthorized runs h on the part of req the connection's principal may
// access and answers the rest as denied.
func (c *conn) serveAuthorized(h handler, req kmsg.Request) (kmsg.Response, error) {
	b := c.b
	if b.cfg.Security.ACL == nil {
		return h(b, c.ctx, c, req)
	}
	p := c.principal()
	allow := func(op auth.Operation) func(string) bool {
		return func(t string) bool { return b.authorizeTopic(p, op, t) }
	}
	run := func() (kmsg.Response, error) { return h(b, c.ctx, c, req) }
	ga := groupAuthz{b: b, p: p, run: run}
	denied := kerr.TopicAuthorizationFailed

	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest, *kmsg.SASLHandshakeRequest, *kmsg.SASLAuthenticateRequest:
		return run()
	case *kmsg.InitProducerIDRequest:
		// A producer id alone writes nothing; each Produce is checked.
		// Transactional ids are refused by the handler.
		return run()

	case *kmsg.ProduceRequest:
		var out []kmsg.ProduceRequestTopic
		r.Topics, out = splitByName(r.Topics, func(t kmsg.ProduceRequestTopic) string { return t.Topic }, allow(auth.Produce))
		resp, err := run()
		if len(out) == 0 || err != nil {
			return resp, err
		}
		if r.Acks == 0 {
			return nil, errAcksZeroDenied
		}
		pr := resp.(*kmsg.ProduceResponse)
		for _, t := range out {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, tp := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = tp.Partition
				rp.ErrorCode = denied.Code
				rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			pr.Topics = append(pr.Topics, rt)
		}
		return pr, nil

	case *kmsg.FetchRequest:
		var out []kmsg.FetchRequestTopic
		r.Topics, out = splitByName(r.Topics, func(t kmsg.FetchRequestTopic) string { return t.Topic }, allow(auth.Consume))
		if len(out) > 0 {
			// An error answers at once, as Kafka does, instead of long-polling.
			r.MaxWaitMillis = 0
		}
		resp, err := run()
		if len(out) == 0 || err != nil {
			return resp, err
		}
		fr := resp.(*kmsg.FetchResponse)
		for _, t := range out {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, tp := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition = tp.Partition
				rp.ErrorCode = denied.Code
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				rp.RecordBatches = []byte{}
				rt.Partitions = append(rt.Partitions, rp)
			}
			fr.Topics = append(fr.Topics, rt)
		}
		return fr, nil

	case *kmsg.ListOffsetsRequest:
		var out []kmsg.ListOffsetsRequestTopic
		r.Topics, out = splitByName(r.Topics, func(t kmsg.ListOffsetsRequestTopic) string { return t.Topic }, allow(auth.Consume))
		resp, err := run()
		if len(out) == 0 || err != nil {
			return resp, err
		}
		lr := resp.(*kmsg.ListOffsetsResponse)
		for _, t := range out {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, tp := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition = tp.Partition
				rp.ErrorCode = denied.Code
				rp.Offset, rp.Timestamp = -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			lr.Topics = append(lr.Topics, rt)
		}
		return lr, nil

	case *kmsg.MetadataRequest:
		return c.authorizeMetadata(r, run, p)

	case *kmsg.FindCoordinatorRequest:
		return ga.findCoordinator(r)
	case *kmsg.JoinGroupRequest:
		return ga.whole(r, r.Group)
	case *kmsg.SyncGroupRequest:
		return ga.whole(r, r.Group)
	case *kmsg.HeartbeatRequest:
		return ga.whole(r, r.Group)
	case *kmsg.LeaveGroupRequest:
		return ga.whole(r, r.Group)
	case *kmsg.OffsetCommitRequest:
		return ga.offsetCommit(r)
	case *kmsg.OffsetFetchRequest:
		return ga.offsetFetch(r)
	case *kmsg.OffsetDeleteRequest:
		return ga.offsetDelete(r)
	case *kmsg.ListGroupsRequest:
		return ga.listGroups()
	case *kmsg.DescribeGroupsRequest:
		return ga.describeGroups(r)
	case *kmsg.DeleteGroupsRequest:
		return ga.deleteGroups(r)

	case *kmsg.CreateTopicsRequest:
		var out []kmsg.CreateTopicsRequestTopic
		r.Topics, out = splitByName(r.Topics, func(t kmsg.CreateTopicsRequestTopic) string { return t.Topic }, allow(auth.Admin))
		resp, err := run()
		if len(out) == 0 || err != nil {
			return resp, err
		}
		cr := resp.(*kmsg.CreateTopicsResponse)
		for _, t := range out {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic = t.Topic
			rt.ErrorCode = denied.Code
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			cr.Topics = append(cr.Topics, rt)
		}
		return cr, nil

	case *kmsg.DeleteTopicsRequest:
		var outNames []string
		var out []kmsg.DeleteTopicsRequestTopic
		r.TopicNames, outNames = splitByName(r.TopicNames, func(t string) string { return t }, allow(auth.Admin))
		r.Topics, out = splitByName(r.Topics, func(t kmsg.DeleteTopicsRequestTopic) string {
			if t.Topic != nil {
				return *t.Topic
			}
			return b.topicNameByID(t.TopicID)
		}, allow(auth.Admin))
		resp, err := run()
		if len(out)+len(outNames) == 0 || err != nil {
			return resp, err
		}
		dr := resp.(*kmsg.DeleteTopicsResponse)
		for _, name := range outNames {
			out = append(out, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(name)})
		}
		for _, t := range out {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			rt.ErrorCode = denied.Code
			dr.Topics = append(dr.Topics, rt)
		}
		return dr, nil

	case *kmsg.CreatePartitionsRequest:
		var out []kmsg.CreatePartitionsRequestTopic
		r.Topics, out = splitByName(r.Topics, func(t kmsg.CreatePartitionsRequestTopic) string { return t.Topic }, allow(auth.Admin))
		resp, err := run()
		if len(out) == 0 || err != nil {
			return resp, err
		}
		cr := resp.(*kmsg.CreatePartitionsResponse)
		for _, t := range out {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic = t.Topic
			rt.ErrorCode = denied.Code
			cr.Topics = append(cr.Topics, rt)
		}
		return cr, nil

	case *kmsg.DescribeConfigsRequest:
		var out []kmsg.DescribeConfigsRequestResource
		r.Resources, out = splitDescribeConfigs(r.Resources, func(t string) bool { return b.describable(p, t) })
		resp, err := run()
		if len(out) == 0 || err != nil {
			return resp, err
		}
		dr := resp.(*kmsg.DescribeConfigsResponse)
		for _, rs := range out {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = rs.ResourceType, rs.ResourceName
			rr.ErrorCode = denied.Code
			dr.Resources = append(dr.Resources, rr)
		}
		return dr, nil
	}
	b.secMetrics.denials.WithLabelValues("cluster").Inc()
	return errorResponse(req, kerr.ClusterAuthorizationFailed)
}

// splitDescribeConfigs keeps broker resources (read-only defaults anyone
// logged in may read) and the topics the principal can see.
func splitDescribeConfigs(rs []kmsg.DescribeConfigsRequestResource, allow func(string) bool) (kept, denied []kmsg.DescribeConfigsRequestResource) {
	for _, r := range rs {
		if r.ResourceType != kmsg.ConfigResourceTypeTopic || allow(r.ResourceName) {
			kept = append(kept, r)
		} else {
			denied = append(denied, r)
		}
	}
	return kept, denied
}

// authorizeMetadata follows Kafka: asking for all topics lists only those
// the principal can see; a named topic it cannot see is answered with
// TOPIC_AUTHORIZATION_FAILED whether it exists or not. A missing topic is
// auto-created only for a principal that may produce to or administer it;
// for others it is UNKNOWN_TOPIC_OR_PARTITION (Kafka asks for Create).
func (c *conn) authorizeMetadata(r *kmsg.MetadataRequest, run func() (kmsg.Response, error), p string) (kmsg.Response, error) {
	b := c.b
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
	resp, err := run()
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
