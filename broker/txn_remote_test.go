package broker

import (
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/poll"
)

// twoGroups is the cluster of two single-node replica groups as node
// self sees it: node 1 leads partition 0 of every user topic and every
// partition of the internal topics (so it coordinates every transaction),
// node 2 partition 1 unless the test says otherwise. A node is listed at
// the address it last listened on.
type twoGroups struct {
	self  int32
	addrs *groupAddrs
}

type groupAddrs struct {
	mu   sync.Mutex
	addr map[int32]string
	// moved is partition 1's leader in a node's view, when not node 2.
	moved map[int32]int32
}

// move1 makes node see node leader lead partition 1.
func (a *groupAddrs) move1(node, leader int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.moved[node] = leader
}

func (a *groupAddrs) set(node int32, addr string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.addr[node] = addr
}

func (c twoGroups) Brokers() []ClusterBroker {
	c.addrs.mu.Lock()
	defer c.addrs.mu.Unlock()
	var out []ClusterBroker
	for node := int32(1); node <= 2; node++ {
		if host, port, err := net.SplitHostPort(c.addrs.addr[node]); err == nil {
			p, _ := strconv.Atoi(port)
			out = append(out, ClusterBroker{NodeID: node, Host: host, Port: int32(p), ReplicaGroup: "g" + strconv.Itoa(int(node))})
		}
	}
	return out
}

func (c twoGroups) PartitionLeader(topic string, p int32) (int32, int32, bool) {
	switch {
	case isInternalTopic(topic), p == 0:
		return 1, 1, true
	case p == 1:
		c.addrs.mu.Lock()
		defer c.addrs.mu.Unlock()
		if leader, ok := c.addrs.moved[c.self]; ok {
			return leader, 1, true
		}
		return 2, 1, true
	}
	return 0, 0, false
}

func (twoGroups) Replicas(leader int32) ([]int32, []int32) { return []int32{leader}, []int32{leader} }

func (c twoGroups) Status() NodeStatus {
	return NodeStatus{NodeID: c.self, ReplicaGroup: "g" + strconv.Itoa(int(c.self)), Role: "leader", Epoch: 1}
}

// openNode opens (or reopens, on the same directory) node's broker of a
// twoGroups cluster and lists its address.
func openNode(t *testing.T, node int32, dir string, addrs *groupAddrs) *Broker {
	t.Helper()
	cfg := testConfig(t, dir)
	cfg.NodeID, cfg.Cluster = node, twoGroups{self: node, addrs: addrs}
	b := startBroker(t, cfg)
	addrs.set(node, b.Addr())
	return b
}

// call is one request on a raw connection, which must answer.
func call(t *testing.T, c *rawConn, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, ok := c.roundTrip(req)
	if !ok {
		t.Fatalf("%T: connection closed", req)
	}
	return resp
}

// createSpan creates the topic "span", two partitions, on the broker at
// addr.
func createSpan(t *testing.T, addr string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "span", 2, 1
	req.Topics, req.TimeoutMillis = append(req.Topics, rt), 10000
	if code := call(t, dialRaw(t, addr), req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create topic on %s: %v", addr, kerr.ErrorForCode(code))
	}
}

// initTxn initializes the transactional id on its coordinator's
// connection c and returns the producer id and epoch.
func initTxn(t *testing.T, c *rawConn, id string) (int64, int16) {
	t.Helper()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, &id, 600000
	ir := call(t, c, init).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(ir.ErrorCode))
	}
	return ir.ProducerID, ir.ProducerEpoch
}

// openTxnIn initializes the transactional id on its coordinator's
// connection c and opens its transaction in the partition with one
// record; it returns the producer id and epoch.
func openTxnIn(t *testing.T, c *rawConn, id, topic string, partition int32) (int64, int16) {
	t.Helper()
	pid, epoch := initTxn(t, c, id)
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, id, pid, epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{partition}}}
	if code := call(t, c, add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.Acks, produce.TimeoutMillis, produce.TransactionID = 9, -1, 10000, &id
	produce.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: partition, Records: txnBatch(pid, epoch, 0, "v")}}}}
	if code := call(t, c, produce).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	return pid, epoch
}

// lastStable is the partition's last stable offset on its leader.
func lastStable(t *testing.T, addr, topic string, partition int32) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.IsolationLevel = 4, readCommitted
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c := dialRaw(t, addr)
	defer c.nc.Close() // polled: a connection each would reach the per-host limit
	p := call(t, c, req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatalf("ListOffsets %s/%d on %s: %v", topic, partition, addr, err)
	}
	return p.Offset
}

