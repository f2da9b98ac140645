package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTxnOffsetsVisibleAtCommit: offsets committed in a transaction are
// not the group's until it commits (an OffsetFetch sees the old offset,
// or UNSTABLE_OFFSET_COMMIT when it requires stable offsets), are the
// group's once it commits, and never are if it aborts.
func TestTxnOffsetsVisibleAtCommit(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "src", 1)
	ctx := testCtx(t)
	id := "offs"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &id, 60000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, kerr.ErrorForCode(ir.ErrorCode))
	}
	check := func(what string, err error, code int16) {
		t.Helper()
		if err == nil {
			err = kerr.ErrorForCode(code)
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	fetch := func(stable bool) (int64, int16) {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group, req.RequireStable = 7, "g", stable
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "src", Partitions: []int32{0}}}
		resp, err := req.RequestWith(ctx, cl)
		check("OffsetFetch", err, resp.ErrorCode)
		p := resp.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	commitIn := func(offset int64, commit bool) {
		t.Helper()
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = id, ir.ProducerID, ir.ProducerEpoch, "g"
		ar, err := ao.RequestWith(ctx, cl)
		check("AddOffsetsToTxn", err, ar.ErrorCode)
		tc := kmsg.NewPtrTxnOffsetCommitRequest()
		tc.TransactionalID, tc.ProducerID, tc.ProducerEpoch, tc.Group, tc.Generation = id, ir.ProducerID, ir.ProducerEpoch, "g", -1
		tc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "src", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
		tr, err := tc.RequestWith(ctx, cl)
		check("TxnOffsetCommit", err, tr.Topics[0].Partitions[0].ErrorCode)
		if off, code := fetch(false); off == offset || code != 0 {
			t.Fatalf("OffsetFetch in the transaction: offset %d %v; the transaction's offset %d must not show", off, kerr.ErrorForCode(code), offset)
		}
		if _, code := fetch(true); code != kerr.UnstableOffsetCommit.Code {
			t.Fatalf("OffsetFetch requiring stable offsets in the transaction: %v, want UNSTABLE_OFFSET_COMMIT", kerr.ErrorForCode(code))
		}
		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, ir.ProducerID, ir.ProducerEpoch, commit
		er, err := end.RequestWith(ctx, cl)
		check("EndTxn", err, er.ErrorCode)
	}
	commitIn(5, true)
	if off, code := fetch(true); off != 5 || code != 0 {
		t.Fatalf("after the commit: offset %d %v, want 5", off, kerr.ErrorForCode(code))
	}
	commitIn(9, false)
	if off, code := fetch(true); off != 5 || code != 0 {
		t.Fatalf("after the abort: offset %d %v, want 5 still", off, kerr.ErrorForCode(code))
	}
}
