package broker

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configEntry is one config as DescribeConfigs lists it.
type configEntry struct {
	name, value string
	typ         kmsg.ConfigType
	// own: the topic sets it (DYNAMIC_TOPIC_CONFIG), else it is the
	// broker's (DEFAULT_CONFIG).
	own bool
	// readOnly: broker configs are the command line's.
	readOnly bool
}

// topicConfigEntries lists every topic config with the topic's value.
func (b *Broker) topicConfigEntries(t TopicMeta) []configEntry {
	out := make([]configEntry, 0, len(topicConfigDefs))
	for _, d := range topicConfigDefs {
		v, own := b.topicConfig(t, d.name)
		out = append(out, configEntry{name: d.name, value: v, typ: d.typ, own: own})
	}
	return out
}

func (b *Broker) brokerConfigs() []configEntry {
	out := b.topicConfigEntries(TopicMeta{})
	for i := range out {
		out[i].readOnly = true
	}
	return append(out,
		configEntry{"auto.create.topics.enable", strconv.FormatBool(b.cfg.AutoCreateTopics), kmsg.ConfigTypeBoolean, false, true},
		configEntry{"broker.id", strconv.Itoa(int(b.cfg.NodeID)), kmsg.ConfigTypeInt, false, true},
		configEntry{"num.partitions", strconv.Itoa(int(b.cfg.DefaultPartitions)), kmsg.ConfigTypeInt, false, true},
		configEntry{"socket.request.max.bytes", strconv.Itoa(int(b.cfg.MaxRequestBytes)), kmsg.ConfigTypeInt, false, true},
	)
}

func init() {
	register(kmsg.DescribeConfigs, 0, 4, (*Broker).handleDescribeConfigs, authorizeDescribeConfigs)
}

// DescribeConfigs lists a topic's configs with their source: the topic's
// own (DYNAMIC_TOPIC_CONFIG), set by CreateTopics or the alter APIs, or
// the broker's (DEFAULT_CONFIG); v3+ with their types. Synonyms (v1+) are
// not listed: a config has no other name here. Broker configs are the
// command line's, read-only.

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
			t, ok := b.meta.Topic(r.ResourceName)
			if !ok {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			entries = b.topicConfigEntries(t)
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
			rr.Configs = append(rr.Configs, e.describe())
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

func (e configEntry) describe() kmsg.DescribeConfigsResponseResourceConfig {
	rc := kmsg.NewDescribeConfigsResponseResourceConfig()
	rc.Name = e.name
	rc.Value = kmsg.StringPtr(e.value)
	rc.ReadOnly = e.readOnly
	rc.IsDefault = !e.own
	rc.Source = kmsg.ConfigSourceDefaultConfig
	if e.own {
		rc.Source = kmsg.ConfigSourceDynamicTopicConfig
	}
	rc.ConfigType = e.typ
	return rc
}
