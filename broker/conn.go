package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/valyala/bytebufferpool"
)

// conn serves one client connection. Requests are handled and answered one
// at a time, so responses leave in request order however deeply the client
// pipelines; that is also how Kafka orders a connection.
//
// A reader goroutine reads the next request while one is being handled, so
// that a client disconnecting is noticed at once: it cancels ctx, which ends
// the request's waits (long polls, durability and dispatch waits) instead of
// leaving them to their timeouts.
type conn struct {
	b      *Broker
	nc     net.Conn
	remote string
	host   string // the client's address without its port
	r      *bufio.Reader

	// mu orders the read deadlines set by the reader, the handler and
	// interruptRead. Under it: busy is set while a request is handled (the
	// connection is not idle, so no idle deadline); bodyBy, while a frame's
	// body is being read, is when it must have arrived (ReadTimeout).
	mu     sync.Mutex
	busy   bool
	bodyBy time.Time

	// out is the encoded response being written (buffers.go); for a
	// Fetch, fetch holds the views of its records and vec, when set, is
	// the vector to write instead of out (fetch_write.go).
	out   *bytebufferpool.ByteBuffer
	fetch fetchRecords
	vec   net.Buffers

	// clientID is the client id of the last request header; group
	// members are described with it.
	clientID string
	auth     connAuth // SASL state and principal
	// held is what the request being handled holds of the in-flight
	// budget (its frame), for a reservation it makes on top (produce's
	// decompression) to wait on the budget's terms.
	held int64

	// ctx is cancelled when the client disconnects or the connection ends;
	// every wait of the connection's requests selects on it.
	ctx context.Context

	// readAt is when the request being handled was read, and stages
	// times it if it is a produce (produce_stages.go).
	readAt time.Time
	stages stageClock

	// The produce whose answer waits while the next request is appended
	// (produce_pipeline.go): pipelined is set while serve runs; corr and
	// reqStart are the handled request's, justDeferred says handle
	// deferred it, writeErr is a failed write of a deferred answer.
	pipelined    bool
	deferred     *deferredProduce // nil or &deferSlot
	deferSlot    deferredProduce
	justDeferred bool
	// waits and waited reach the connection's waiter goroutine, started
	// by the first deferred produce.
	waits      chan *deferredProduce
	waited     chan struct{}
	waiterDone chan struct{}
	corr       int32
	reqStart   time.Time
	writeErr   error
}

func newConn(b *Broker, nc net.Conn) *conn {
	remote := nc.RemoteAddr().String()
	host := remote
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		host = a.IP.String()
	}
	return &conn{b: b, nc: nc, remote: remote, host: host, r: bufio.NewReaderSize(nc, 64<<10), ctx: context.Background()}
}

// interruptRead unblocks a connection waiting for its next request; one
// busy with a request finishes it first.
func (c *conn) interruptRead() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nc.SetReadDeadline(time.Now())
}

func (c *conn) closing() bool {
	select {
	case <-c.b.closing:
		return true
	default:
		return false
	}
}

// armRead sets the read deadline for the next request (IdleTimeout, or
// none while one is being handled), or reports that the broker is closing,
// whose interruptRead it must not undo.
func (c *conn) armRead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing() {
		return false
	}
	c.nc.SetReadDeadline(c.readDeadline())
	return true
}

// setBusy marks a request in flight (no idle deadline) or finished (the
// idle deadline starts now).
func (c *conn) setBusy(busy bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy = busy
	if !c.closing() {
		c.nc.SetReadDeadline(c.readDeadline())
	}
}

// readBody gives the body of an announced frame ReadTimeout to arrive
// (start) and ends that (done).
func (c *conn) readBody(start bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bodyBy = time.Time{}
	if start && c.b.cfg.ReadTimeout > 0 {
		c.bodyBy = time.Now().Add(c.b.cfg.ReadTimeout)
	}
	if !c.closing() {
		c.nc.SetReadDeadline(c.readDeadline())
	}
}

// readDeadline is the read deadline for the current state; mu held.
func (c *conn) readDeadline() time.Time {
	switch {
	case !c.bodyBy.IsZero():
		return c.bodyBy
	case c.busy || c.b.cfg.IdleTimeout <= 0:
		return time.Time{}
	default:
		return time.Now().Add(c.b.cfg.IdleTimeout)
	}
}

func (c *conn) serve() {
	defer c.b.unregister(c)
	ctx, cancel := context.WithCancel(context.Background())
	c.ctx = ctx
	frames := make(chan queuedFrame)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		c.readLoop(ctx, cancel, frames)
	}()
	defer func() {
		cancel()
		c.stopWaiter()
		c.nc.Close()
		<-readerDone
		c.releaseResponse()
	}()
	c.pipelined = true
	for {
		// A request already read is answered even when the broker is
		// closing (it stops reading more): dropped, the first request
		// of a new connection looks to franz-go like a missing SASL
		// handshake, which fails its records without retry.
		f, ok := c.nextFrame(frames)
		if !ok {
			c.finishDeferred()
			return
		}
		c.setBusy(true)
		raw := c.auth.raw
		c.readAt = f.at
		out, err := c.handle(f.buf.B)
		c.b.recycleFrame(f.buf, raw)
		if err != nil {
			c.finishDeferred()
			c.logDrop(err)
			return
		}
		if out != nil {
			if err := c.writeResponse(out); err != nil {
				c.logWriteFailed(err)
				return
			}
			c.stages.mark(stageWrite)
			c.releaseResponse()
		}
		if c.writeErr != nil {
			c.logWriteFailed(c.writeErr)
			return
		}
		c.setBusy(false)
	}
}

