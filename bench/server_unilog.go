package bench

import (
	"io"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/commitlog"
)

type unilogServer struct{ b *broker.Broker }

func startUnilog(cfg ServerConfig) (Server, error) {
	mode, err := commitlog.ParseFlushMode(cfg.Flush)
	if err != nil {
		return nil, err
	}
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	b, err := broker.Start(broker.Config{
		DataDir:  cfg.Dir,
		Listen:   "127.0.0.1:0",
		Flush:    mode,
		FileSize: cfg.FileSize,
		Logger:   logger,
	})
	if err != nil {
		return nil, err
	}
	return unilogServer{b}, nil
}

func (s unilogServer) Addr() string                { return s.b.Addr() }
func (s unilogServer) CPU() (time.Duration, error) { return selfCPU() }
func (s unilogServer) CPUSource() string           { return CPUSelf }
func (s unilogServer) Close() error                { return s.b.Close() }
