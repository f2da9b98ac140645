package bench

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// jsReady bounds the embedded server's start.
const jsReady = 30 * time.Second

type jetStreamServer struct{ s *server.Server }

// startJetStream embeds nats-server with JetStream on file storage in
// cfg.Dir, on a free loopback port.
func startJetStream(cfg ServerConfig) (Server, error) {
	s, err := server.NewServer(&server.Options{
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   cfg.Dir,
		SyncAlways: cfg.Flush == "sync",
		NoLog:      true,
		NoSigs:     true,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: jetstream: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(jsReady) {
		s.Shutdown()
		return nil, fmt.Errorf("bench: jetstream not ready within %v", jsReady)
	}
	return jetStreamServer{s}, nil
}

func (j jetStreamServer) Addr() string                { return j.s.ClientURL() }
func (j jetStreamServer) CPU() (time.Duration, error) { return selfCPU() }
func (j jetStreamServer) CPUSource() string           { return CPUSelf }
func (j jetStreamServer) Close() error {
	j.s.Shutdown()
	j.s.WaitForShutdown()
	return nil
}