// TestTxnRemoteMarkers: a transaction over partitions of two replica
// groups. The coordinator (node 1) takes node 2's partition, node 2
// accepts the producer's transactional batches although it does not
// coordinate the id, and the commit's marker reaches node 2 through
// WriteTxnMarkers, releasing its last stable offset. Then node 2 is down
// while a second transaction commits: the decision and node 1's marker
// are stored but the EndTxn cannot finish; node 1 stops before the
// Complete record. Restarted, node 1's coordinator finds the transaction
// decided and sends node 2's marker again until node 2, back too, takes
// it: the transaction completes, its records stable on both nodes.
func TestTxnRemoteMarkers(t *testing.T) {
	addrs := &groupAddrs{addr: make(map[int32]string), moved: make(map[int32]int32)}
	dir1, dir2 := t.TempDir(), t.TempDir()
	b1, b2 := openNode(t, 1, dir1, addrs), openNode(t, 2, dir2, addrs)
	for _, b := range []*Broker{b1, b2} {
		createSpan(t, b.Addr())
	}
	coord := dialRaw(t, b1.Addr())
	id := "span"
	pid, epoch := initTxn(t, coord, id)
	seq := []int32{0, 0}
	// begin adds both partitions and writes a record to each, on its
	// leader.
	begin := func(n int) {
		t.Helper()
		add := kmsg.NewPtrAddPartitionsToTxnRequest()
		add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, id, pid, epoch
		add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "span", Partitions: []int32{0, 1}}}
		for _, p := range call(t, coord, add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("add span/%d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
		for p, b := range []*Broker{b1, b2} {
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 9, -1, 10000, &id
			req.Topics = []kmsg.ProduceRequestTopic{{Topic: "span", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: int32(p), Records: txnBatch(pid, epoch, seq[p], "v"+strconv.Itoa(n))}}}}
			if code := call(t, dialRaw(t, b.Addr()), req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Fatalf("produce to span/%d: %v", p, kerr.ErrorForCode(code))
			}
			seq[p]++
		}
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 3, id, pid, epoch, true

	begin(1)
	if lso := lastStable(t, b2.Addr(), "span", 1); lso != 0 {
		t.Fatalf("span/1 on node 2: last stable offset %d in the open transaction, want 0", lso)
	}
	if code := call(t, coord, end).(*kmsg.EndTxnResponse).ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	for p, b := range []*Broker{b1, b2} {
		if lso := lastStable(t, b.Addr(), "span", int32(p)); lso != 2 {
			t.Fatalf("span/%d after the commit: last stable offset %d, want 2 (record and marker)", p, lso)
		}
	}

	begin(2)
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		coord.roundTrip(end) // cut short by node 1's Close
	}()
	poll.True(t, "node 1's own marker of the second commit", func() bool { return lastStable(t, b1.Addr(), "span", 0) == 4 })
	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}
	<-ended

	b1 = openNode(t, 1, dir1, addrs)
	if lso := lastStable(t, b1.Addr(), "span", 0); lso != 4 {
		t.Fatalf("span/0 after node 1's restart: last stable offset %d, want 4", lso)
	}
	b2 = openNode(t, 2, dir2, addrs)
	poll.True(t, "node 2's marker of the second commit", func() bool { return lastStable(t, b2.Addr(), "span", 1) == 4 })
	poll.True(t, "the second transaction to complete", func() bool {
		tx, ok := b1.txns.Load().Describe(id)
		return ok && tx.State.String() == "CompleteCommit"
	})

	// A failover in node 2's group as its nodes see it: partition 1 is
	// led by node 3, not live, and node 2 answers NOT_LEADER_OR_FOLLOWER.
	// The coordinator, seeing node 2 still, retries until node 2 leads
	// again and takes the marker.
	// (The restart appended node 1's marker again: offsets from here.)
	base0, base1 := lastStable(t, b1.Addr(), "span", 0), lastStable(t, b2.Addr(), "span", 1)
	coord = dialRaw(t, b1.Addr())
	begin(3)
	addrs.move1(2, 3)
	ended = make(chan struct{})
	go func() {
		defer close(ended)
		if resp, ok := coord.roundTrip(end); !ok || resp.(*kmsg.EndTxnResponse).ErrorCode != 0 {
			t.Errorf("EndTxn across the failover: %+v", resp)
		}
	}()
	poll.True(t, "node 1's own marker of the third commit", func() bool { return lastStable(t, b1.Addr(), "span", 0) == base0+2 })
	select {
	case <-ended:
		t.Fatal("EndTxn answered while node 2 refuses the marker")
	default:
	}
	addrs.move1(2, 2)
	<-ended
	if lso := lastStable(t, b2.Addr(), "span", 1); lso != base1+2 {
		t.Fatalf("span/1 after the third commit: last stable offset %d, want %d", lso, base1+2)
	}
}

// switchAfterDecision is a storage that, once armed, runs flip right
// after the next append to the transaction-state topic has been stored:
// between the coordinator's decision, with the markers of the partitions
// this node led then, and its sending of the others.
type switchAfterDecision struct {
	Storage
	armed atomic.Bool
	flip  func()
}

