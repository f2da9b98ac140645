package broker

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterPartitionReassignments and ListPartitionReassignments (KIP-455)
// over partition moves (move.go), so Kafka's tools
// (kafka-reassign-partitions, kadm) move partitions between replica
// groups. A partition's replicas are the nodes of the replica group that
// owns it, so a reassignment names its target group by its nodes: every
// broker a replica list names must be live and of one replica group,
// which becomes the target (order and a subset of the group's nodes do
// not matter: every node of a group holds its whole log). A null list
// cancels a move the source has not stopped producing for. v1's
// allow_replication_factor_change is not served: a group's node count is
// its replication factor.
func init() {
	register(kmsg.AlterPartitionAssignments, 0, 0, (*Broker).handleAlterPartitionReassignments, authorizeClusterAdmin)
	register(kmsg.ListPartitionReassignments, 0, 0, (*Broker).handleListPartitionReassignments, authorizeClusterAdmin)
}

// authorizeClusterAdmin: Kafka asks for Alter (Describe for the list) on
// the cluster; without cluster admin the answer is
// CLUSTER_AUTHORIZATION_FAILED.
func authorizeClusterAdmin(z authz, req kmsg.Request) (kmsg.Response, error) {
	if z.b.clusterAdmin(z.p) {
		return z.run()
	}
	switch resp := req.ResponseKind().(type) {
	case *kmsg.AlterPartitionAssignmentsResponse:
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	case *kmsg.ListPartitionReassignmentsResponse:
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	return nil, errors.New("broker: cluster admin rule on an API without a top-level error")
}

const (
	msgNoGroups     = "partitions move between the replica groups of a cluster; this broker runs alone"
	msgOneGroup     = "the replicas must be live brokers of one replica group, the partition's target"
	msgInternal     = "internal topics do not move: their partitions hold the groups' offsets where the coordinators are"
	msgCancelFenced = "the move is switching: its source takes no more produce, so only finishing it gives the partition a leader"
)

func (b *Broker) handleAlterPartitionReassignments(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	groups := b.brokerGroups()
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		meta, known := b.meta.Topic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			code, msg := b.reassign(meta, known, p.Partition, p.Replicas, groups)
			if code != nil {
				rp.ErrorCode = code.Code
				if msg != "" {
					rp.ErrorMessage = &msg
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// reassign starts or cancels (replicas nil) one partition's move.
func (b *Broker) reassign(meta TopicMeta, known bool, partition int32, replicas []int32, groups map[int32]string) (*kerr.Error, string) {
	switch {
	case !known || partition < 0 || partition >= meta.Partitions:
		return kerr.UnknownTopicOrPartition, ""
	case b.cfg.Moves == nil:
		return kerr.InvalidReplicaAssignment, msgNoGroups
	case isInternalTopic(meta.Name):
		return kerr.InvalidReplicaAssignment, msgInternal
	}
	if replicas == nil {
		err := b.cfg.Moves.CancelMove(meta.Name, partition)
		switch {
		case errors.Is(err, ErrNoMove):
			return kerr.NoReassignmentInProgress, ""
		case errors.Is(err, ErrMoveInProgress):
			return kerr.InvalidReplicaAssignment, msgCancelFenced
		}
		return moveErrorCode(err)
	}
	to := ""
	for _, id := range replicas {
		g, ok := groups[id]
		if !ok || (to != "" && g != to) {
			return kerr.InvalidReplicaAssignment, msgOneGroup
		}
		to = g
	}
	if to == "" {
		return kerr.InvalidReplicaAssignment, msgOneGroup
	}
	if mv, ok := b.cfg.Moves.Move(meta.Name, partition); ok && mv.To == to {
		return nil, "" // asked again: already on its way
	}
	err := b.cfg.Moves.StartMove(meta.Name, partition, to)
	if errors.Is(err, ErrMoveInProgress) {
		return kerr.ReassignmentInProgress, "the partition is moving to another replica group; cancel that move first"
	}
	return moveErrorCode(err)
}

// moveErrorCode answers a failed metadata change.
func moveErrorCode(err error) (*kerr.Error, string) {
	switch {
	case err == nil:
		return nil, ""
	case errors.Is(err, ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition, ""
	}
	return kerr.UnknownServerError, err.Error()
}

func (b *Broker) handleListPartitionReassignments(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if b.cfg.Moves == nil {
		return resp, nil
	}
	// A null topic list asks for every move.
	asked := func(string, int32) bool { return true }
	if req.Topics != nil {
		want := map[topicPartition]bool{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				want[topicPartition{t.Topic, p}] = true
			}
		}
		asked = func(topic string, p int32) bool { return want[topicPartition{topic, p}] }
	}
	nodes := map[string][]int32{}
	for id, g := range b.brokerGroups() {
		nodes[g] = append(nodes[g], id)
	}
	for _, ids := range nodes {
		slices.Sort(ids)
	}
	for _, mv := range b.cfg.Moves.Moves() {
		if !asked(mv.Topic, mv.Partition) {
			continue
		}
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != mv.Topic {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = mv.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition = mv.Partition
		rp.RemovingReplicas = slices.Clone(nodes[mv.From])
		rp.AddingReplicas = slices.Clone(nodes[mv.To])
		rp.Replicas = append(slices.Clone(rp.RemovingReplicas), rp.AddingReplicas...)
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return resp, nil
}

// brokerGroups maps each live broker to its replica group.
func (b *Broker) brokerGroups() map[int32]string {
	out := map[int32]string{}
	if b.cfg.Cluster == nil {
		return out
	}
	for _, cb := range b.cfg.Cluster.Brokers() {
		if cb.ReplicaGroup != "" {
			out[cb.NodeID] = cb.ReplicaGroup
		}
	}
	return out
}
