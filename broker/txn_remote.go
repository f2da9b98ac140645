package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/txn"
)

// Backoff between rounds of WriteTxnMarkers while some partition's
// leader has not acknowledged its marker.
const (
	txnRemoteBackoff    = 50 * time.Millisecond
	txnRemoteMaxBackoff = time.Second
)

// txnRemote is txn.Remote: a transaction's markers in partitions other
// replica groups lead go to each partition's leader as WriteTxnMarkers
// (Kafka's way between brokers), through a Kafka client of the leader's
// listener as the partition-move copier reaches its source. Each round
// asks the cluster who leads each partition still unacknowledged, so a
// failover or a move in the other group is followed; a partition whose
// topic was deleted needs no marker; one this node leads by now (a move
// ended here) gets its marker here.
type txnRemote struct{ b *Broker }

// WriteMarkers implements txn.Remote.
func (r txnRemote) WriteMarkers(ctx context.Context, m txn.Markers) error {
	b := r.b
	pending := make(map[txn.TopicPartition]bool)
	for _, tp := range m.Partitions {
		if !b.takesMarkers(tp.Topic, tp.Partition) || b.txnOpenIn(tp, m.ProducerID) {
			pending[tp] = true
		}
	}
	backoff := txnRemoteBackoff
	var last error
	for {
		byNode := make(map[int32][]txn.TopicPartition)
		for tp := range pending {
			if !b.txnPartitionExists(tp.Topic, tp.Partition) {
				delete(pending, tp)
				continue
			}
			if node, _, ok := b.cfg.Cluster.PartitionLeader(tp.Topic, tp.Partition); ok {
				byNode[node] = append(byNode[node], tp)
			}
		}
		for node, tps := range byNode {
			acked, err := r.send(ctx, node, m, tps)
			if err != nil {
				last = err
			}
			for _, tp := range acked {
				delete(pending, tp)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if last == nil {
			last = errors.New("partition without a leader")
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("broker: %d partitions' markers not acknowledged (%w): %w", len(pending), last, ctx.Err())
		case <-b.closing:
			t.Stop()
			return fmt.Errorf("broker: %d partitions' markers not acknowledged (%w): broker closing", len(pending), last)
		}
		backoff = min(2*backoff, txnRemoteMaxBackoff)
	}
}

// txnOpenIn reports whether the producer's transaction is still open in
// tp in this node's producer state. The log's append of the decision
// (txnLog.Append) took the markers of the partitions this node led then;
// one it took over since (a move switching over to this group) is led
// here now yet has no marker: asking takesMarkers again would leave it
// out of both. While the coordinator ends the transaction the producer
// cannot open another, so an open one here is this one.
func (b *Broker) txnOpenIn(tp txn.TopicPartition, producerID int64) bool {
	p := b.knownPartition(tp.Topic, tp.Partition)
	if p == nil {
		return false // no batch of this node's ever reached it
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, open := p.Open[producerID]
	return open
}

// send writes the markers of tps, all led by node, and returns those
// acknowledged.
func (r txnRemote) send(ctx context.Context, node int32, m txn.Markers, tps []txn.TopicPartition) ([]txn.TopicPartition, error) {
	b := r.b
	if node == b.cfg.NodeID {
		markers := make([]txnMarker, len(tps))
		for i, tp := range tps {
			markers[i] = txnMarker{topic: tp.Topic, partition: tp.Partition, producerID: m.ProducerID, epoch: m.Epoch, commit: m.Commit}
		}
		var acked []txn.TopicPartition
		var err error
		for i, code := range b.storeMarkers(ctx, markers) {
			if markerSettled(code) {
				acked = append(acked, tps[i])
			} else {
				err = fmt.Errorf("marker in %s/%d: %w", tps[i].Topic, tps[i].Partition, kerr.ErrorForCode(code))
			}
		}
		return acked, err
	}
	cl, err := b.txnPeers.client(b, node)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	rm := kmsg.NewWriteTxnMarkersRequestMarker()
	rm.ProducerID, rm.ProducerEpoch, rm.Committed = m.ProducerID, m.Epoch, m.Commit
	for _, tp := range tps {
		rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
		rm.Topics = append(rm.Topics, rt)
	}
	req.Markers = append(req.Markers, rm)
	resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
	if err != nil {
		b.txnPeers.drop(node, cl)
		return nil, fmt.Errorf("WriteTxnMarkers to node %d: %w", node, err)
	}
	var acked []txn.TopicPartition
	for _, rm := range resp.Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				if markerSettled(rp.ErrorCode) {
					acked = append(acked, txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
				} else {
					err = fmt.Errorf("WriteTxnMarkers to node %d: %s/%d: %w", node, rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
				}
			}
		}
	}
	return acked, err
}

// markerSettled reports whether a partition's answer to a marker ends
// the coordinator's sending of it: stored, or refused as stale because the
// producer already wrote there at a later epoch, whose own marker settles
// the partition (Kafka's coordinator stops sending then too). Retrying a
// stale marker could never succeed; it held WriteMarkers until its
// context ended.
func markerSettled(code int16) bool {
	return code == 0 || code == kerr.InvalidProducerEpoch.Code
}

// txnPeers are the Kafka clients of other nodes' listeners the
// transaction coordinator sends markers through, one per node.
type txnPeers struct {
	mu      sync.Mutex
	clients map[int32]*txnPeer
}

type txnPeer struct {
	addr string
	cl   *kgo.Client
}

// client is a client of node's listener as the cluster lists it now.
func (p *txnPeers) client(b *Broker, node int32) (*kgo.Client, error) {
	addr, err := b.peerAddr(node)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.clients[node]; c != nil {
		if c.addr == addr {
			return c.cl, nil
		}
		c.cl.Close()
	}
	cl, err := b.dialPeer(addr, "unilog-txn-markers")
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", node, err)
	}
	if p.clients == nil {
		p.clients = make(map[int32]*txnPeer)
	}
	p.clients[node] = &txnPeer{addr: addr, cl: cl}
	return cl, nil
}

// drop closes node's client after a failed request, so the next round
// connects anew (to the address the cluster lists then).
func (p *txnPeers) drop(node int32, cl *kgo.Client) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.clients[node]; c != nil && c.cl == cl {
		delete(p.clients, node)
		cl.Close()
	}
}

// close closes every client.
func (p *txnPeers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for node, c := range p.clients {
		c.cl.Close()
		delete(p.clients, node)
	}
}