func (s *switchAfterDecision) Append(dst []Appended, batches []StorageBatch) ([]Appended, error) {
	out, err := s.Storage.Append(dst, batches)
	if len(batches) > 0 && batches[0].Topic == txnStateTopic && s.armed.CompareAndSwap(true, false) {
		s.flip()
	}
	return out, err
}

// TestTxnMarkerOfPartitionArrivingAtDecision: a partition another group
// leads when the coordinator stores its decision, and this node's right
// after (a move into this group switching over between the two), still
// gets its marker: the coordinator's log did not take it, and the node
// leads it now, its transaction open there. Before, the markers sent to
// other groups were only those of partitions this node did not lead at
// the second look, and this one was left open for ever: its last stable
// offset never passed the transaction.
func TestTxnMarkerOfPartitionArrivingAtDecision(t *testing.T) {
	addrs := &groupAddrs{addr: make(map[int32]string), moved: make(map[int32]int32)}
	addrs.move1(1, 1)
	st := &switchAfterDecision{flip: func() { addrs.move1(1, 1) }}
	cfg := testConfig(t, t.TempDir())
	cfg.NodeID, cfg.Cluster = 1, twoGroups{self: 1, addrs: addrs}
	b, err := open(cfg, testStore(), func(s Storage) Storage { st.Storage = s; return st })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	addrs.set(1, b.Addr())
	createSpan(t, b.Addr())
	c := dialRaw(t, b.Addr())
	id := "arriving"
	pid, epoch := openTxnIn(t, c, id, "span", 1)

	// Node 2 leads span/1 as the decision is stored, node 1 again after.
	addrs.move1(1, 2)
	st.armed.Store(true)
	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 3, id, pid, epoch, true
	if code := call(t, c, end).(*kmsg.EndTxnResponse).ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if st.armed.Load() {
		t.Fatal("the decision was not stored through the wrapped storage")
	}
	if lso := lastStable(t, b.Addr(), "span", 1); lso != 2 {
		t.Fatalf("span/1 after the commit: last stable offset %d, want 2 (record and marker)", lso)
	}
}

// TestTxnStateOnlyWhereItsPartitionIsLed: each replica group's leader
// runs a transaction coordinator, for the ids whose transaction-state
// partition its group leads. A request reaching another group's leader
// (a client's stale coordinator) is answered NOT_COORDINATOR and writes
// nothing: a second coordinator would hand the id another producer id
// and epoch, in a log the id's own coordinator never reads.
func TestTxnStateOnlyWhereItsPartitionIsLed(t *testing.T) {
	addrs := &groupAddrs{addr: make(map[int32]string), moved: make(map[int32]int32)}
	b2 := openNode(t, 2, t.TempDir(), addrs)
	end := b2.LogEndOffset()
	id := "elsewhere"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, &id, 600000
	if code := call(t, dialRaw(t, b2.Addr()), init).(*kmsg.InitProducerIDResponse).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Errorf("InitProducerId on node 2, its state partition led by node 1: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	if got := b2.LogEndOffset(); got != end {
		t.Errorf("node 2's log grew from %d to %d", end, got)
	}
}

// TestTxnAPIsOfAnotherGroupsID: the transaction APIs naming an id that
// another group's leader coordinates answer NOT_COORDINATOR, which sends
// a Kafka client back to FindCoordinator, not the errors of an id this
// coordinator never saw (INVALID_PRODUCER_ID_MAPPING ends a producer).
func TestTxnAPIsOfAnotherGroupsID(t *testing.T) {
	addrs := &groupAddrs{addr: make(map[int32]string), moved: make(map[int32]int32)}
	b2 := openNode(t, 2, t.TempDir(), addrs)
	c := dialRaw(t, b2.Addr())
	id := "elsewhere"
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, id, 7, 0
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "span", Partitions: []int32{1}}}
	offsets := kmsg.NewPtrAddOffsetsToTxnRequest()
	offsets.Version, offsets.TransactionalID, offsets.ProducerID, offsets.Group = 3, id, 7, "g"
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.Version, commit.TransactionalID, commit.Group, commit.ProducerID = 3, id, "g", 7
	commit.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "span", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 1, Offset: 1}}}}
	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.Commit = 3, id, 7, true
	describe := kmsg.NewPtrDescribeTransactionsRequest()
	describe.TransactionalIDs = []string{id}
	for _, tc := range []struct {
		req  kmsg.Request
		code func(kmsg.Response) int16
	}{
		{add, func(r kmsg.Response) int16 {
			return r.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
		}},
		{offsets, func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }},
		{commit, func(r kmsg.Response) int16 {
			return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		}},
		{end, func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }},
		{describe, func(r kmsg.Response) int16 {
			return r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
		}},
	} {
		if code := tc.code(call(t, c, tc.req)); code != kerr.NotCoordinator.Code {
			t.Errorf("%s on node 2, the id's coordinator node 1: %v, want NOT_COORDINATOR", kmsg.NameForKey(tc.req.Key()), kerr.ErrorForCode(code))
		}
	}
}
