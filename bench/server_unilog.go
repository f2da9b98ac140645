package bench

import (
	"io"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/bench/kafkalayout"
	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/store"
)

type unilogServer struct{ b *broker.Broker }

// startUnilog starts unilog's broker on a free loopback port, over its
// unified log or, for SystemUnilogKafkaLayout, over the Kafka layout: async
// flushes that layout every commitlog.DefaultFlushInterval like the unified
// log, sync fsyncs each partition's append (flush.messages=1).
func startUnilog(cfg ServerConfig) (Server, error) {
	mode, err := commitlog.ParseFlushMode(cfg.Flush)
	if err != nil {
		return nil, err
	}
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	// The admin port serves the broker's own produce times (broker_time.go)
	// to a parent process.
	bcfg := broker.Config{DataDir: cfg.Dir, Listen: "127.0.0.1:0", Admin: "127.0.0.1:0", Logger: logger}
	if cfg.System != SystemUnilogKafkaLayout {
		b, err := broker.Open(bcfg, store.Options{CommitLog: commitlog.Options{FlushMode: mode, FileSize: cfg.FileSize}})
		if err != nil {
			return nil, err
		}
		return unilogServer{b}, nil
	}
	opts := kafkalayout.Options{Dir: filepath.Join(cfg.Dir, "kafkalayout"), Flush: kafkalayout.FlushInterval, FlushInterval: commitlog.DefaultFlushInterval}
	if mode == commitlog.FlushSync {
		opts.Flush = kafkalayout.FlushSync
	}
	if cfg.FileSize > 0 {
		opts.SegmentBytes = cfg.FileSize
	}
	kl, err := kafkalayout.Open(opts)
	if err != nil {
		return nil, err
	}
	// Start closes the storage when it fails.
	bcfg.Storage = newKafkaLayoutStorage(kl, mode == commitlog.FlushSync)
	b, err := broker.Start(bcfg)
	if err != nil {
		return nil, err
	}
	return unilogServer{b}, nil
}

func (s unilogServer) Addr() string                { return s.b.Addr() }
func (s unilogServer) adminAddr() string           { return s.b.AdminAddr() }
func (s unilogServer) CPU() (time.Duration, error) { return selfCPU() }
func (s unilogServer) CPUSource() string           { return CPUSelf }
func (s unilogServer) Close() error                { return s.b.Close() }
