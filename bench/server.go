package bench

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The systems bench compare runs, each started by the benchmark itself on
// loopback in a fresh directory.
const (
	SystemUnilog    = "unilog"
	SystemJetStream = "jetstream"
	// SystemUnilogKafkaLayout is unilog's broker front end over the Kafka
	// layout of bench/kafkalayout (through broker.Config.Storage), so that
	// the layouts are compared end to end and not only below the protocol.
	SystemUnilogKafkaLayout = "unilog-kafka-layout"
	// SystemKfake is franz-go's in-memory Kafka, the floor without storage.
	// It has no flush setting: compare runs it once per partition count,
	// with the first flush, and reports its flush as "memory".
	SystemKfake = "kfake"
)

// Systems lists the names StartServer accepts.
var Systems = []string{SystemUnilog, SystemJetStream, SystemUnilogKafkaLayout, SystemKfake}

// Flush settings of a system under test: async is each system's background
// flush (unilog every 500 ms, JetStream its default sync_interval of 2 min),
// sync flushes before acknowledging (unilog --flush sync with acks=-1,
// JetStream sync_interval: always).
var ServerFlushes = []string{"async", "sync"}

// ServerConfig is one system to start.
type ServerConfig struct {
	System   string
	Flush    string
	Dir      string
	FileSize int64 // unilog commit-log file size; 0: the broker's default
	// StopWait bounds a child's graceful shutdown before it is killed (0:
	// childStop). A benchmark that throws the data away may not want to
	// wait a minute for a layout's shutdown flush.
	StopWait time.Duration
}

func (c ServerConfig) validate() error {
	if !slices.Contains(Systems, c.System) {
		return fmt.Errorf("bench: unknown system %q (want one of %v)", c.System, Systems)
	}
	if !slices.Contains(ServerFlushes, c.Flush) {
		return fmt.Errorf("bench: %s: flush %q: want async or sync", c.System, c.Flush)
	}
	if c.Dir == "" {
		return errors.New("bench: server: no directory")
	}
	return nil
}

// ServeArgs are the arguments after the executable that make `unilog bench
// serve` start this server in a child process.
func (c ServerConfig) ServeArgs() []string {
	return []string{"bench", "serve", "--system", c.System, "--flush", c.Flush, "--dir", c.Dir,
		"--file-size", strconv.FormatInt(c.FileSize, 10)}
}

// Server is a running system under test.
type Server interface {
	// Addr is where clients connect: a Kafka HOST:PORT or a nats:// URL.
	Addr() string
	// CPU is the CPU time the server has used so far; CPUSource says whose.
	CPU() (time.Duration, error)
	CPUSource() string
	Close() error
}

// StartServer starts a system in this process.
func StartServer(cfg ServerConfig) (Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: server: %w", err)
	}
	switch cfg.System {
	case SystemJetStream:
		return startJetStream(cfg)
	case SystemKfake:
		return startKfake()
	}
	return startUnilog(cfg)
}

// ServeReady begins the line `unilog bench serve` prints once its server
// accepts connections (ServeLine): the address follows, then, for a server
// with an admin port, serveAdmin and that port's address.
const ServeReady = "serving "

const serveAdmin = " admin "

// ServeLine is the line `unilog bench serve` prints for srv, ready.
func ServeLine(srv Server) string {
	if a, ok := srv.(adminServer); ok {
		return ServeReady + srv.Addr() + serveAdmin + a.adminAddr()
	}
	return ServeReady + srv.Addr()
}

// adminServer is a server with an HTTP admin port serving /metrics.
type adminServer interface{ adminAddr() string }

// childStop bounds a child's graceful shutdown before it is killed.
const childStop = time.Minute

type childServer struct {
	cmd      *exec.Cmd
	addr     string
	admin    string // the child's admin address, or empty
	stopWait time.Duration
}

// StartChild starts a system as a child process, exe with cfg.ServeArgs(),
// and waits for its ServeReady line: the broker's CPU is then its own,
// read from /proc. The child is killed if this process dies.
func StartChild(exe string, cfg ServerConfig) (Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, cfg.ServeArgs()...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", cfg.System, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start %s: %w", cfg.System, err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), ServeReady)
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("bench: %s did not start (first line %q): %v", cfg.System, line, err)
	}
	go io.Copy(io.Discard, out)
	addr, admin, _ := strings.Cut(addr, serveAdmin)
	return &childServer{cmd: cmd, addr: addr, admin: admin, stopWait: cmp.Or(cfg.StopWait, childStop)}, nil
}

func (c *childServer) Addr() string                { return c.addr }
func (c *childServer) CPU() (time.Duration, error) { return procCPU(c.cmd.Process.Pid) }
func (c *childServer) CPUSource() string           { return CPUChild }

// Close asks the child to stop as an operator would (SIGTERM: flush, clean
// checkpoint) and kills it if that takes longer than its stop wait.
func (c *childServer) Close() error {
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("bench: stop child: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("bench: child: %w", err)
		}
		return nil
	case <-time.After(c.stopWait):
		c.cmd.Process.Kill()
		<-done
		return fmt.Errorf("bench: child did not stop within %v; killed", c.stopWait)
	}
}
