package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/group"
	"github.com/unilog/unilog/producerstate"
	"github.com/unilog/unilog/store"
	"github.com/unilog/unilog/txn"
)

// Broker is one Kafka-protocol broker serving the unified log.
type Broker struct {
	cfg     Config
	log     logrus.FieldLogger
	meta    MetadataStore
	st      Storage
	metrics *metrics
	pids    *producerstate.IDs
	// fetchSessions are the incremental fetch sessions (KIP-227).
	fetchSessions *fetchSessions
	// now is time.Now; tests move a fetch past its deadline with it.
	now func() time.Time
	guards
	// groups is the group coordinator, set once the committed offsets are
	// loaded (the commit log's retention floor reads it before).
	groups atomic.Pointer[group.Coordinator]
	// txns is the transaction coordinator, set once producer state is
	// loaded (finishing an interrupted transaction writes markers).
	txns atomic.Pointer[txn.Coordinator]
	// txnPeers reach other groups' leaders with transaction markers.
	txnPeers txnPeers
	// following is set while this node replicates its group's leader:
	// nothing may append to the local log then (Demote, Promote).
	following atomic.Bool
	// roleUnknown is set from Start until the first Promote or Demote
	// when Config.AwaitRole is: the node neither follows nor leads yet.
	roleUnknown atomic.Bool

	ln      net.Listener
	adminLn net.Listener
	admin   *http.Server
	// adminMux is the admin server's routes, which HandleAdmin extends.
	adminMux *http.ServeMux

	// topicMu is held shared while a request appends, exclusively while
	// topics are created, deleted or grown, so a delete never interleaves
	// with an append to the topic it removes.
	topicMu sync.RWMutex

	// appendMu is held while a produce request's batches are checked and
	// appended: the commit log serializes appends anyway, and one holder
	// may then lock all the request's partitions without lock ordering.
	appendMu sync.Mutex
	partsMu  sync.Mutex
	parts    partitionStates
	// producerChanges counts changes of idempotent-producer state, so the
	// snapshot is rewritten only when it would differ.
	producerChanges atomic.Int64
	snapMu          sync.Mutex
	// snapLen and snapRoom are the last producer-state snapshot's length
	// and, unless large, its bytes, reused by the next (snapshotRoom); snapMu.
	snapLen  int
	snapRoom []byte
	// replica is the producer state a follower rebuilds from its log.
	replica replicaProducers

	// closing is closed when Close starts: long polls return early and
	// connections stop reading new requests.
	closing   chan struct{}
	closeOnce sync.Once
	closeErr  error
	// stopAccepting closes the Kafka listener once (StopAccepting); lnErr
	// is what closing it returned.
	stopAccepting sync.Once
	lnErr         error

	connMu sync.Mutex
	conns  map[*conn]struct{}
	// perHost counts the open connections of each client address.
	perHost map[string]int
	connWG  sync.WaitGroup
	loopWG  sync.WaitGroup
	moves   moveRunner
}

type topicPartition struct {
	topic     string
	partition int32
}

// Open opens the data directory of cfg.DataDir for a broker: the topic
// metadata first (cfg.Metadata, or the file in DataDir), then the store
// over it (opts, with Dir, Live and a missing Logger filled in), and
// starts a broker serving them (Start), which closes both.
func Open(cfg Config, opts store.Options) (*Broker, error) { return open(cfg, opts, nil) }

// open is Open with start's wrap.
func open(cfg Config, opts store.Options, wrap func(Storage) Storage) (*Broker, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("broker: Config.DataDir is required")
	}
	if cfg.FS == nil && opts.FS != nil {
		cfg.FS = opts.FS
	}
	if cfg.Metadata == nil {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("broker: create data dir %s: %w", cfg.DataDir, err)
		}
		meta, err := openFileMetadata(cfg.DataDir, cfg.FS)
		if err != nil {
			return nil, err
		}
		cfg.Metadata = meta
	}
	opts.Dir, opts.Live = cfg.DataDir, Live(cfg.Metadata)
	if opts.Logger == nil {
		opts.Logger = cfg.Logger
	}
	cfg.Producers = PreloadProducers(cfg.DataDir, cfg.Metadata)
	st, err := store.Open(opts)
	if err != nil {
		cfg.Producers.Abandon()
		cfg.Metadata.Close()
		return nil, fmt.Errorf("broker: open storage: %w", err)
	}
	cfg.Storage = st
	return start(cfg, wrap)
}

// Live is the store's Options.Live over topic metadata: the TopicID the
// records of each existing topic carry.
func Live(meta MetadataStore) func(topic string) (store.TopicID, bool) {
	return func(topic string) (store.TopicID, bool) {
		t, ok := meta.Topic(topic)
		return t.RecordID(), ok
	}
}

