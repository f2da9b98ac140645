package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
	"github.com/unilog/unilog/txn"
)

// Transaction APIs under an ACL, Kafka's way: each needs the principal's
// transaction permission on its transactional id (Kafka's
// TRANSACTIONAL_ID resource; TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and
// the topics and groups it names their own permissions: produce on the
// topics added to a transaction, group (and consume on the topics) for
// offsets committed in one. Listings leave out ids the principal may not
// see and count no denial.

func (a authz) transactional(id string) bool {
	return a.b.authorizeTopic(a.p, auth.Transaction, id)
}

// authorizeTxnID runs a request naming one transactional id.
func authorizeTxnID(z authz, req kmsg.Request, id string) (kmsg.Response, error) {
	if !z.transactional(id) {
		return txnFailed(req, kerr.TransactionalIDAuthorizationFailed)
	}
	return z.run()
}

// authorizeInitProducerID: a producer id alone writes nothing, so any
// principal may ask for one; a transactional id needs its permission.
func authorizeInitProducerID(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.InitProducerIDRequest)
	if r.TransactionalID == nil || *r.TransactionalID == "" {
		return z.run()
	}
	return authorizeTxnID(z, req, *r.TransactionalID)
}

func authorizeEndTxn(z authz, req kmsg.Request) (kmsg.Response, error) {
	return authorizeTxnID(z, req, req.(*kmsg.EndTxnRequest).TransactionalID)
}

// authorizeAddPartitionsToTxn: a topic the principal may not write fails
// the request, the other partitions answered OPERATION_NOT_ATTEMPTED, as
// Kafka does: a transaction gets all its partitions or none.
func authorizeAddPartitionsToTxn(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.AddPartitionsToTxnRequest)
	if !z.transactional(r.TransactionalID) {
		return txnFailed(req, kerr.TransactionalIDAuthorizationFailed)
	}
	allow := z.allow(auth.Produce)
	denied := make(map[string]bool)
	for _, t := range r.Topics {
		if !allow(t.Topic) {
			denied[t.Topic] = true
		}
	}
	if len(denied) == 0 {
		return z.run()
	}
	resp, _ := txnFailed(req, kerr.OperationNotAttempted)
	for _, rt := range resp.(*kmsg.AddPartitionsToTxnResponse).Topics {
		if denied[rt.Topic] {
			for j := range rt.Partitions {
				rt.Partitions[j].ErrorCode = kerr.TopicAuthorizationFailed.Code
			}
		}
	}
	return resp, nil
}

func authorizeAddOffsetsToTxn(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.AddOffsetsToTxnRequest)
	if z.transactional(r.TransactionalID) && !z.group(r.Group) {
		return errorResponse(req, kerr.GroupAuthorizationFailed)
	}
	return authorizeTxnID(z, req, r.TransactionalID)
}

// authorizeTxnOffsetCommit: the transactional id and the group, then the
// partitions of each topic the principal may not consume are refused and
// the rest committed, as an OffsetCommit.
func authorizeTxnOffsetCommit(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.TxnOffsetCommitRequest)
	switch {
	case !z.transactional(r.TransactionalID):
		return txnFailed(req, kerr.TransactionalIDAuthorizationFailed)
	case !z.group(r.Group):
		return txnFailed(req, kerr.GroupAuthorizationFailed)
	}
	var out []kmsg.TxnOffsetCommitRequestTopic
	r.Topics, out = splitByName(r.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) string { return t.Topic }, z.topic)
	resp, err := z.run()
	if err != nil || len(out) == 0 {
		return resp, err
	}
	tr := resp.(*kmsg.TxnOffsetCommitResponse)
	tr.Topics = append(tr.Topics, txn.OffsetCommitAnswers(out, kerr.TopicAuthorizationFailed.Code)...)
	return tr, nil
}

func authorizeDescribeTransactions(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.DescribeTransactionsRequest)
	return splitRun(z.run, &r.TransactionalIDs, func(id string) string { return id }, z.transactional, func(resp kmsg.Response, id string) {
		dr := resp.(*kmsg.DescribeTransactionsResponse)
		dr.TransactionStates = append(dr.TransactionStates, describeTxnFailed(id, kerr.TransactionalIDAuthorizationFailed))
	})
}

// authorizeListTransactions lists only the ids the principal may use.
func authorizeListTransactions(z authz, _ kmsg.Request) (kmsg.Response, error) {
	resp, err := z.run()
	if err != nil {
		return nil, err
	}
	lr, ok := resp.(*kmsg.ListTransactionsResponse)
	if !ok {
		return resp, nil
	}
	kept := lr.TransactionStates[:0]
	for _, s := range lr.TransactionStates {
		if z.b.cfg.Security.ACL.Allow(z.p, auth.Transaction, s.TransactionalID) {
			kept = append(kept, s)
		}
	}
	lr.TransactionStates = kept
	return lr, nil
}
