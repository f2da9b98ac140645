package broker

import (
	"crypto/tls"
	"log"
	"net"
	"strings"

	"github.com/sirupsen/logrus"
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

// httpErrorLog routes the admin server's own errors (failed TLS
// handshakes, mostly) to the structured log instead of the standard
// logger's stderr.
func httpErrorLog(l logrus.FieldLogger) *log.Logger {
	return log.New(logWriter{l.WithField("component", "admin")}, "", 0)
}

type logWriter struct{ l logrus.FieldLogger }

func (w logWriter) Write(p []byte) (int, error) {
	w.l.Warn(strings.TrimSpace(string(p)))
	return len(p), nil
}