// Start serves cfg.Storage and cfg.Metadata (the file in DataDir when
// nil): it listens on cfg.Listen and cfg.Admin and serves in the
// background until Close. The broker owns both from here on: it closes
// them on Close, and Start closes them when it fails.
func Start(cfg Config) (*Broker, error) { return start(cfg, nil) }

// start is Start with an optional wrap, which lets tests interpose on the
// storage (stall a wait, fail a flush) without a mock of the whole log.
func start(cfg Config, wrap func(Storage) Storage) (*Broker, error) {
	b, meta, err := newBroker(cfg, wrap)
	if err != nil {
		if cfg.Producers != nil {
			cfg.Producers.Abandon()
		}
		if meta != nil {
			meta.Close()
		}
		if cfg.Storage != nil {
			cfg.Storage.Close()
		}
		return nil, err
	}
	return b, nil
}

// newBroker is Start; on an error it returns the metadata it was using,
// for start to close.
func newBroker(cfg Config, wrap func(Storage) Storage) (_ *Broker, meta MetadataStore, err error) {
	cfg = cfg.withDefaults()
	meta = cfg.Metadata
	if cfg.Storage == nil {
		return nil, meta, errors.New("broker: Config.Storage is required")
	}
	if cfg.DataDir == "" {
		return nil, meta, errors.New("broker: Config.DataDir is required")
	}
	if err := cfg.validateLimits(); err != nil {
		return nil, meta, err
	}
	if err := cfg.Security.admitInterBroker(); err != nil {
		return nil, meta, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, meta, fmt.Errorf("broker: create data dir %s: %w", cfg.DataDir, err)
	}
	if meta == nil {
		if meta, err = openFileMetadata(cfg.DataDir, cfg.FS); err != nil {
			return nil, nil, err
		}
	}
	if err := ensureOffsetsTopic(meta); err != nil {
		return nil, meta, fmt.Errorf("broker: create %s: %w", offsetsTopic, err)
	}
	if err := ensureInternalTopic(meta, txnStateTopic, txn.DefaultPartitions); err != nil {
		return nil, meta, fmt.Errorf("broker: create %s: %w", txnStateTopic, err)
	}
	b := &Broker{
		cfg:     cfg,
		log:     cfg.Logger,
		meta:    meta,
		st:      cfg.Storage,
		parts:   make(partitionStates),
		closing: make(chan struct{}),
		conns:   make(map[*conn]struct{}),
		perHost: make(map[string]int),

		fetchSessions: newFetchSessions(maxFetchSessions, maxSessionPartitions),
		now:           time.Now,
	}
	b.pids = producerstate.NewIDs(meta)
	b.roleUnknown.Store(cfg.AwaitRole)
	// Before anything is loaded: until the coordinator has the committed
	// offsets this floor holds every file. The store's first retention
	// check comes a RetentionCheckInterval after its Open, which the
	// caller did just before.
	b.st.AddRetentionFloor(b.retentionFloor)
	b.st.SetLiveStart(b.liveStart)
	if err := b.openGroups(); err != nil {
		return nil, meta, err
	}
	if wrap != nil {
		b.st = wrap(b.st)
	}
	if err := b.loadProducers(); err != nil {
		return nil, meta, err
	}
	if err := b.openTxns(); err != nil {
		return nil, meta, err
	}
	b.metrics = newMetrics(b)
	b.initGuards()
	if b.ln, err = listen(cfg.Listen, cfg.Security.TLS); err != nil {
		return nil, meta, fmt.Errorf("broker: listen %s: %w", cfg.Listen, err)
	}
	if cfg.Admin != "" {
		if b.adminLn, err = listen(cfg.Admin, cfg.Security.AdminTLS); err != nil {
			b.ln.Close()
			return nil, meta, fmt.Errorf("broker: listen admin %s: %w", cfg.Admin, err)
		}
		b.admin = &http.Server{Handler: b.adminHandler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: httpErrorLog(b.log)}
		b.loopWG.Add(1)
		go func() {
			defer b.loopWG.Done()
			if err := b.admin.Serve(b.adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				b.log.WithError(err).Error("admin server stopped")
			}
		}()
	}
	b.loopWG.Add(1)
	go b.acceptLoop()
	b.every(producerSnapshotInterval, b.snapshotProducersIfChanged())
	b.every(replicaCatchUpInterval, b.catchUpReplica)
	b.every(topicRetentionInterval, b.applyTopicRetention)
	if cfg.Cluster != nil && cfg.Moves != nil {
		b.every(moveCheckInterval, b.checkMoves)
	}
	b.every(defaultCompactInterval, b.compactTxns)
	b.log.WithFields(logrus.Fields{"listen": b.Addr(), "admin": b.AdminAddr(), "data_dir": cfg.DataDir}).Info("broker started")
	return b, nil, nil
}

