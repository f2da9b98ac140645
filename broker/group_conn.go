package broker

import (
	"context"
	"errors"
	"net"
	"os"
	"time"
)

// whilePending runs fn with a context that ends when the client closes
// the connection or the broker closes, for requests that park (JoinGroup,
// SyncGroup) and must not outlive their client. Requests are served one at
// a time, so nothing reads the socket meanwhile: a watcher peeks at it.
// EOF or an error means the peer is gone; a pipelined request arriving
// stays buffered for the serve loop, which reads it once fn returns.
func (c *conn) whilePending(fn func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	c.mu.Lock()
	c.nc.SetReadDeadline(time.Time{})
	c.mu.Unlock()
	peeked := make(chan struct{})
	go func() {
		defer close(peeked)
		_, err := c.r.Peek(1)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed) {
			cancel()
		}
	}()
	go func() {
		select {
		case <-c.b.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	fn(ctx)
	// Stop the watcher before the serve loop reads again: the buffered
	// reader is not safe for two goroutines.
	c.mu.Lock()
	c.nc.SetReadDeadline(time.Now())
	c.mu.Unlock()
	<-peeked
}
