package bench

import (
	"errors"
	"io"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/bench/kafkalayout"
	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/commitlog"
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
	bcfg := broker.Config{
		DataDir:  cfg.Dir,
		Listen:   "127.0.0.1:0",
		Flush:    mode,
		FileSize: cfg.FileSize,
		Logger:   logger,
	}
	var kl *kafkalayout.Log
	if cfg.System == SystemUnilogKafkaLayout {
		opts := kafkalayout.Options{Dir: filepath.Join(cfg.Dir, "kafkalayout"), Flush: kafkalayout.FlushInterval, FlushInterval: commitlog.DefaultFlushInterval}
		if mode == commitlog.FlushSync {
			opts.Flush = kafkalayout.FlushSync
		}
		if cfg.FileSize > 0 {
			opts.SegmentBytes = cfg.FileSize
		}
		if kl, err = kafkalayout.Open(opts); err != nil {
			return nil, err
		}
		bcfg.Storage = newKafkaLayoutStorage(kl)
	}
	b, err := broker.Start(bcfg)
	if err != nil {
		// Start may have closed the storage already (see broker.Config).
		if kl != nil {
			if cerr := kl.Close(); cerr != nil && !errors.Is(cerr, kafkalayout.ErrClosed) {
				err = errors.Join(err, cerr)
			}
		}
		return nil, err
	}
	return unilogServer{b}, nil
}

func (s unilogServer) Addr() string                { return s.b.Addr() }
func (s unilogServer) CPU() (time.Duration, error) { return selfCPU() }
func (s unilogServer) CPUSource() string           { return CPUSelf }
func (s unilogServer) Close() error                { return s.b.Close() }
