package broker

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster (KIP-700) is the admin clients' Metadata without topics:
// v0-v1 answer the brokers Metadata lists, this node as the controller (as
// Metadata says: topics are created on whichever node is asked); v1's
// endpoint type may only be brokers (1), which is all we listen for; v2
// adds fenced brokers, which a NATS control plane does not have, so it is
// not advertised.
func init() {
	register(kmsg.DescribeCluster, 0, 1, (*Broker).handleDescribeCluster, authorizePublic)
}

// endpointBrokers is DescribeCluster v1's endpoint type for brokers;
// controllers (2) have no listener of their own here.
const endpointBrokers = 1

func (b *Broker) handleDescribeCluster(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = req.EndpointType
	if req.Version >= 1 && req.EndpointType != endpointBrokers {
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr("only broker endpoints are served; controllers share the broker listener")
		return resp, nil
	}
	resp.ClusterID = clusterID
	resp.ControllerID = b.cfg.NodeID
	for _, cb := range b.brokers(c) {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = cb.NodeID, cb.Host, cb.Port
		resp.Brokers = append(resp.Brokers, rb)
	}
	// Cluster-level operations are not in the ACL model (its rules name
	// topics and groups): Kafka's "not requested" value. Like Metadata's
	// broker list, the answer is open to every admitted connection, as
	// Kafka's (which authorizes only the operations' listing).
	resp.ClusterAuthorizedOperations = math.MinInt32
	return resp, nil
}
