package bench

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaRecord is one record in franz-go's hands: the kgo.Record and its
// acker in one allocation. It is its own Record's Context, wrapping the
// send's, so that the one promise function finds the acker through the
// Context franz-go hands back, without a closure per record; a hook that
// wraps the Context still lets Value find it. It is not pooled: franz-go
// may still read a record's Context after its promise (a goroutine waiting
// for an unknown topic selects on it).
type kafkaRecord struct {
	context.Context
	rec kgo.Record
	ack acker
}

type kafkaRecordKey struct{}

func (k *kafkaRecord) Value(key any) any {
	if key == (kafkaRecordKey{}) {
		return k
	}
	return k.Context.Value(key)
}

// kafkaPromise is every plain record's promise.
func kafkaPromise(r *kgo.Record, err error) {
	k := r.Context.Value(kafkaRecordKey{}).(*kafkaRecord)
	if err != nil {
		err = fmt.Errorf("%w: partition %d: %w", errProduce, r.Partition, err)
	}
	k.ack.ack(err)
}
