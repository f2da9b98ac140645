package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/group"
)

// coordinated runs a group API's handler only where groups are
// coordinated. A follower replicates the offsets topic but keeps no
// coordinator state from it, and what it has lags the leader's: answering
// from it would hand out stale commits (a node that led earlier would
// serve the offsets of its own term). So every group API answers
// NOT_COORDINATOR there, and clients look the coordinator up again
// (FindCoordinator names the leader of the group's offsets partition).
func coordinated(h handler) handler {
	return func(b *Broker, ctx context.Context, c *conn, req kmsg.Request) (kmsg.Response, error) {
		if b.notLeading() || b.groups.Load() == nil {
			return notCoordinator(req)
		}
		return h(b, ctx, c, req)
	}
}

// notCoordinator answers req with NOT_COORDINATOR wherever its version
// carries an error: per partition, per group or at the top.
func notCoordinator(req kmsg.Request) (kmsg.Response, error) {
	code := kerr.NotCoordinator
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	switch r := req.(type) {
	case *kmsg.OffsetCommitRequest:
		resp.(*kmsg.OffsetCommitResponse).Topics = group.CommitAnswers(r.Topics, code.Code)
	case *kmsg.OffsetFetchRequest:
		or := resp.(*kmsg.OffsetFetchResponse)
		switch {
		case r.Version >= 8:
			for _, g := range r.Groups {
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = g.Group, code.Code
				or.Groups = append(or.Groups, rg)
			}
		case r.Version >= 2:
			or.ErrorCode = code.Code
		default:
			for _, t := range r.Topics {
				or.Topics = append(or.Topics, offsetFetchTopic(t.Topic, t.Partitions, code))
			}
		}
	case *kmsg.DescribeGroupsRequest:
		dr := resp.(*kmsg.DescribeGroupsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code.Code
			dr.Groups = append(dr.Groups, rg)
		}
	case *kmsg.DeleteGroupsRequest:
		dr := resp.(*kmsg.DeleteGroupsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code.Code
			dr.Groups = append(dr.Groups, rg)
		}
	case *kmsg.ListGroupsRequest:
		// A follower coordinates no group: an empty list, no error.
	default:
		return errorResponse(req, code)
	}
	return resp, nil
}
