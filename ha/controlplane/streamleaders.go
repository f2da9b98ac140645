package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"
)

// Stream leaders on the group leader's server.
//
// When brokers embed NATS, a broker's crash takes a NATS server with it,
// and each bucket stream that server led takes no writes until its
// replicas elect a new leader (raftimers.go: about a second). Where the
// stream leaders live decides who pays for that:
//
//   - on a follower's server, the follower's crash stalls the group
//     leader's lease renewals and in-sync publications (a produce with
//     acks=all waits for the shrink), and the leader may have to step
//     down although nothing was wrong with it;
//   - on the group leader's server, a follower's crash stalls nothing,
//     and the leader's crash elects the streams' new leaders while its
//     lease lapses, which every failover waits for anyway.
//
// So a node that takes its group's lease asks the streams of the members
// and leases buckets to hand their Raft leadership to its own server (JetStream's stream leader
// step-down with a preferred placement: the old leader transfers it, no
// election timeout is waited). Only once per leadership: with several
// replica groups, the leader that took its lease last holds the streams,
// and two leaders never pass them back and forth. The move is liveness
// only: Raft keeps every acknowledged write through a transfer, and the
// lease's compare-and-set and epochs do not depend on who leads a stream.

// A new leader waits streamLeaderSettle before it moves the streams: its
// clients are finding it then (Metadata, InitProducerID, the first
// produce), and a stream changing leader under them made them retry
// (leader SIGKILLs of 3 to 4.3 s in scripts/failover-example.sh, against
// at most 2.1 s with the wait). streamLeaderTries bounds the tries after
// it: the streams may still be electing after the crash that made this
// node leader, and a stream moves only while its leader hears from this
// node's server promptly (see moveStreamLeader).
const (
	streamLeaderSettle = time.Second
	streamLeaderTries  = 40
	streamLeaderRetry  = 250 * time.Millisecond
)

// pullStreamLeaders moves the buckets' stream leaders to self, this
// node's embedded NATS server, while this node leads under epoch.
func (n *Node) pullStreamLeaders(ctx context.Context, self string, epoch uint64) {
	// Not the metadata bucket: it is written when a topic changes or a
	// producer id is handed out, not on a follower's crash, and every
	// move is a moment without a leader for the clients using it.
	buckets := []jetstream.KeyValue{n.buckets.Members, n.buckets.Leases}
	for try := 0; try < streamLeaderTries && len(buckets) > 0; try++ {
		wait := streamLeaderRetry
		if try == 0 {
			wait = streamLeaderSettle
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if !n.elector.Leading(epoch) {
			return
		}
		buckets = slices.DeleteFunc(buckets, func(kv jetstream.KeyValue) bool {
			err := n.pullStreamLeader(ctx, kv, self)
			if err != nil && try == streamLeaderTries-1 {
				n.log.WithError(err).WithField("bucket", kv.Bucket()).Info("stream leader not moved to this node's NATS server: a follower's crash may stall the lease while the stream elects")
			}
			return err == nil
		})
	}
}

// pullStreamLeader moves the leader of kv's stream to self; nil when it
// is there already.
func (n *Node) pullStreamLeader(ctx context.Context, kv jetstream.KeyValue, self string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	from, err := moveStreamLeader(ctx, n.nc, kv, self)
	if errors.Is(err, errStreamLeaderMoving) {
		n.log.WithFields(logrus.Fields{"bucket": kv.Bucket(), "from": from}).Info("bucket's stream leader asked to move to this node's NATS server")
	}
	return err
}

// errStreamLeaderMoving: the old leader took the request; it hands over
// shortly, and the next look sees it done.
var errStreamLeaderMoving = errors.New("ha: stream leader moving")

// moveStreamLeader asks the leader of kv's stream to hand its leadership
// to the server named to, and returns the leader it asked. It is nil once
// to leads (or the stream is not replicated), errStreamLeaderMoving when
// the request was taken.
func moveStreamLeader(ctx context.Context, nc *nats.Conn, kv jetstream.KeyValue, to string) (string, error) {
	st, err := kv.Status(ctx)
	if err != nil {
		return "", fmt.Errorf("ha: bucket %s status: %w", kv.Bucket(), err)
	}
	info := st.(*jetstream.KeyValueBucketStatus).StreamInfo()
	c := info.Cluster
	if info.Config.Replicas <= 1 {
		return "", nil
	}
	if c == nil || c.Leader == "" {
		return "", fmt.Errorf("ha: stream %s has no leader", info.Config.Name)
	}
	if c.Leader == to {
		return "", nil
	}
	// The leader hands over only to a peer it heard from within three
	// heartbeats; to any other it just steps down, and the stream stalls
	// for an election, the very stall this move is for. Two heartbeats
	// leave room for the time the request takes.
	if !slices.ContainsFunc(c.Replicas, func(p *jetstream.PeerInfo) bool {
		return p.Name == to && p.Current && p.Active < 2*natsHBInterval
	}) {
		return c.Leader, fmt.Errorf("ha: stream %s: server %s is not a replica its leader %s heard from just now", info.Config.Name, to, c.Leader)
	}
	req, err := json.Marshal(server.JSApiLeaderStepdownRequest{Placement: &server.Placement{Preferred: to}})
	if err != nil {
		return c.Leader, err
	}
	msg, err := nc.RequestWithContext(ctx, fmt.Sprintf(server.JSApiStreamLeaderStepDownT, info.Config.Name), req)
	if err != nil {
		return c.Leader, fmt.Errorf("ha: stream %s leader step-down: %w", info.Config.Name, err)
	}
	var resp server.JSApiStreamLeaderStepDownResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return c.Leader, fmt.Errorf("ha: stream %s leader step-down: %w", info.Config.Name, err)
	}
	if resp.Error != nil {
		return c.Leader, fmt.Errorf("ha: stream %s leader step-down: %s", info.Config.Name, resp.Error.Description)
	}
	return c.Leader, errStreamLeaderMoving
}
