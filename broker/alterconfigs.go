package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
)

// AlterConfigs (v0-2) replaces a topic's own configs with those named,
// as Kafka's: a config not named returns to the broker's default. Every
// config is checked before any is stored (topicconfig.go), and a refused
// one fails the whole resource with INVALID_CONFIG and its reason. Broker
// configs are the command line's: INVALID_REQUEST.
func init() {
	register(kmsg.AlterConfigs, 0, 2, (*Broker).handleAlterConfigs, authorizeAlterConfigs)
}

// authorizeAlterConfigs: a topic needs admin on it, a broker cluster admin.
func authorizeAlterConfigs(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.AlterConfigsRequest)
	return authorizeEach(z, &r.Resources, func(rs kmsg.AlterConfigsRequestResource) bool {
		return z.mayAlterConfigs(rs.ResourceType, rs.ResourceName)
	}, func(ar *kmsg.AlterConfigsResponse, rs kmsg.AlterConfigsRequestResource) {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = rs.ResourceType, rs.ResourceName
		rr.ErrorCode = alterDenied(rs.ResourceType).Code
		ar.Resources = append(ar.Resources, rr)
	})
}

// mayAlterConfigs: admin on the topic; for anything else, cluster admin.
func (z authz) mayAlterConfigs(typ kmsg.ConfigResourceType, name string) bool {
	if typ == kmsg.ConfigResourceTypeTopic {
		return z.b.authorizeTopic(z.p, auth.Admin, name)
	}
	return z.b.clusterAdmin(z.p)
}

func alterDenied(typ kmsg.ConfigResourceType) *kerr.Error {
	if typ == kmsg.ConfigResourceTypeTopic {
		return kerr.TopicAuthorizationFailed
	}
	return kerr.ClusterAuthorizationFailed
}

func (b *Broker) handleAlterConfigs(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	b.topicMu.RLock()
	defer b.topicMu.RUnlock()
	for _, r := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		kerrv, msg := b.alterConfigs(r.ResourceType, r.ResourceName, req.ValidateOnly, func(map[string]string) (map[string]string, error) {
			next := make(map[string]string, len(r.Configs))
			for _, c := range r.Configs {
				if err := checkTopicConfig(c.Name, c.Value); err != nil {
					return nil, err
				}
				next[c.Name] = *c.Value
			}
			return next, nil
		})
		if kerrv != nil {
			rr.ErrorCode, rr.ErrorMessage = kerrv.Code, &msg
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

// alterConfigs alters a resource's configs with change; only topics have
// configs that can change.
func (b *Broker) alterConfigs(typ kmsg.ConfigResourceType, name string, validateOnly bool, change func(own map[string]string) (map[string]string, error)) (*kerr.Error, string) {
	if typ != kmsg.ConfigResourceTypeTopic {
		return kerr.InvalidRequest, "only topic configs can be altered; broker configs are set on the command line"
	}
	return b.alterTopicConfigs(name, validateOnly, change)
}
