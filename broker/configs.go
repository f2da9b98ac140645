package broker

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type configEntry struct{ name, value string }

// topicConfigs are the topic configs this broker applies to every topic;
// they are read-only (CreateTopics refuses per-topic configs).
func (b *Broker) topicConfigs() []configEntry {
	return []configEntry{
		{"cleanup.policy", "delete"},
		{"compression.type", "producer"},
		{"max.message.bytes", strconv.Itoa(int(b.cfg.MaxMessageBytes))},
		{"message.timestamp.type", "CreateTime"},
		{"min.insync.replicas", "1"},
	}
}

func (b *Broker) brokerConfigs() []configEntry {
	return append(b.topicConfigs(),
		configEntry{"auto.create.topics.enable", strconv.FormatBool(b.cfg.AutoCreateTopics)},
		configEntry{"broker.id", strconv.Itoa(int(b.cfg.NodeID))},
		configEntry{"num.partitions", strconv.Itoa(int(b.cfg.DefaultPartitions))},
		configEntry{"socket.request.max.bytes", strconv.Itoa(int(b.cfg.MaxRequestBytes))},
	)
}

func init() {
	register(kmsg.DescribeConfigs, 0, 4, (*Broker).handleDescribeConfigs, authorizeDescribeConfigs)
}

// authorizeDescribeConfigs: a topic the principal cannot see is answered
// TOPIC_AUTHORIZATION_FAILED; broker resources are read-only defaults anyone
// logged in may read.
func authorizeDescribeConfigs(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.DescribeConfigsRequest)
	return authorizeEach(z, &r.Resources, func(rs kmsg.DescribeConfigsRequestResource) bool {
		return rs.ResourceType != kmsg.ConfigResourceTypeTopic || z.b.describable(z.p, rs.ResourceName)
	}, func(dr *kmsg.DescribeConfigsResponse, rs kmsg.DescribeConfigsRequestResource) {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = rs.ResourceType, rs.ResourceName
		rr.ErrorCode = kerr.TopicAuthorizationFailed.Code
		dr.Resources = append(dr.Resources, rr)
	})
}

func (b *Broker) handleDescribeConfigs(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType = r.ResourceType
		rr.ResourceName = r.ResourceName
		var entries []configEntry
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if _, ok := b.meta.Topic(r.ResourceName); !ok {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			entries = b.topicConfigs()
		case kmsg.ConfigResourceTypeBroker:
			if r.ResourceName != "" && r.ResourceName != strconv.Itoa(int(b.cfg.NodeID)) {
				rr.ErrorCode = kerr.InvalidRequest.Code
			}
			entries = b.brokerConfigs()
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
		}
		if rr.ErrorCode != 0 {
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		want := make(map[string]bool, len(r.ConfigNames))
		for _, n := range r.ConfigNames {
			want[n] = true
		}
		for _, e := range entries {
			if r.ConfigNames != nil && !want[e.name] {
				continue
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name = e.name
			rc.Value = kmsg.StringPtr(e.value)
			rc.ReadOnly = true
			rc.IsDefault = true
			rc.Source = kmsg.ConfigSourceDefaultConfig
			rr.Configs = append(rr.Configs, rc)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}
