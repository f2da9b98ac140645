package bench

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultCommitInterval is how often a transactional producer commits:
// Kafka Streams' commit.interval.ms under exactly-once.
const DefaultCommitInterval = 100 * time.Millisecond

// txnSender is a producer whose records go in transactions, one committed
// every interval of sending, as a stream processor under exactly-once
// commits (Kafka Streams every commit.interval.ms): the producer stops to
// flush and commit, then begins the next. A record's latency is to its
// acknowledgement, not to its commit. One goroutine sends; a failure to
// begin or commit stops it and Flush reports it.
type txnSender struct {
	cl       *kgo.Client
	interval time.Duration
	began    time.Time // zero: no transaction open
	err      error
}

func (s *txnSender) Send(ctx context.Context, partition int32, value []byte, rec acker) error {
	if s.err != nil {
		return s.err
	}
	if s.began.IsZero() {
		if err := s.cl.BeginTransaction(); err != nil {
			s.err = fmt.Errorf("%w: begin transaction: %w", errProduce, err)
			return s.err
		}
		s.began = time.Now()
	}
	kafkaSender{s.cl}.Send(ctx, partition, value, rec)
	if time.Since(s.began) >= s.interval {
		s.commit(ctx)
	}
	return cmp.Or(s.err, ctx.Err())
}

// commit flushes the open transaction's records and commits it.
func (s *txnSender) commit(ctx context.Context) {
	s.began = time.Time{}
	err := s.cl.Flush(ctx)
	if err == nil {
		err = s.cl.EndTransaction(ctx, kgo.TryCommit)
	}
	if err != nil {
		s.err = fmt.Errorf("%w: commit transaction: %w", errProduce, err)
	}
}

// Flush commits the open transaction.
func (s *txnSender) Flush(ctx context.Context) error {
	if s.err == nil && !s.began.IsZero() {
		s.commit(ctx)
	}
	return s.err
}

func (s *txnSender) Close() { s.cl.Close() }
