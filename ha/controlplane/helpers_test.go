package controlplane

import (
	"io"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/sirupsen/logrus"
)

func quietLogger() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// startServer runs a standalone embedded server on a free loopback port.
func startServer(t *testing.T) *Server {
	t.Helper()
	s, err := StartServer(ServerConfig{Name: "test", Dir: t.TempDir(), Listen: "127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// dial opens one connection, as one node would.
func dial(t *testing.T, url string) *nats.Conn {
	t.Helper()
	return dialConn(t, ConnConfig{URLs: url})
}

// dialConn opens one connection with cfg.
func dialConn(t *testing.T, cfg ConnConfig) *nats.Conn {
	t.Helper()
	cfg.Name = t.Name()
	nc, err := Dial(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
