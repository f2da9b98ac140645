package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
	"github.com/unilog/unilog/group"
)

// Group APIs under an ACL, Kafka's way: every group API needs the
// principal's group permission on the group (GROUP_AUTHORIZATION_FAILED),
// and the offset APIs also need consume permission on each topic they name
// (TOPIC_AUTHORIZATION_FAILED for that topic's partitions). Listings
// (ListGroups, OffsetFetch of all topics) silently leave out what the
// principal may not see, as Metadata does, and count no denial.

func (a authz) group(name string) bool { return a.b.authorizeGroup(a.p, name) }

func (a authz) topic(name string) bool { return a.b.authorizeTopic(a.p, auth.Consume, name) }

// seesTopic and seesGroup filter listings: what they leave out counts no
// denial.
func (a authz) seesTopic(name string) bool {
	return a.b.cfg.Security.ACL.Allow(a.p, auth.Consume, name)
}

func (a authz) seesGroup(name string) bool {
	return a.b.cfg.Security.ACL.Allow(a.p, auth.Group, name)
}

// whole answers a request naming one group: the handler runs only if the
// principal may use the group.
func (a authz) whole(req kmsg.Request, group string) (kmsg.Response, error) {
	if !a.group(group) {
		return errorResponse(req, kerr.GroupAuthorizationFailed)
	}
	return a.run()
}

// findCoordinator checks each key: a group's with the group permission,
// a transactional id's with the transaction permission; keys of other
// coordinator types are refused.
func (a authz) findCoordinator(r *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	code := kerr.GroupAuthorizationFailed
	allow := a.group
	switch r.CoordinatorType {
	case 0:
	case 1:
		code, allow = kerr.TransactionalIDAuthorizationFailed, a.transactional
	default:
		code, allow = kerr.TransactionalIDAuthorizationFailed, func(string) bool { return false }
	}
	if r.Version < 4 {
		if allow(r.CoordinatorKey) {
			return a.run()
		}
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode, resp.NodeID, resp.Port = code.Code, -1, -1
		return resp, nil
	}
	return splitRun(a.run, &r.CoordinatorKeys, func(k string) string { return k }, allow, func(resp kmsg.Response, k string) {
		fr := resp.(*kmsg.FindCoordinatorResponse)
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key, rc.NodeID, rc.Port, rc.ErrorCode = k, -1, -1, code.Code
		fr.Coordinators = append(fr.Coordinators, rc)
	})
}

// offsetCommit refuses the whole commit without the group permission and
// the partitions of each topic the principal may not consume; the rest is
// committed.
func (a authz) offsetCommit(r *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	if !a.group(r.Group) {
		resp.Topics = group.CommitAnswers(r.Topics, kerr.GroupAuthorizationFailed.Code)
		return resp, nil
	}
	var out []kmsg.OffsetCommitRequestTopic
	r.Topics, out = splitByName(r.Topics, func(t kmsg.OffsetCommitRequestTopic) string { return t.Topic }, a.topic)
	if len(out) == 0 {
		return a.run()
	}
	// With every topic denied the handler is not run: it would append an
	// empty commit to the offsets log.
	if len(r.Topics) > 0 {
		kresp, err := a.run()
		if err != nil {
			return nil, err
		}
		resp = kresp.(*kmsg.OffsetCommitResponse)
	}
	resp.Topics = append(resp.Topics, group.CommitAnswers(out, kerr.TopicAuthorizationFailed.Code)...)
	return resp, nil
}

// splitNamed is splitByName for a list where nil means "all": a list left
// empty stays a list. all reports a nil list, which is not split.
func splitNamed[T any](items *[]T, name func(T) string, allow func(string) bool) (all bool, denied []T) {
	if *items == nil {
		return true, nil
	}
	*items, denied = splitByName(*items, name, allow)
	if *items == nil {
		*items = []T{}
	}
	return false, denied
}

// filterNamed keeps the items whose name keep accepts.
func filterNamed[T any](items []T, name func(T) string, keep func(string) bool) []T {
	kept := items[:0]
	for _, it := range items {
		if keep(name(it)) {
			kept = append(kept, it)
		}
	}
	return kept
}

// deniedOffsets answers the partitions of a topic the principal may not
// see the offsets of.
func deniedOffsets(partitions []int32, code *kerr.Error) []kmsg.OffsetFetchResponseGroupTopicPartition {
	out := make([]kmsg.OffsetFetchResponseGroupTopicPartition, 0, len(partitions))
	for _, p := range partitions {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
		rp.Metadata = kmsg.StringPtr("")
		rp.ErrorCode = code.Code
		out = append(out, rp)
	}
	return out
}

// offsetFetchTopic is the v0-7 answer of one topic.
func offsetFetchTopic(topic string, partitions []int32, code *kerr.Error) kmsg.OffsetFetchResponseTopic {
	rt := kmsg.NewOffsetFetchResponseTopic()
	rt.Topic = topic
	for _, p := range deniedOffsets(partitions, code) {
		rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition(p))
	}
	return rt
}

