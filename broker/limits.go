package broker

import (
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/decompress"
)

// Resource limits against hostile or merely slow clients:
//
//   - A connection reads, handles and answers one request at a time, so it
//     holds at most one request frame: MaxRequestBytes is the
//     per-connection in-flight limit.
//   - All connections together hold at most MaxInflightBytes of request
//     frames (Kafka's queued.max.request.bytes): a frame's bytes are
//     reserved when its size arrives, before it is allocated, and released
//     once it is handled, so a thousand clients announcing 100 MiB requests
//     wait their turn instead of exhausting memory.
//   - IdleTimeout closes a connection that sends nothing between requests
//     (connections.max.idle.ms); ReadTimeout bounds the rest of a request
//     once its size has arrived, so a client trickling bytes cannot hold
//     its reservation for long; WriteTimeout bounds writing a response to a
//     client that does not read.
//   - A Fetch asks for at most MaxFetchBytes whatever the client says
//     (fetch.max.bytes); response buffers are pooled across connections
//     (buffers.go), so idle connections do not keep their largest
//     response alive.
//   - A produce request with compressed batches (or a legacy message set)
//     also reserves, before it decompresses anything, what decompressing
//     one batch can hold (decompressionReserve): batches are decompressed
//     one at a time, as streams that stop at max.message.bytes, so a
//     decompression bomb costs at most that much. The reservation waits
//     no longer than the request's timeout (REQUEST_TIMED_OUT), since the
//     request's own frame is reserved meanwhile, and is released before
//     the request waits for its appends.
//   - MaxConnections caps open connections (acceptLoop).

// byteBudget is a FIFO counting semaphore of bytes; FIFO so one large
// request is not starved by a stream of small ones.
type byteBudget struct {
	mu      sync.Mutex
	avail   int64
	waiters []budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

func newByteBudget(n int64) *byteBudget { return &byteBudget{avail: n} }

// acquire reserves n bytes, waiting until they are free or stop closes.
func (bb *byteBudget) acquire(n int64, stop <-chan struct{}) bool {
	bb.mu.Lock()
	if len(bb.waiters) == 0 && bb.avail >= n {
		bb.avail -= n
		bb.mu.Unlock()
		return true
	}
	w := budgetWaiter{n: n, ready: make(chan struct{})}
	bb.waiters = append(bb.waiters, w)
	bb.mu.Unlock()
	select {
	case <-w.ready:
		return true
	case <-stop:
		bb.mu.Lock()
		defer bb.mu.Unlock()
		select {
		case <-w.ready:
			// Granted while stopping: hand the bytes back.
			bb.avail += n
			bb.grant()
		default:
			for i := range bb.waiters {
				if bb.waiters[i].ready == w.ready {
					bb.waiters = append(bb.waiters[:i], bb.waiters[i+1:]...)
					break
				}
			}
			bb.grant()
		}
		return false
	}
}

func (bb *byteBudget) release(n int64) {
	bb.mu.Lock()
	bb.avail += n
	bb.grant()
	bb.mu.Unlock()
}

// grant wakes waiters in order while the head one fits.
func (bb *byteBudget) grant() {
	for len(bb.waiters) > 0 && bb.waiters[0].n <= bb.avail {
		w := bb.waiters[0]
		bb.waiters = bb.waiters[1:]
		bb.avail -= w.n
		close(w.ready)
	}
}

// acquireFrame reserves an announced frame of n bytes from the broker's
// in-flight budget.
func (c *conn) acquireFrame(n int32) error {
	if !c.b.inflight.acquire(int64(n), c.b.closing) {
		return fmt.Errorf("%w: broker closing while request waited for memory", errFrame)
	}
	return nil
}

// releaseFrame returns the reservation of a frame handled (or failed to
// read, or never handed over): its length, as acquireFrame reserved it.
func (c *conn) releaseFrame(frame []byte) {
	c.b.inflight.release(int64(len(frame)))
}

// limitRequest caps what a request may make the broker build.
func (c *conn) limitRequest(req kmsg.Request) {
	if f, ok := req.(*kmsg.FetchRequest); ok {
		max := c.b.cfg.MaxFetchBytes
		if f.MaxBytes <= 0 || f.MaxBytes > max {
			f.MaxBytes = max
		}
	}
}

// waiting is the number of frames waiting for budget.
func (bb *byteBudget) waiting() int {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	return len(bb.waiters)
}

// available is the budget not reserved.
func (bb *byteBudget) available() int64 {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	return bb.avail
}

// needsDecompression reports whether a produce request holds a compressed
// v2 batch or a legacy message set (whose wrappers may be compressed).
func needsDecompression(req *kmsg.ProduceRequest) bool {
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			records := req.Topics[i].Partitions[j].Records
			if isLegacyMessageSet(records) || len(records) > batchAttributesAt && records[batchAttributesAt]&attrCompressionMask != 0 {
				return true
			}
		}
	}
	return false
}

// decompressionReserve is the memory a produce request reserves from the
// in-flight budget to validate its compressed batches, one at a time: a
// decompressor's state, and for a legacy message set its decompressed
// wrappers and the batch they become (max.message.bytes each). It is at
// most what the budget holds beside the largest request, so that it can
// always be granted to a request holding its own frame.
func (b *Broker) decompressionReserve() int64 {
	limit := int64(b.cfg.MaxMessageBytes)
	return min(decompress.Memory(limit)+2*limit, b.cfg.MaxInflightBytes-int64(b.cfg.MaxRequestBytes))
}
