package broker

import "context"

// whilePending runs fn with a context that ends when the client closes
// the connection (the connection's context: its reader notices) or the
// broker closes, for requests that park (JoinGroup, SyncGroup) and must
// not outlive their client nor hold up Close.
func (c *conn) whilePending(fn func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	go func() {
		select {
		case <-c.b.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	fn(ctx)
}
