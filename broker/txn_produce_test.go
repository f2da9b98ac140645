package broker

import (
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/txn"
)

// txnBatch is rawBatch marked transactional.
func txnBatch(producerID int64, epoch int16, firstSeq int32, values ...string) []byte {
	b := rawBatch(producerID, epoch, firstSeq, values...)
	b[batchAttributesAt] |= attrTransactional
	resealCRC(b)
	return b
}

// TestTxnProduceVerified: a transactional batch is stored only for a
// partition of its producer's Ongoing transaction, at the current epoch.
// A batch arriving after the transaction ended (a late retry, a zombie)
// is refused, so no transaction is left open in a partition that nobody
// will end, which would hold the last stable offset forever. Sequence
// checks (duplicates, gaps) go on across the markers. A refusal is logged
// at debug level with the coordinator's view of the transaction.
func TestTxnProduceVerified(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	cfg.Logger = logger
	b := startBroker(t, cfg)
	createTopic(t, newClient(t, b.Addr()), "tv", 2)
	c := dialRaw(t, b.Addr())
	id := "tv"
	call := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, ok := c.roundTrip(req)
		if !ok {
			t.Fatalf("%T: connection closed", req)
		}
		return resp
	}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, &id, 60000
	ir := call(init).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(ir.ErrorCode))
	}
	pid, epoch := ir.ProducerID, ir.ProducerEpoch
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, id, pid, epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "tv", Partitions: []int32{0}}}
	if code := call(add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	produce := func(partition int32, epoch int16, seq int32, want *kerr.Error) int64 {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 9, -1, 10000, &id
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "tv", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: partition, Records: txnBatch(pid, epoch, seq, "v")}}}}
		rp := call(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if want == nil && rp.ErrorCode != 0 || want != nil && rp.ErrorCode != want.Code {
			t.Fatalf("produce to tv/%d at epoch %d sequence %d: %v, want %v", partition, epoch, seq, kerr.ErrorForCode(rp.ErrorCode), want)
		}
		return rp.BaseOffset
	}
	endTxn := func(commit bool) {
		t.Helper()
		end := kmsg.NewPtrEndTxnRequest()
		end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 3, id, pid, epoch, commit
		if code := call(end).(*kmsg.EndTxnResponse).ErrorCode; code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	produce(1, epoch, 0, kerr.InvalidTxnState) // not added to the transaction
	if e := hook.LastEntry(); e == nil || e.Message != "transactional batch refused" || e.Data["partition"] != int32(1) || e.Data["txn_state"] != txn.Ongoing || e.Data["txn_partitions"] != 1 {
		t.Fatalf("last log entry %v; want the refusal of tv/1 with the Ongoing transaction of one partition", e)
	}
	// A transactional batch without a transactional id is refused too.
	noID := kmsg.NewPtrProduceRequest()
	noID.Version, noID.Acks, noID.TimeoutMillis = 9, -1, 10000
	noID.Topics = []kmsg.ProduceRequestTopic{{Topic: "tv", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: txnBatch(pid, epoch, 0, "v")}}}}
	if code := call(noID).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("transactional batch without a transactional id: %v, want INVALID_PRODUCER_ID_MAPPING", kerr.ErrorForCode(code))
	}
	if e := hook.LastEntry(); e == nil || e.Message != "transactional batch refused" || e.Data["transactional_id"] != nil {
		t.Fatalf("last log entry %v; want the refusal without a transactional id", e)
	}
	produce(0, epoch, 0, nil)
	endTxn(true)
	produce(0, epoch, 1, kerr.InvalidTxnState) // after the transaction's marker

	// The next transaction's sequences go on across the marker: the
	// idempotence checks see through it.
	if code := call(add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	base := produce(0, epoch, 1, nil)
	if retry := produce(0, epoch, 1, nil); retry != base || base != 2 {
		t.Fatalf("batch at offset %d, its retry answered %d; want both 2 (after the record and the marker)", base, retry)
	}
	produce(0, epoch, 3, kerr.OutOfOrderSequenceNumber)
	endTxn(false)

	if ir = call(init).(*kmsg.InitProducerIDResponse); ir.ErrorCode != 0 || ir.ProducerEpoch != epoch+1 {
		t.Fatalf("re-init: %v epoch %d", kerr.ErrorForCode(ir.ErrorCode), ir.ProducerEpoch)
	}
	produce(0, epoch, 2, kerr.InvalidProducerEpoch) // fenced
	cl := newClient(t, b.Addr())
	if lso, hw := latestOffset(t, cl, "tv", 0, readCommitted), latestOffset(t, cl, "tv", 0, 0); lso != hw || hw != 4 {
		t.Fatalf("tv/0: last stable offset %d, high watermark %d; want both 4 (two records, two markers)", lso, hw)
	}
}
