package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// IncrementalAlterConfigs (v0-1, KIP-339) sets or deletes (back to the
// broker's default) the named configs of a topic and leaves the others.
// APPEND and SUBTRACT are for list configs; the one list config here,
// cleanup.policy, has a single allowed value, so they are INVALID_CONFIG.
// As in AlterConfigs, every change is checked before any is stored.
func init() {
	register(kmsg.IncrementalAlterConfigs, 0, 1, (*Broker).handleIncrementalAlterConfigs, authorizeIncrementalAlterConfigs)
}

// authorizeIncrementalAlterConfigs: as AlterConfigs.
func authorizeIncrementalAlterConfigs(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.IncrementalAlterConfigsRequest)
	return authorizeEach(z, &r.Resources, func(rs kmsg.IncrementalAlterConfigsRequestResource) bool {
		return z.mayAlterConfigs(rs.ResourceType, rs.ResourceName)
	}, func(ar *kmsg.IncrementalAlterConfigsResponse, rs kmsg.IncrementalAlterConfigsRequestResource) {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = rs.ResourceType, rs.ResourceName
		rr.ErrorCode = alterDenied(rs.ResourceType).Code
		ar.Resources = append(ar.Resources, rr)
	})
}

func (b *Broker) handleIncrementalAlterConfigs(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	b.topicMu.RLock()
	defer b.topicMu.RUnlock()
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		kerrv, msg := b.alterConfigs(r.ResourceType, r.ResourceName, req.ValidateOnly, func(own map[string]string) (map[string]string, error) {
			if own == nil {
				own = make(map[string]string, len(r.Configs))
			}
			for _, c := range r.Configs {
				switch c.Op {
				case kmsg.IncrementalAlterConfigOpSet:
					if err := checkTopicConfig(c.Name, c.Value); err != nil {
						return nil, err
					}
					own[c.Name] = *c.Value
				case kmsg.IncrementalAlterConfigOpDelete:
					if _, ok := lookupTopicConfig(c.Name); !ok {
						return nil, fmt.Errorf("%w: unknown topic config %q", errConfig, c.Name)
					}
					delete(own, c.Name)
				default:
					return nil, fmt.Errorf("%w: %s on %s: no config here is a list that takes more than one value", errConfig, c.Op, c.Name)
				}
			}
			return own, nil
		})
		if kerrv != nil {
			rr.ErrorCode, rr.ErrorMessage = kerrv.Code, &msg
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}
