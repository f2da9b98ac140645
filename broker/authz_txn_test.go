package broker

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const txnACL = `unilog-acl 1
alice admin       *
alice produce     orders
alice consume     orders
alice transaction etl-*
bob   produce     orders
bob   transaction bob-*
bob   group       g
`

// TestACLTransactions: the transaction APIs need the transaction
// permission on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
// AddPartitionsToTxn produce on each topic, AddOffsetsToTxn the group;
// listings show only the ids the principal may use.
func TestACLTransactions(t *testing.T) {
	b := saslACLBroker(t, txnACL, nil)
	alice, bob := userClient(t, b, "alice"), userClient(t, b, "bob")
	for _, topic := range []string{"orders", "secret"} {
		createTopic(t, alice, topic, 1)
	}
	ctx := testCtx(t)
	// alice's transactional producer works end to end.
	pr := newClient(t, b.Addr(), kgo.SASL(scramMech("SCRAM-SHA-512", "alice", testPasswords["alice"])), kgo.TransactionalID("etl-1"))
	produceTxns(t, pr, "orders", 0, 1, 1)

	code := func(err error, resp int16) int16 {
		t.Helper()
		var ke *kerr.Error
		switch {
		case errors.As(err, &ke):
			return ke.Code
		case err != nil:
			t.Fatal(err)
		}
		return resp
	}
	initPID := func(cl *kgo.Client, id string) (int64, int16, int16) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return -1, -1, code(err, 0)
		}
		return resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode
	}
	if _, _, c := initPID(bob, "etl-2"); c != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("bob InitProducerId etl-2: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
	}
	pid, epoch, c := initPID(bob, "bob-1")
	if c != 0 {
		t.Fatalf("bob InitProducerId bob-1: %v", kerr.ErrorForCode(c))
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "bob-1", pid, epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "orders", Partitions: []int32{0}}, {Topic: "secret", Partitions: []int32{0}}}
	ar, err := add.RequestWith(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int16{}
	for _, rt := range ar.Topics {
		got[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	if got["secret"] != kerr.TopicAuthorizationFailed.Code || got["orders"] != kerr.OperationNotAttempted.Code {
		t.Errorf("bob AddPartitionsToTxn orders+secret: %v", got)
	}
	offs := kmsg.NewPtrAddOffsetsToTxnRequest()
	offs.TransactionalID, offs.ProducerID, offs.ProducerEpoch = "bob-1", pid, epoch
	addOffsets := func(group string) int16 {
		offs.Group = group
		or, err := offs.RequestWith(ctx, bob)
		if err != nil {
			return code(err, 0)
		}
		return or.ErrorCode
	}
	if c := addOffsets("h"); c != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("bob AddOffsetsToTxn group h: %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
	}
	if c := addOffsets("g"); c != 0 {
		t.Errorf("bob AddOffsetsToTxn group g: %v", kerr.ErrorForCode(c))
	}

	list := func(cl *kgo.Client) []string {
		resp, err := kmsg.NewPtrListTransactionsRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range resp.TransactionStates {
			ids = append(ids, s.TransactionalID)
		}
		return ids
	}
	if ids := list(bob); !slices.Equal(ids, []string{"bob-1"}) {
		t.Errorf("bob lists %v, want [bob-1]", ids)
	}
	if ids := list(alice); !slices.Equal(ids, []string{"etl-1"}) {
		t.Errorf("alice lists %v, want [etl-1]", ids)
	}
	describe := func(id string) int16 {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id}
		resp, err := req.RequestWith(ctx, bob)
		if err != nil {
			return code(err, 0)
		}
		return resp.TransactionStates[0].ErrorCode
	}
	if c := describe("etl-1"); c != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("bob DescribeTransactions etl-1: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", kerr.ErrorForCode(c))
	}
	if c := describe("bob-1"); c != 0 {
		t.Errorf("bob DescribeTransactions bob-1: %v", kerr.ErrorForCode(c))
	}
}