// Addr is the address the Kafka listener is bound to.
func (b *Broker) Addr() string { return b.ln.Addr().String() }

// AdminAddr is the admin HTTP address, or "" when disabled.
func (b *Broker) AdminAddr() string {
	if b.adminLn == nil {
		return ""
	}
	return b.adminLn.Addr().String()
}

func (b *Broker) acceptLoop() {
	defer b.loopWG.Done()
	for {
		nc, err := b.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return // StopAccepting, the only closer of the listener
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			b.log.WithError(err).Error("accept failed, listener stopped")
			return
		}
		c, refused := b.register(nc)
		if refused != "" {
			b.log.WithFields(logrus.Fields{"remote": nc.RemoteAddr().String(), "max_connections": b.cfg.MaxConnections, "max_connections_per_ip": b.cfg.MaxConnectionsPerIP}).Warn("connection refused: " + refused)
			nc.Close()
			continue
		}
		go c.serve()
	}
}

// register admits a connection, or says why not.
func (b *Broker) register(nc net.Conn) (*conn, string) {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	select {
	case <-b.closing:
		return nil, "broker closing"
	default:
	}
	if len(b.conns) >= b.cfg.MaxConnections {
		return nil, "too many connections"
	}
	c := newConn(b, nc)
	if b.perHost[c.host] >= b.cfg.MaxConnectionsPerIP {
		return nil, "too many connections from its address"
	}
	b.perHost[c.host]++
	b.conns[c] = struct{}{}
	b.connWG.Add(1)
	b.metrics.connections.Inc()
	return c, ""
}

func (b *Broker) unregister(c *conn) {
	b.connMu.Lock()
	delete(b.conns, c)
	if b.perHost[c.host]--; b.perHost[c.host] == 0 {
		delete(b.perHost, c.host)
	}
	b.connMu.Unlock()
	b.metrics.connections.Dec()
	b.connWG.Done()
}

// StopAccepting closes the Kafka listener: a broker on its way down
// refuses new connections, and a client's dial fails and it asks another
// broker, instead of having them accepted and then closed unanswered when
// Close interrupts every connection. (franz-go takes an EOF on a
// connection's first read for a configuration error, SASL missing, and
// fails the records it was sending rather than retrying them.) Open
// connections are served until Close. A leader calls it before handing its
// lease over, during which its clients move to the new leader.
func (b *Broker) StopAccepting() {
	b.stopAccepting.Do(func() { b.lnErr = b.ln.Close() })
}

// Close stops accepting, lets every in-flight request finish (long polls
// return what they have), then flushes and closes storage with a clean
// checkpoint.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.StopAccepting()
		b.connMu.Lock()
		close(b.closing)
		for c := range b.conns {
			c.interruptRead()
		}
		b.connMu.Unlock()
		errs := []error{b.lnErr}
		b.connWG.Wait()
		if b.admin != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs = append(errs, b.admin.Shutdown(ctx))
			cancel()
		}
		b.loopWG.Wait()
		// Transactions first: finishing one commits offsets to groups.
		b.closeTxns()
		b.txnPeers.close()
		b.closeGroups()
		// Nothing appends any more: the snapshot covers the whole log and
		// the next start replays nothing.
		if err := b.snapshotProducers(); err != nil {
			b.log.WithError(err).Warn("producer-state snapshot failed; the next start reads the whole log")
		}
		errs = append(errs, b.st.Close(), b.meta.Close())
		b.closeErr = errors.Join(errs...)
		b.log.WithField("data_dir", b.cfg.DataDir).Info("broker stopped")
	})
	return b.closeErr
}

// forgetTopic drops the produce state of a deleted topic.
func (b *Broker) forgetTopic(topic string) {
	b.partsMu.Lock()
	defer b.partsMu.Unlock()
	delete(b.parts, topic)
	b.producerChanges.Add(1)
	if b.metrics != nil {
		b.metrics.topicFetched.DeleteLabelValues(topic)
	}
}

// every runs fn every d on a goroutine of its own until Close.
func (b *Broker) every(d time.Duration, fn func()) {
	b.loopWG.Add(1)
	go func() {
		defer b.loopWG.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-b.closing:
				return
			case <-t.C:
				fn()
			}
		}
	}()
}
