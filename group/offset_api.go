package group

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkCommit applies Kafka's rules for who may commit: anyone while the
// group is empty (generation -1, e.g. an admin reset or a consumer without
// a group), otherwise only a member of the current generation, and nobody
// while the group waits for its leader's assignment.
func (g *group) checkCommit(memberID string, instanceID *string, generation int32) int16 {
	if generation < 0 && len(g.members) == 0 {
		return 0
	}
	m, code := g.checkMember(memberID, instanceID, generation)
	if code != 0 {
		return code
	}
	if g.state == CompletingRebalance {
		return rebalanceInProgress
	}
	g.touch(m)
	return 0
}

// CommitAnswers answers every partition of an OffsetCommit's topics with
// code (0: committed); the broker answers refused commits with it too.
func CommitAnswers(topics []kmsg.OffsetCommitRequestTopic, code int16) []kmsg.OffsetCommitResponseTopic {
	out := make([]kmsg.OffsetCommitResponseTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// CheckCommit returns 0 if the member may commit offsets in the group at
// this generation, else the error code an OffsetCommit is answered with
// (TxnOffsetCommit checks its member the same way).
func (c *Coordinator) CheckCommit(groupID, memberID string, instanceID *string, generation int32) int16 {
	var code int16
	switch {
	case groupID == "":
		code = kerr.InvalidGroupID.Code
	case !c.onGroup(groupID, false, func(g *group) { code = g.checkCommit(memberID, instanceID, generation) }):
		if generation >= 0 {
			code = unknownMemberID
		}
	}
	return code
}

// CommitTxnOffsets commits the offsets a transaction committed, once it
// commits (package txn): whoever the group's members are now, since the
// transaction's member was checked when the offsets entered it. It
// returns the Kafka error code, as OffsetCommit answers.
func (c *Coordinator) CommitTxnOffsets(ctx context.Context, groupID string, offs map[TopicPartition]*Offset) int16 {
	return c.store(ctx, groupID, "transaction offset commit", offs)
}

// OffsetCommit stores a member's (or an empty group's) offsets as one
// record of the offsets topic. Every partition of the request gets the
// same answer: the commit is all or nothing.
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	code := c.CheckCommit(req.Group, req.MemberID, req.InstanceID, req.Generation)
	if code == 0 {
		now := c.clock.Now().UnixMilli()
		offs := make(map[TopicPartition]*Offset)
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				o := &Offset{Offset: p.Offset, LeaderEpoch: -1, CommitMs: now}
				if req.Version >= 6 {
					o.LeaderEpoch = p.LeaderEpoch
				}
				if p.Metadata != nil {
					o.Metadata = *p.Metadata
				}
				offs[TopicPartition{t.Topic, p.Partition}] = o
			}
		}
		code = c.store(ctx, req.Group, "offset commit", offs)
	}
	resp.Topics = CommitAnswers(req.Topics, code)
	return resp
}

// OffsetFetch returns committed offsets: of one group (v0-7) or of many
// (v8+).
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			named := make(map[string][]int32)
			var order []string
			for _, t := range rg.Topics {
				named[t.Topic] = t.Partitions
				order = append(order, t.Topic)
			}
			g.Topics = c.fetchTopics(rg.Group, named, order, rg.Topics == nil)
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
	named := make(map[string][]int32)
	var order []string
	for _, t := range req.Topics {
		named[t.Topic] = t.Partitions
		order = append(order, t.Topic)
	}
	// The single-group answer has the same partition layout in another type.
	for _, gt := range c.fetchTopics(req.Group, named, order, req.Topics == nil) {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = gt.Topic
		for _, p := range gt.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition(p))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetchTopics answers one group's OffsetFetch: the named partitions
// (offset -1 where nothing is committed), or with all every committed one.
func (c *Coordinator) fetchTopics(group string, named map[string][]int32, order []string, all bool) []kmsg.OffsetFetchResponseGroupTopic {
	committed := c.offs.get(group)
	if all {
		named = make(map[string][]int32)
		order = nil
		for tp := range committed {
			if _, ok := named[tp.Topic]; !ok {
				order = append(order, tp.Topic)
			}
			named[tp.Topic] = append(named[tp.Topic], tp.Partition)
		}
		sort.Strings(order)
	}
	var out []kmsg.OffsetFetchResponseGroupTopic
	for _, t := range order {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t
		ps := append([]int32(nil), named[t]...)
		if all {
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		}
		for _, p := range ps {
			o, ok := committed[TopicPartition{t, p}]
			if !ok {
				o = Offset{Offset: -1, LeaderEpoch: -1}
			}
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition = p
			rp.Offset = o.Offset
			rp.LeaderEpoch = o.LeaderEpoch
			rp.Metadata = kmsg.StringPtr(o.Metadata)
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// subscribed returns the topics the group's consumer members subscribe
// to, from their consumer-protocol metadata.
func (g *group) subscribed() map[string]bool {
	topics := make(map[string]bool)
	if g.protocolType != "consumer" {
		return topics
	}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if meta.ReadFrom(m.metadata(g.protocol)) != nil {
			continue
		}
		for _, t := range meta.Topics {
			topics[t] = true
		}
	}
	return topics
}

// OffsetDelete removes committed offsets of partitions the group does not
// consume (GROUP_SUBSCRIBED_TO_TOPIC for those it does).
func (c *Coordinator) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	subscribed := map[string]bool{}
	live := c.onGroup(req.Group, false, func(g *group) { subscribed = g.subscribed() })
	if !live && !c.offs.has(req.Group) {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	dels := make(map[TopicPartition]*Offset)
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if !subscribed[t.Topic] {
				dels[TopicPartition{t.Topic, p.Partition}] = nil
			}
		}
	}
	var code int16
	if len(dels) > 0 {
		code = c.store(ctx, req.Group, "offset delete", dels)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = code
			if subscribed[t.Topic] {
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
