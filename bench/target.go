package bench

import (
	"context"
	"errors"
)

// The end-to-end load drives a system through these two small interfaces,
// so that the same producers, pacing, histograms and counting run against
// every system (Kafka protocol or NATS JetStream) and only the client
// differs.

// sender is one producer connection.
type sender interface {
	// Send publishes value to partition asynchronously; rec.ack is called
	// exactly once, when the system acknowledged it or failed. Send may
	// block while too much is in flight. value is not reused before the
	// ack.
	Send(ctx context.Context, partition int32, value []byte, rec acker) error
	// Flush waits until every record sent so far is done.
	Flush(ctx context.Context) error
	Close()
}

// receiver reads partitions from the beginning.
type receiver interface {
	// Poll waits for the next records and calls fn with each value.
	Poll(ctx context.Context, fn func(value []byte)) error
	Close()
}

// target is a system reachable over the network, with its topic (or
// stream) of a given number of partitions.
type target interface {
	// Prepare creates the topic with the partitions, or checks that it
	// exists with that many.
	Prepare(ctx context.Context, partitions int) error
	NewSender() (sender, error)
	// NewReceiver reads every partition from its start; the int64 is how
	// many records it will find (what was stored when it was called).
	// partitions, when not 0, is checked against the topic.
	NewReceiver(ctx context.Context, partitions int) (receiver, int64, error)
	Close()
}

// errProduce marks a record the system did not acknowledge.
var errProduce = errors.New("bench: produce failed")