// offsetFetch answers v8+ per group and v0-7 for its one group. Asking
// for every committed topic lists only those the principal may consume.
func (a authz) offsetFetch(r *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	if r.Version >= 8 {
		return a.offsetFetchGroups(r)
	}
	if !a.group(r.Group) {
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		if r.Version >= 2 {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		// v0-1 have no top-level error code: each partition carries it.
		for _, t := range r.Topics {
			resp.Topics = append(resp.Topics, offsetFetchTopic(t.Topic, t.Partitions, kerr.GroupAuthorizationFailed))
		}
		return resp, nil
	}
	all, out := splitNamed(&r.Topics, func(t kmsg.OffsetFetchRequestTopic) string { return t.Topic }, a.topic)
	resp, err := a.run()
	if err != nil {
		return nil, err
	}
	or := resp.(*kmsg.OffsetFetchResponse)
	if all {
		or.Topics = filterNamed(or.Topics, func(t kmsg.OffsetFetchResponseTopic) string { return t.Topic }, a.seesTopic)
	}
	for _, t := range out {
		or.Topics = append(or.Topics, offsetFetchTopic(t.Topic, t.Partitions, kerr.TopicAuthorizationFailed))
	}
	return or, nil
}

// offsetFetchGroups answers a v8+ OffsetFetch; the coordinator answers
// the groups it is given one each, in request order, which is how each
// answer is matched to its request's topics.
func (a authz) offsetFetchGroups(r *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	var out []kmsg.OffsetFetchRequestGroup
	r.Groups, out = splitByName(r.Groups, func(g kmsg.OffsetFetchRequestGroup) string { return g.Group }, a.group)
	all := make([]bool, len(r.Groups))
	denied := make([][]kmsg.OffsetFetchRequestGroupTopic, len(r.Groups))
	for i := range r.Groups {
		all[i], denied[i] = splitNamed(&r.Groups[i].Topics, func(t kmsg.OffsetFetchRequestGroupTopic) string { return t.Topic }, a.topic)
	}
	resp, err := a.run()
	if err != nil {
		return nil, err
	}
	or := resp.(*kmsg.OffsetFetchResponse)
	if len(or.Groups) != len(all) {
		// Unfiltered answers could show denied topics: send none.
		return nil, fmt.Errorf("OffsetFetch: %d groups answered for %d asked", len(or.Groups), len(all))
	}
	for i := range or.Groups {
		g := &or.Groups[i]
		if all[i] {
			g.Topics = filterNamed(g.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) string { return t.Topic }, a.seesTopic)
		}
		for _, t := range denied[i] {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, rt.Partitions = t.Topic, deniedOffsets(t.Partitions, kerr.TopicAuthorizationFailed)
			g.Topics = append(g.Topics, rt)
		}
	}
	for _, g := range out {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group, rg.ErrorCode = g.Group, kerr.GroupAuthorizationFailed.Code
		or.Groups = append(or.Groups, rg)
	}
	return or, nil
}

// offsetDelete refuses the request without the group permission and the
// partitions of each topic the principal may not consume.
func (a authz) offsetDelete(r *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	if !a.group(r.Group) {
		return errorResponse(r, kerr.GroupAuthorizationFailed)
	}
	return splitRun(a.run, &r.Topics, func(t kmsg.OffsetDeleteRequestTopic) string { return t.Topic }, a.topic, func(resp kmsg.Response, t kmsg.OffsetDeleteRequestTopic) {
		dr := resp.(*kmsg.OffsetDeleteResponse)
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		dr.Topics = append(dr.Topics, rt)
	})
}

// listGroups lists only the groups the principal may use.
func (a authz) listGroups() (kmsg.Response, error) {
	resp, err := a.run()
	if err != nil {
		return nil, err
	}
	lr := resp.(*kmsg.ListGroupsResponse)
	lr.Groups = filterNamed(lr.Groups, func(g kmsg.ListGroupsResponseGroup) string { return g.Group }, a.seesGroup)
	return lr, nil
}

// splitRun runs the handler on the items allow accepts and has deny
// answer each of the others in the response.
func splitRun[T any](run func() (kmsg.Response, error), items *[]T, name func(T) string, allow func(string) bool, deny func(resp kmsg.Response, item T)) (kmsg.Response, error) {
	var out []T
	*items, out = splitByName(*items, name, allow)
	resp, err := run()
	if err != nil {
		return nil, err
	}
	for _, it := range out {
		deny(resp, it)
	}
	return resp, nil
}

func (a authz) describeGroups(r *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	return splitRun(a.run, &r.Groups, func(g string) string { return g }, a.group, func(resp kmsg.Response, g string) {
		dr := resp.(*kmsg.DescribeGroupsResponse)
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		dr.Groups = append(dr.Groups, rg)
	})
}

func (a authz) deleteGroups(r *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	return splitRun(a.run, &r.Groups, func(g string) string { return g }, a.group, func(resp kmsg.Response, g string) {
		dr := resp.(*kmsg.DeleteGroupsResponse)
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		dr.Groups = append(dr.Groups, rg)
	})
}
