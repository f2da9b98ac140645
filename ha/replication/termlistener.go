package replication

import (
	"net"
	"sync"
)

// termListener is the replication listener as one term's Leader sees it:
// Accept yields the connections accept hands over, and Close (the
// Leader's, at the end of the term) leaves the real listener open.
type termListener struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newTermListener(addr net.Addr) *termListener {
	return &termListener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (t *termListener) Accept() (net.Conn, error) {
	select {
	case c := <-t.conns:
		return c, nil
	case <-t.closed:
		return nil, net.ErrClosed
	}
}

func (t *termListener) Close() error {
	t.once.Do(func() { close(t.closed) })
	return nil
}

func (t *termListener) Addr() net.Addr { return t.addr }
