package broker

import (
	"context"
	"math"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A producer id alone writes nothing, so any principal may ask for one;
// each Produce is checked. Transactional ids are refused by the handler.
func init() {
	register(kmsg.InitProducerID, 0, 4, (*Broker).handleInitProducerID, authorizePublic)
}

// handleInitProducerID serves idempotent producers. Transactions are not
// implemented, so a transactional id is refused.
func (b *Broker) handleInitProducerID(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID = -1
	resp.ProducerEpoch = -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
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