// readLoop reads requests and hands them to serve one at a time. A read
// that fails for any reason but the broker closing means the client is gone
// or misbehaved: the in-flight request's waits are cancelled. On a broker
// Close the in-flight request is left to finish and answer.
func (c *conn) readLoop(ctx context.Context, cancel context.CancelFunc, frames chan<- queuedFrame) {
	defer close(frames)
	for c.armRead() {
		frame, err := c.readFrame()
		if err != nil {
			c.logReadError(err)
			if !c.closing() {
				cancel()
			}
			return
		}
		select {
		case frames <- queuedFrame{buf: frame, at: time.Now()}:
		case <-ctx.Done():
			c.releaseFrame(frame.B)
			return
		}
	}
}

// queuedFrame is a request as the reader hands it to serve, with when it
// was read: the start of a produce's queue stage.
type queuedFrame struct {
	buf *bytebufferpool.ByteBuffer
	at  time.Time
}

// errFrame is a framing violation; the connection is closed.
var errFrame = errors.New("broker: bad frame")

// readFrame reads one size-prefixed request, its bytes reserved from the
// broker's in-flight budget as they arrive (limits.go) until handle
// releases them.
func (c *conn) readFrame() (*bytebufferpool.ByteBuffer, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if err := c.checkFrameSize(n); err != nil {
		return nil, err
	}
	c.readBody(true)
	var reserved int64
	frame, err := c.frameFor(int(n))
	if err == nil {
		reserved, err = c.readFrameBody(frame, int(n))
	}
	c.readBody(false)
	if err != nil {
		c.b.inflight.release(reserved)
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%w: truncated request of %d bytes: %w", errFrame, n, err)
	}
	c.b.metrics.bytesIn.Add(float64(4 + n))
	return frame, nil
}

// frameFor takes the frame for an n-byte request from the pool. Its API
// key decides which: a frame that comes back to the pool once handled
// may take any kept frame that holds it. Peek waits for two bytes the
// body is made of anyway, so it reserves and allocates nothing.
func (c *conn) frameFor(n int) (*bytebufferpool.ByteBuffer, error) {
	if c.auth.raw {
		return c.b.frames.get(n, false), nil
	}
	head, err := c.r.Peek(2)
	if err != nil {
		return nil, err
	}
	return c.b.frames.get(n, recycled(head)), nil
}

func (c *conn) checkFrameSize(n int32) error {
	switch {
	case n < c.minFrame():
		return fmt.Errorf("%w: request size %d is below the %d byte minimum", errFrame, n, c.minFrame())
	case n > c.b.cfg.MaxRequestBytes:
		return fmt.Errorf("%w: request size %d exceeds max request size %d", errFrame, n, c.b.cfg.MaxRequestBytes)
	case n > maxUnauthenticatedFrame && c.b.cfg.Security.Credentials != nil && c.auth.user == "":
		return fmt.Errorf("%w: request size %d before SASL authentication exceeds %d bytes", errFrame, n, maxUnauthenticatedFrame)
	}
	return nil
}

// readFrameBody appends n bytes to frame as they arrive and reserves them
// (limits.go); it returns what it reserved. The frame grows at most to
// twice what has arrived, so an announced size allocates nothing ahead of
// its bytes: what the connection's read buffer holds is copied, and once
// it is empty the rest is read straight into the frame's spare room
// (bufio passes large reads through), as a whole frame was before.
func (c *conn) readFrameBody(frame *bytebufferpool.ByteBuffer, n int) (int64, error) {
	var reserved int64
	for have := len(frame.B); have < n; have = len(frame.B) {
		var err error
		if c.r.Buffered() > 0 || have == 0 {
			if _, err = c.r.Peek(1); err != nil {
				return reserved, err
			}
			k := min(c.r.Buffered(), n-have)
			growFrame(frame, k, n)
			p, _ := c.r.Peek(k)
			frame.B = append(frame.B, p...)
			c.r.Discard(k)
		} else {
			growFrame(frame, 1, n)
			var m int
			m, err = c.r.Read(frame.B[have:min(cap(frame.B), n)])
			frame.B = frame.B[:have+m]
		}
		if more := int64(len(frame.B)) - reserved; more > 0 {
			got, rerr := c.reserve(more, int64(n)-reserved, reserved)
			if rerr != nil {
				return reserved, rerr
			}
			reserved += got
		}
		if err != nil {
			return reserved, err
		}
	}
	return reserved, nil
}

func (c *conn) logReadError(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return
	case errors.Is(err, syscall.ECONNRESET):
		// The client closed (franz-go resets connections it gives up
		// on): a disconnect, not a request the broker could not read.
		c.b.log.WithFields(logrus.Fields{"remote": c.remote, "error": err}).Debug("connection reset by the client")
	case errors.Is(err, os.ErrDeadlineExceeded):
		if c.closing() {
			return
		}
		c.b.log.WithFields(logrus.Fields{"remote": c.remote, "error": err}).Info("connection closed: idle or slow request")
	default:
		c.b.log.WithFields(logrus.Fields{"remote": c.remote, "error": err}).Warn("connection closed: unreadable request")
	}
}

func (c *conn) logDrop(err error) {
	f := logrus.Fields{"remote": c.remote, "error": err}
	var re *requestError
	if errors.As(err, &re) {
		f["api"] = re.api
		f["version"] = re.version
	}
	c.b.log.WithFields(f).Warn("connection closed: bad request")
}
