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
	"time"

	"github.com/sirupsen/logrus"
)

// conn serves one client connection. Requests are read, handled and
// answered one at a time, so responses leave in request order however
// deeply the client pipelines; that is also how Kafka orders a connection.
type conn struct {
	b      *Broker
	nc     net.Conn
	remote string
	r      *bufio.Reader

	// mu orders read deadlines set by serve against interruptRead.
	mu sync.Mutex

	buf []byte // response buffer, reused

	// clientID is the client id of the last request header; group
	// members are described with it.
	clientID string
	held     int64    // in-flight bytes reserved for the current frame
	auth     connAuth // SASL state and principal

	// ctx bounds the waits of this connection's requests (long polls,
	// durability); a connection's requests otherwise end with the broker.
	ctx context.Context
}

func newConn(b *Broker, nc net.Conn) *conn {
	return &conn{b: b, nc: nc, remote: nc.RemoteAddr().String(), r: bufio.NewReaderSize(nc, 64<<10), ctx: context.Background()}
}

// interruptRead unblocks a connection waiting for its next request; one
// busy with a request finishes it first.
func (c *conn) interruptRead() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nc.SetReadDeadline(time.Now())
}

// armRead sets the read deadline timeout from now (none if not positive),
// or reports that the broker is closing, whose interruptRead it must not undo.
func (c *conn) armRead(timeout time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.b.closing:
		return false
	default:
	}
	var d time.Time
	if timeout > 0 {
		d = time.Now().Add(timeout)
	}
	c.nc.SetReadDeadline(d)
	return true
}

func (c *conn) serve() {
	defer c.b.unregister(c)
	defer c.nc.Close()
	for c.armRead(c.b.cfg.IdleTimeout) {
		frame, err := c.readFrame()
		if err != nil {
			c.logReadError(err)
			return
		}
		out, err := c.handle(frame)
		if err != nil {
			c.logDrop(err)
			return
		}
		if out == nil {
			continue
		}
		if c.b.cfg.WriteTimeout > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(c.b.cfg.WriteTimeout))
		}
		if _, err := c.nc.Write(out); err != nil {
			c.b.log.WithFields(logrus.Fields{"remote": c.remote, "error": err}).Info("connection closed: write failed")
			return
		}
		c.b.metrics.bytesOut.Add(float64(len(out)))
		c.trimBuffer()
	}
}

// errFrame is a framing violation; the connection is closed.
var errFrame = errors.New("broker: bad frame")

// readFrame reads one size-prefixed request.
func (c *conn) readFrame() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < c.minFrame() {
		return nil, fmt.Errorf("%w: request size %d is below the %d byte minimum", errFrame, n, c.minFrame())
	}
	if n > c.b.cfg.MaxRequestBytes {
		return nil, fmt.Errorf("%w: request size %d exceeds max request size %d", errFrame, n, c.b.cfg.MaxRequestBytes)
	}
	if err := c.acquireFrame(n); err != nil {
		return nil, err
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(c.r, frame); err != nil {
		c.releaseFrame()
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%w: truncated request of %d bytes: %w", errFrame, n, err)
	}
	c.b.metrics.bytesIn.Add(float64(4 + n))
	return frame, nil
}

func (c *conn) logReadError(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		select {
		case <-c.b.closing:
			return
		default:
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
