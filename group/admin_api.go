package group

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups lists every group, filtered by state (v4+) and type (v5+;
// every group here is "classic").
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	stats := c.Groups()
	sort.Slice(stats, func(i, j int) bool { return stats[i].Group < stats[j].Group })
	for _, s := range stats {
		if len(req.StatesFilter) > 0 && !contains(req.StatesFilter, s.State.String()) ||
			len(req.TypesFilter) > 0 && !contains(req.TypesFilter, "classic") {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = s.Group
		lg.ProtocolType = s.ProtocolType
		lg.GroupState = s.State.String()
		lg.GroupType = "classic"
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

func (g *group) describe() kmsg.DescribeGroupsResponseGroup {
	dg := kmsg.NewDescribeGroupsResponseGroup()
	dg.Group = g.id
	dg.State = g.state.String()
	dg.ProtocolType = g.protocolType
	dg.Protocol = g.protocol
	for _, m := range g.members {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.host
		dm.ProtocolMetadata = m.metadata(g.protocol)
		dm.MemberAssignment = m.assignment
		dg.Members = append(dg.Members, dm)
	}
	return dg
}

// DescribeGroups reports each group's state and members. A group known
// only by its committed offsets is Empty; an unknown one Dead, as Kafka.
func (c *Coordinator) DescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		var dg kmsg.DescribeGroupsResponseGroup
		if !c.onGroup(id, false, func(g *group) { dg = g.describe() }) {
			dg = kmsg.NewDescribeGroupsResponseGroup()
			dg.Group = id
			dg.State = Dead.String()
			if c.offs.has(id) {
				dg.State = Empty.String()
				dg.ProtocolType = "consumer"
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// DeleteGroups deletes empty groups and their committed offsets
// (NON_EMPTY_GROUP while a group has members).
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		ok := c.onGroup(id, true, func(g *group) { rg.ErrorCode = c.deleteGroup(ctx, g) })
		if !ok {
			rg.ErrorCode = coordinatorNotAvailable
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// deleteGroup runs on g's goroutine, so no member can join while the
// group's offsets are deleted.
func (c *Coordinator) deleteGroup(ctx context.Context, g *group) int16 {
	if len(g.members) > 0 {
		return kerr.NonEmptyGroup.Code
	}
	committed := c.offs.get(g.id)
	known := len(committed) > 0 || g.generation > 0
	g.state = Dead
	c.forget(g)
	if !known {
		return kerr.GroupIDNotFound.Code
	}
	dels := make(map[TopicPartition]*Offset, len(committed))
	for tp := range committed {
		dels[tp] = nil
	}
	if len(dels) > 0 {
		if code := c.store(ctx, g.id, "delete group offsets", dels); code != 0 {
			return code
		}
	}
	g.log.Info("group deleted")
	return 0
}
