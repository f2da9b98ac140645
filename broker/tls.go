package broker

import (
	"crypto/tls"
	"net"
)

// listen opens a TCP listener on addr, serving TLS when cfg is set. The
// handshake runs on a connection's first read, under its idle deadline, so
// a client that never completes it is closed like an idle one.
func listen(addr string, cfg *tls.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil || cfg == nil {
		return ln, err
	}
	return tls.NewListener(ln, cfg), nil
}
