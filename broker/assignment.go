package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkAssignment checks the manual replica assignment of a CreateTopics
// or CreatePartitions request as Kafka does: each partition names at least
// one broker, none twice, and every broker named exists; otherwise
// INVALID_REPLICA_ASSIGNMENT. Every partition here has one replica, as
// CreateTopics' replication factor, so a longer list is refused too. The
// one broker named is this broker on its own; in a cluster, partitions are
// placed on replica groups by the control plane, not by the assignment.
func (b *Broker) checkAssignment(replicas [][]int32) (*kerr.Error, string) {
	for p, rs := range replicas {
		if len(rs) == 0 {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("partition %d of the assignment names no broker", p)
		}
		for i, id := range rs {
			for _, prev := range rs[:i] {
				if prev == id {
					return kerr.InvalidReplicaAssignment, fmt.Sprintf("partition %d of the assignment names broker %d twice", p, id)
				}
			}
			if !b.knownBroker(id) {
				return kerr.InvalidReplicaAssignment, fmt.Sprintf("the assignment names broker %d, but no such broker is registered", id)
			}
		}
		if len(rs) != 1 {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("partition %d of the assignment has %d replicas; every partition here has one", p, len(rs))
		}
	}
	return nil, ""
}

// knownBroker reports whether a node of that id is registered.
func (b *Broker) knownBroker(id int32) bool {
	if b.cfg.Cluster == nil {
		return id == b.cfg.NodeID
	}
	for _, cb := range b.cfg.Cluster.Brokers() {
		if cb.NodeID == id {
			return true
		}
	}
	return false
}

// createTopicsAssignment returns the replicas of each partition of a
// CreateTopics assignment in partition order, or the error Kafka answers:
// INVALID_REQUEST when the request also sets a partition count or
// replication factor, INVALID_REPLICA_ASSIGNMENT when the partitions are
// not numbered 0 to n-1.
func createTopicsAssignment(numPartitions int32, replicationFactor int16, assignment []kmsg.CreateTopicsRequestTopicReplicaAssignment) ([][]int32, *kerr.Error, string) {
	if numPartitions != -1 || replicationFactor != -1 {
		return nil, kerr.InvalidRequest, "a manual replica assignment needs the partition count and replication factor set to -1"
	}
	replicas := make([][]int32, len(assignment))
	for i, a := range assignment {
		if a.Partition != int32(i) {
			return nil, kerr.InvalidReplicaAssignment, fmt.Sprintf("the assignment's partitions must be numbered from 0 in order; found %d at %d", a.Partition, i)
		}
		replicas[i] = a.Replicas
	}
	return replicas, nil, ""
}

// checkAddedAssignment checks a CreatePartitions assignment: one entry for
// each of the added partitions, each as checkAssignment wants it.
func (b *Broker) checkAddedAssignment(assignment []kmsg.CreatePartitionsRequestTopicAssignment, added int32) (*kerr.Error, string) {
	if len(assignment) != int(added) {
		return kerr.InvalidReplicaAssignment, fmt.Sprintf("%d partitions added, but %d assignments given", added, len(assignment))
	}
	replicas := make([][]int32, len(assignment))
	for i, a := range assignment {
		replicas[i] = a.Replicas
	}
	return b.checkAssignment(replicas)
}
