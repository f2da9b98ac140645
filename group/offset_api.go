package group

import (
	"context"

	"github.com/sirupsen/logrus"
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

// OffsetCommit stores a member's (or an empty group's) offsets as one
// record of the offsets topic. Every partition of the request gets the
// same answer: the commit is all or nothing.
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	var code int16
	switch {
	case req.Group == "":
		code = kerr.InvalidGroupID.Code
	case !c.onGroup(req.Group, false, func(g *group) { code = g.checkCommit(req.MemberID, req.InstanceID, req.Generation) }):
		if req.Generation >= 0 {
			code = unknownMemberID
		}
	}
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
		if err := c.commit(ctx, req.Group, offs); err != nil {
			c.log.WithFields(logrus.Fields{"group": req.Group, "error": err}).Error("offset commit failed")
			code = errCode(err)
		}
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetchedTopic is one topic of an OffsetFetch answer, before it is put
// into the version's response type.
type fetchedTopic struct {
	topic      string
	partitions []fetchedPartition
}

type fetchedPartition struct {
	partition int32
	offset    Offset
}

// fetch answers one group's OffsetFetch: the named partitions (offset -1
// when nothing is committed), or with topics nil every committed one.
func (c *Coordinator) fetch(group string, named map[string][]int32, order []string, all bool) []fetchedTopic {
	committed := c.offs.get(group)
	none := Offset{Offset: -1, LeaderEpoch: -1}
	var out []fetchedTopic
	if all {
		byTopic := make(map[string][]fetchedPartition)
		for tp, o := range committed {
			if _, ok := byTopic[tp.Topic]; !ok {
				order = append(order, tp.Topic)
			}
			byTopic[tp.Topic] = append(byTopic[tp.Topic], fetchedPartition{tp.Partition, o})
		}
		sortStrings(order)
		for _, t := range order {
			ps := byTopic[t]
			sortPartitions(ps)
			out = append(out, fetchedTopic{t, ps})
		}
		return out
	}
	for _, t := range order {
		ft := fetchedTopic{topic: t}
		for _, p := range named[t] {
			o, ok := committed[TopicPartition{t, p}]
			if !ok {
				o = none
			}
			ft.partitions = append(ft.partitions, fetchedPartition{p, o})
		}
		out = append(out, ft)
	}
	return out
}

func metadataPtr(o Offset) *string {
	m := o.Metadata
	return &m
}

// OffsetFetch returns committed offsets: of one group (v0-7) or of many
// (v8+).
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version < 8 {
		named := make(map[string][]int32)
		var order []string
		for _, t := range req.Topics {
			named[t.Topic] = t.Partitions
			order = append(order, t.Topic)
		}
		for _, ft := range c.fetch(req.Group, named, order, req.Topics == nil) {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = ft.topic
			for _, fp := range ft.partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition = fp.partition
				rp.Offset = fp.offset.Offset
				rp.LeaderEpoch = fp.offset.LeaderEpoch
				rp.Metadata = metadataPtr(fp.offset)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, rg := range req.Groups {
		named := make(map[string][]int32)
		var order []string
		for _, t := range rg.Topics {
			named[t.Topic] = t.Partitions
			order = append(order, t.Topic)
		}
		g := kmsg.NewOffsetFetchResponseGroup()
		g.Group = rg.Group
		for _, ft := range c.fetch(rg.Group, named, order, rg.Topics == nil) {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = ft.topic
			for _, fp := range ft.partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition = fp.partition
				rp.Offset = fp.offset.Offset
				rp.LeaderEpoch = fp.offset.LeaderEpoch
				rp.Metadata = metadataPtr(fp.offset)
				rt.Partitions = append(rt.Partitions, rp)
			}
			g.Topics = append(g.Topics, rt)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
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
		if err := c.commit(ctx, req.Group, dels); err != nil {
			c.log.WithFields(logrus.Fields{"group": req.Group, "error": err}).Error("offset delete failed")
			code = errCode(err)
		}
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
