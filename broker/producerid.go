package broker

import (
	"context"
	"math"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A producer id alone writes nothing, so any principal may ask for one;
// each Produce is checked. A transactional id needs the transaction
// permission on it (authz_txn.go).
func init() {
	register(kmsg.InitProducerID, 0, 4, (*Broker).handleInitProducerID, authorizeInitProducerID)
}

// handleInitProducerID serves idempotent producers here and transactional
// ones on the transaction coordinator (txn.go).
func (b *Broker) handleInitProducerID(ctx context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	if req.TransactionalID != nil && *req.TransactionalID != "" {
		return b.initTransactional(ctx, req), nil
	}
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID = -1
	resp.ProducerEpoch = -1
	// KIP-360: a producer that knows its id asks for an epoch bump.
	if req.ProducerID >= 0 && req.ProducerEpoch >= 0 && req.ProducerEpoch < math.MaxInt16 {
		resp.ProducerID = req.ProducerID
		resp.ProducerEpoch = req.ProducerEpoch + 1
		return resp, nil
	}
	id, err := b.pids.Allocate()
	if err != nil {
		b.log.WithFields(logrus.Fields{"api": "InitProducerID", "error": err}).Error("cannot reserve producer ids")
		resp.ErrorCode = kerr.KafkaStorageError.Code
		return resp, nil
	}
	resp.ProducerID = id
	resp.ProducerEpoch = 0
	return resp, nil
}
