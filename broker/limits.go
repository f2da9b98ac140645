package broker

import (
	"errors"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/decompress"
)

// Resource limits against hostile or merely slow clients:
//
//   - A connection reads, handles and answers one request at a time, so it
//     holds at most one request frame: MaxRequestBytes is the
//     per-connection in-flight limit. Before a SASL login a frame may be
//     at most maxUnauthenticatedFrame (Kafka's
//     sasl.server.max.receive.size): only the login APIs are allowed then.
//   - All connections together hold at most MaxInflightBytes of request
//     frames (Kafka's queued.max.request.bytes). A frame's bytes are
//     reserved as they arrive, not when its size prefix announces them, so
//     clients announcing 100 MiB requests and sending nothing hold nothing;
//     a frame whose next bytes find the budget spent stops reading (TCP
//     pushes back on its client) until bytes are released.
//   - IdleTimeout closes a connection that sends nothing between requests
//     (connections.max.idle.ms); ReadTimeout bounds the rest of a request
//     once its size has arrived, so a client trickling bytes cannot hold
//     what it reserved for long; WriteTimeout bounds writing a response to
//     a client that does not read.
//   - A Fetch asks for at most MaxFetchBytes whatever the client says
//     (fetch.max.bytes); response buffers are pooled across connections
//     (buffers.go), so idle connections do not keep their largest
//     response alive.
//   - A produce request with compressed batches (or a legacy message set)
//     also reserves, before it decompresses anything, what decompressing
//     one batch can hold (decompressionReserve): batches are decompressed
//     one at a time, as streams that stop at 64x max.message.bytes
//     holding at most decompress.Memory(max.message.bytes), so a
//     decompression bomb costs at most that much memory. The reservation waits
//     no longer than the request's timeout (REQUEST_TIMED_OUT), since the
//     request's own frame is reserved meanwhile, and is released before
//     the request waits for its appends.
//   - MaxConnections caps open connections, MaxConnectionsPerIP those from
//     one address (acceptLoop), so one host cannot take every slot.

// maxUnauthenticatedFrame bounds a frame before a SASL login, as Kafka's
// sasl.server.max.receive.size (512 KB): ApiVersions, SaslHandshake and
// SaslAuthenticate are all far smaller.
const maxUnauthenticatedFrame = 512 << 10

// byteBudget is a FIFO counting semaphore of bytes; FIFO so one large
// request is not starved by a stream of small ones.
//
// Frames reserve their bytes piecewise as they arrive, so frames part-read
// can wait on each other: with every reserved byte held by a frame waiting
// for more, none would ever finish. The head waiter is then granted the
// rest of its frame on credit, which it finishes and releases; only one
// frame is ever on credit (it holds bytes and does not wait, so the
// condition is false until it releases), so the budget is exceeded by at
// most one request.
type byteBudget struct {
	mu    sync.Mutex
	total int64
	avail int64
	// waitHeld is what the waiters already hold.
	waitHeld int64
	waiters  []*budgetWaiter
}

type budgetWaiter struct {
	n, rest, held int64 // wanted now, wanted to finish, already held
	granted       int64
	ready         chan struct{}
}

func newByteBudget(n int64) *byteBudget { return &byteBudget{total: n, avail: n} }

// take reserves n bytes if they are free and nobody waits.
func (bb *byteBudget) take(n int64) bool {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	if len(bb.waiters) == 0 && bb.avail >= n {
		bb.avail -= n
		return true
	}
	return false
}

// wait reserves n bytes for a caller already holding held and wanting
// rest (at least n) to finish, waiting its turn until stop closes. It
// returns what was granted: n, or rest when granted on credit.
func (bb *byteBudget) wait(n, rest, held int64, stop <-chan struct{}) (int64, bool) {
	bb.mu.Lock()
	w := &budgetWaiter{n: n, rest: rest, held: held, ready: make(chan struct{})}
	bb.waiters = append(bb.waiters, w)
	bb.waitHeld += held
	bb.grant()
	bb.mu.Unlock()
	select {
	case <-w.ready:
		return w.granted, true
	case <-stop:
		bb.mu.Lock()
		defer bb.mu.Unlock()
		select {
		case <-w.ready:
			// Granted while stopping: hand the bytes back.
			bb.avail += w.granted
		default:
			i := slices.Index(bb.waiters, w)
			bb.waiters = slices.Delete(bb.waiters, i, i+1)
			bb.waitHeld -= held
		}
		bb.grant()
		return 0, false
	}
}

func (bb *byteBudget) release(n int64) {
	bb.mu.Lock()
	bb.avail += n
	bb.grant()
	bb.mu.Unlock()
}

// acquire reserves n more bytes for a request that holds held, waiting its
// turn (and its credit, see grant) until stop closes.
func (bb *byteBudget) acquire(n, held int64, stop <-chan struct{}) bool {
	if bb.take(n) {
		return true
	}
	_, ok := bb.wait(n, n, held, stop)
	return ok
}

// grant wakes waiters in order while the head one fits, or gives the
// head its rest on credit when nothing holding bytes could release them.
func (bb *byteBudget) grant() {
	for len(bb.waiters) > 0 {
		w := bb.waiters[0]
		switch {
		case w.n <= bb.avail:
			w.granted = w.n
		case bb.waitHeld == bb.total-bb.avail:
			w.granted = w.rest
		default:
			return
		}
		bb.waiters = bb.waiters[1:]
		bb.avail -= w.granted
		bb.waitHeld -= w.held
		close(w.ready)
	}
}

// reserve takes more bytes of the in-flight budget for a frame holding
// held and wanting rest to finish, waiting its turn if they are not free.
// It returns what it reserved: more, or rest when granted on credit.
func (c *conn) reserve(more, rest, held int64) (int64, error) {
	if c.b.inflight.take(more) {
		return more, nil
	}
	got, ok := c.b.inflight.wait(more, rest, held, c.b.closing)
	if !ok {
		return 0, errors.New("broker closing while the request waited for memory")
	}
	// The wait was the broker's, not the client's: the body's
	// ReadTimeout starts again.
	c.readBody(true)
	return got, nil
}

// releaseFrame returns the reservation of a frame handled (or never handed
// over): its length, as readFrame reserved it.
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
// wrappers and the batch they become (max.message.bytes each), for the
// largest limit among the request's topics (a topic's own
// max.message.bytes may exceed the broker's). It is at most what the
// budget holds beside the largest request, so that it can always be
// granted to a request holding its own frame.
func (b *Broker) decompressionReserve(req *kmsg.ProduceRequest) int64 {
	limit := int64(b.cfg.MaxMessageBytes)
	for _, t := range req.Topics {
		if meta, ok := b.meta.Topic(t.Topic); ok {
			limit = max(limit, int64(b.maxMessageBytes(meta)))
		}
	}
	return min(decompress.Memory(limit)+2*limit, b.cfg.MaxInflightBytes-int64(b.cfg.MaxRequestBytes))
}
