package controlplane

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/sirupsen/logrus"
)

// ServerConfig configures the NATS server a broker embeds.
type ServerConfig struct {
	// Name is the server name, unique in a routed cluster (JetStream
	// places replicas by it).
	Name string
	// Dir is the directory the JetStream store lives under (the server
	// adds <Dir>/jetstream).
	Dir string
	// Listen is the client listener HOST:PORT; port 0 picks a free one.
	Listen string
	// ClusterListen is the route listener HOST:PORT other embedded servers
	// connect to; empty runs a standalone server.
	ClusterListen string
	// Routes are the nats-route://host:port URLs of the other servers.
	Routes []string
	// ClusterName must be the same on every routed server. Default "unilog".
	ClusterName string
	// Secret, when set, closes the server to everyone without it: clients
	// must sign in with its nkey (ConnConfig.Secret) and routes present
	// its route password. Nil leaves the server open, for tests and
	// benchmarks standing in for an external NATS; a broker always sets it.
	Secret *Secret
	// ReadyTimeout bounds the wait for the listeners. Default 10s.
	ReadyTimeout time.Duration
	Logger       logrus.FieldLogger
}

// Server is an embedded NATS server with JetStream.
type Server struct {
	ns *server.Server
}

// StartServer starts the embedded server and returns once it accepts
// clients. JetStream stores under cfg.Dir and fsyncs every write
// (sync_interval: always): the buckets hold leases and metadata that must
// survive a power cut as the commit log does, and they are written rarely.
func StartServer(cfg ServerConfig) (*Server, error) {
	host, port, err := splitListen(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("ha: nats listen %q: %w", cfg.Listen, err)
	}
	if err := prepareStoreDir(cfg.Dir); err != nil {
		return nil, err
	}
	opts := &server.Options{
		ServerName: cfg.Name,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   cfg.Dir,
		SyncAlways: true,
		NoSigs:     true,
		// Shutdown's lame duck mode: the clients a broker's own server
		// still has by then are few, and it must not wait minutes.
		LameDuckDuration:    2 * time.Second,
		LameDuckGracePeriod: 100 * time.Millisecond,
	}
	var routeUser *url.Userinfo
	if cfg.Secret != nil {
		_, pub, err := cfg.Secret.natsUser()
		if err != nil {
			return nil, err
		}
		opts.Nkeys = []*server.NkeyUser{{Nkey: pub}}
		user, password := cfg.Secret.routeUser()
		opts.Cluster.Username, opts.Cluster.Password = user, password
		routeUser = url.UserPassword(user, password)
	}
	if cfg.ClusterListen != "" || len(cfg.Routes) > 0 {
		// JetStream refuses a cluster listener without routes: a server
		// cannot know its peers otherwise. Listing itself is harmless, so
		// every node can be given the same list.
		if cfg.ClusterListen == "" || len(cfg.Routes) == 0 {
			return nil, errors.New("ha: a routed nats server needs both a cluster listen address and routes")
		}
		// A standalone server has no Raft peers to elect among: only a
		// routed one needs the faster timers (raftimers.go).
		if err := applyRaftTimers(); err != nil {
			return nil, err
		}
		opts.Cluster.Name = cfg.ClusterName
		if opts.Cluster.Name == "" {
			opts.Cluster.Name = "unilog"
		}
		if opts.Cluster.Host, opts.Cluster.Port, err = splitListen(cfg.ClusterListen); err != nil {
			return nil, fmt.Errorf("ha: nats cluster listen %q: %w", cfg.ClusterListen, err)
		}
		for _, r := range cfg.Routes {
			u, err := url.Parse(r)
			if err != nil || u.Scheme != "nats-route" || u.Port() == "" {
				return nil, fmt.Errorf("ha: nats route %q: want nats-route://host:port", r)
			}
			// The password goes in the URL only here: the route list a
			// user gives stays free of it.
			u.User = routeUser
			opts.Routes = append(opts.Routes, u)
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("ha: nats server: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = logrus.StandardLogger()
	}
	fatal := make(chan string, 1)
	ns.SetLoggerV2(natsLogger{l: log.WithField("component", "nats"), fatal: fatal}, false, false, false)
	go ns.Start()
	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	// Poll briefly so a fatal start-up error (a port in use) is reported
	// at once instead of after the whole timeout.
	for deadline := time.Now().Add(timeout); !ns.ReadyForConnections(50 * time.Millisecond); {
		select {
		case msg := <-fatal:
			ns.Shutdown()
			return nil, fmt.Errorf("ha: nats server: %s", msg)
		default:
		}
		if time.Now().After(deadline) {
			ns.Shutdown()
			return nil, fmt.Errorf("ha: nats server on %s not ready within %s", cfg.Listen, timeout)
		}
	}
	return &Server{ns: ns}, nil
}

// prepareStoreDir creates JetStream's store directory under dir and makes
// sure it can be written. JetStream checks this itself, but reports a
// directory it may not look into as "storage directory is not a
// directory" and one it may not write to as "not writable", without the
// path or the reason; this says which path and why (permission denied, a
// file where a directory should be).
func prepareStoreDir(dir string) error {
	js := filepath.Join(dir, "jetstream")
	if err := os.MkdirAll(js, 0o750); err != nil {
		return fmt.Errorf("ha: nats store directory %s: %w", js, err)
	}
	probe, err := os.CreateTemp(js, ".probe-")
	if err != nil {
		return fmt.Errorf("ha: nats store directory %s is not writable: %w", js, err)
	}
	probe.Close()
	if err := os.Remove(probe.Name()); err != nil {
		return fmt.Errorf("ha: nats store directory %s: %w", js, err)
	}
	return nil
}

// splitListen maps port 0 to the server's "pick a free port" value.
func splitListen(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", ps)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

// ClientURL is the nats:// URL clients reach the server at.
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// ClusterAddr is the route listener address, or "" when standalone.
func (s *Server) ClusterAddr() string {
	if a := s.ns.ClusterAddr(); a != nil {
		return a.String()
	}
	return ""
}

// Shutdown stops the server and waits for it. A routed server first
// hands the leadership of every Raft group it leads (the buckets' streams,
// JetStream's meta group) to its peers, as nats-server's lame duck mode
// does: a leader that just vanishes is replaced only after its peers'
// election timeout (0.5 to 1 s embedded, raftimers.go), during which the
// streams it led take no writes, lease renewals included.
func (s *Server) Shutdown() {
	if s.ns.ClusterAddr() != nil {
		s.ns.LameDuckShutdown()
	} else {
		s.ns.Shutdown()
	}
	s.ns.WaitForShutdown()
}

// natsLogger routes the server's log through logrus. Notices go to debug:
// the server announces every listener and JetStream detail at start-up,
// which would drown the broker's own lines. Fatal messages, which the
// server's own logger would exit on, are also handed to StartServer.
type natsLogger struct {
	l     logrus.FieldLogger
	fatal chan<- string
}

func (n natsLogger) Noticef(format string, v ...any) { n.l.Debugf(format, v...) }
func (n natsLogger) Warnf(format string, v ...any)   { n.l.Warnf(format, v...) }
func (n natsLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	n.l.Error(msg)
	select {
	case n.fatal <- msg:
	default:
	}
}
func (n natsLogger) Errorf(format string, v ...any) { n.l.Errorf(format, v...) }
func (n natsLogger) Debugf(format string, v ...any) { n.l.Debugf(format, v...) }
func (n natsLogger) Tracef(format string, v ...any) { n.l.Debugf(format, v...) }
