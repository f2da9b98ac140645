package replication

import (
	"context"
	"crypto/hmac"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/commitlog"
)

// ErrNotEnoughReplicas is returned by CheckInSync and WaitReplicated when
// fewer than MinInSync replicas are in sync.
var ErrNotEnoughReplicas = errors.New("replication: not enough in-sync replicas")

// ErrFenced is returned once the leader learned of a newer epoch.
var ErrFenced = errors.New("replication: fenced by a newer leader epoch")

// LeaderLog is what a leader reads from its commit log.
type LeaderLog interface {
	ReadRaw(dst []byte, phys int64, max int) ([]byte, int64, error)
	WriteOffset() int64
	MinOffset() int64
	Appended() <-chan struct{}
}

// LeaderEpochs is the leader's epoch file.
type LeaderEpochs interface {
	EndOffset(epoch, logEnd int64) (known, end int64)
	List() []commitlog.EpochStart
}

// LeaderConfig configures a Leader. Zero durations take the defaults.
type LeaderConfig struct {
	Log    LeaderLog
	Epochs LeaderEpochs
	// Epoch is this leader's epoch; Epochs must already hold it, starting
	// at the log's end when the node became leader.
	Epoch int64
	// FileSize is the commit log's file size; followers must use the same.
	FileSize int64
	// Offsets returns every partition's next offset at a position of the
	// log (dispatcher OffsetsAt). A follower that restarts its log at the
	// leader's MinOffset starts its partitions there, so one none of whose
	// records remain does not count from 0 again. Nil sends none (a log
	// without consume queues).
	Offsets func(at int64) []commitlog.PartitionOffset
	// MinInSync is how many replicas, the leader among them, must be in
	// sync for CheckInSync and WaitReplicated: Kafka's
	// min.insync.replicas. 0 and 1 both require the leader alone.
	MinInSync int
	// Durable counts a follower's flushed end instead of its write end.
	Durable bool
	// MaxLag is how long a follower may go without catching up and stay in
	// sync (default 10s).
	MaxLag time.Duration
	// Heartbeat is the idle interval between empty Data frames (default 250ms).
	Heartbeat time.Duration
	// OnFenced is called once when a follower knows a newer epoch.
	OnFenced func(newer int64)
	// PublishInSync, if set, stores the in-sync set (follower nodes,
	// sorted) where the group elects its next leader, returning once it is
	// stored. A follower that leaves the set keeps bounding the high
	// watermark until a set without it was published (see the package
	// doc). Nil: the set changes take effect at once.
	PublishInSync func(ctx context.Context, nodes []string) error
	// Key is what a follower must prove it holds (HMAC challenge and
	// response, both ways, see the package doc) before it reads a byte of
	// the log; followers need the same one. unilog derives it from the
	// cluster secret. An empty key is still a key, one everybody holds.
	Key []byte
	// TLS, if set, is the listener's config (internal/tlsconf): with a
	// client CA the stream is mutual TLS and, with VerifyConnection from
	// tlsconf.RequirePeer, open to the cluster's own nodes only.
	TLS    *tls.Config
	Logger logrus.FieldLogger
}

// FollowerStatus describes one follower as the leader sees it.
type FollowerStatus struct {
	Node      string `json:"node"`
	End       int64  `json:"end"`
	Flushed   int64  `json:"flushed"`
	InSync    bool   `json:"in_sync"`
	Connected bool   `json:"connected"`
	LagBytes  int64  `json:"lag_bytes"`
}

// Leader serves a replica group's followers.
type Leader struct {
	cfg LeaderConfig
	log logrus.FieldLogger

	mu      sync.Mutex
	set     *inSyncSet          // the followers, the in-sync set and the high watermark
	conns   map[string]net.Conn // each follower's current session
	changed chan struct{}
	fenced  bool
	closed  bool
	ln      net.Listener
	wg      sync.WaitGroup
	stop    chan struct{}

	// publishKick wakes the publisher of the in-sync set.
	publishKick   chan struct{}
	publishCtx    context.Context
	cancelPublish context.CancelFunc
}

// NewLeader returns a Leader; Serve starts it.
func NewLeader(cfg LeaderConfig) *Leader {
	if cfg.MaxLag <= 0 {
		cfg.MaxLag = 10 * time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 250 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.StandardLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Leader{
		cfg:           cfg,
		log:           cfg.Logger.WithFields(logrus.Fields{"component": "replication", "role": "leader", "epoch": cfg.Epoch}),
		set:           newInSyncSet(cfg.MaxLag, cfg.Durable, cfg.MinInSync, cfg.PublishInSync != nil),
		conns:         make(map[string]net.Conn),
		changed:       make(chan struct{}),
		stop:          make(chan struct{}),
		publishKick:   make(chan struct{}, 1),
		publishCtx:    ctx,
		cancelPublish: cancel,
	}
}

// Serve accepts followers on ln (with TLS when configured) until Close.
func (l *Leader) Serve(ln net.Listener) error {
	if l.cfg.TLS != nil {
		ln = tls.NewListener(ln, l.cfg.TLS)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	l.ln = ln
	l.wg.Add(3) // the lag checker, the publisher and this accept loop
	l.mu.Unlock()
	go l.checkLag()
	go l.publish()
	addr := ln.Addr().String()
	for {
		c, err := ln.Accept()
		if err != nil {
			l.wg.Done()
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("replication: accept: %w", err)
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			err := l.session(c, addr)
			switch {
			case errors.Is(err, ErrUnauthenticated):
				l.log.WithError(err).WithField("peer", c.RemoteAddr().String()).Warn("refused a follower without the replication key")
			case err != nil && !errors.Is(err, net.ErrClosed):
				l.log.WithError(err).WithField("peer", c.RemoteAddr().String()).Info("follower session ended")
			}
		}()
	}
}

// Close stops serving and disconnects every follower.
func (l *Leader) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	close(l.stop)
	l.cancelPublish()
	if l.ln != nil {
		l.ln.Close()
	}
	for _, c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// HighWatermark is the physical offset below which every record is on the
// leader and on every in-sync follower.
func (l *Leader) HighWatermark() int64 {
	end := l.cfg.Log.WriteOffset()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.set.highWatermark(end)
}

// Changed returns a channel closed the next time the followers' part of
// the high watermark or the in-sync set changes.
func (l *Leader) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Followers reports every follower seen, sorted by node.
func (l *Leader) Followers() []FollowerStatus {
	end := l.cfg.Log.WriteOffset()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.set.status(end)
}

// InSync lists the in-sync followers, sorted.
func (l *Leader) InSync() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.set.members()
}

// CheckInSync is WaitReplicated's check without the wait: ErrFenced once
// deposed, ErrNotEnoughReplicas when fewer than MinInSync replicas (the
// leader and its in-sync followers) are in sync. A write that must not be stored unless it can be replicated (an
// acks=-1 produce, Kafka's min.insync.replicas) asks before its append.
func (l *Leader) CheckInSync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checkLocked()
}

func (l *Leader) checkLocked() error {
	if l.fenced {
		return ErrFenced
	}
	return l.set.enough()
}

// WaitReplicated blocks until the high watermark reaches end. It returns
// ErrNotEnoughReplicas when fewer than MinInSync replicas are in sync, at
// the start or while it waits, and ErrFenced once deposed.
func (l *Leader) WaitReplicated(ctx context.Context, end int64) error {
	for {
		l.mu.Lock()
		ch, err, hw := l.changed, l.checkLocked(), l.set.hw
		l.mu.Unlock()
		switch {
		case err != nil:
			return err
		case hw >= end:
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-l.stop:
			return net.ErrClosed
		}
	}
}

// changedLocked wakes the waiters on the high watermark and the in-sync
// set, and the publisher when the set changed.
func (l *Leader) changedLocked() {
	if l.set.unpublished() {
		select {
		case l.publishKick <- struct{}{}:
		default:
		}
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// ack records a follower's acknowledgement.
func (l *Leader) ack(node string, end, flushed int64) {
	now := time.Now()
	leaderEnd := l.cfg.Log.WriteOffset()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.set.ack(node, end, flushed, leaderEnd, now) {
		l.log.WithField("follower", node).Info("follower in sync")
	}
	l.changedLocked()
}

// checkLag drops followers that have not caught up within MaxLag.
func (l *Leader) checkLag() {
	defer l.wg.Done()
	t := time.NewTicker(l.cfg.MaxLag / 4)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			l.mu.Lock()
			if dropped := l.set.lag(now); len(dropped) > 0 {
				for _, node := range dropped {
					l.log.WithFields(logrus.Fields{"follower": node, "end": l.set.peers[node].end}).Warn("follower fell out of sync")
				}
				l.changedLocked()
			}
			l.mu.Unlock()
		}
	}
}

func (l *Leader) fence(newer int64) {
	l.mu.Lock()
	first := !l.fenced
	l.fenced = true
	l.changedLocked()
	l.mu.Unlock()
	if first {
		l.log.WithField("newer_epoch", newer).Warn("a follower knows a newer leader epoch: fenced")
		if l.cfg.OnFenced != nil {
			l.cfg.OnFenced(newer)
		}
	}
}

// session serves one follower connection accepted on addr.
func (l *Leader) session(c net.Conn, addr string) error {
	defer c.Close()
	fr := &frameReader{r: c, max: 1 << 16}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := fr.next()
	if err != nil {
		return err
	}
	if f.typ != frameHello {
		return fmt.Errorf("%w: first frame of type %d", ErrProtocol, f.typ)
	}
	h, err := decodeHello(f.payload)
	if err != nil {
		return err
	}
	// Nothing the Hello says counts before the follower proved itself:
	// its epoch could fence this leader.
	if err := l.authenticate(c, fr, h, addr); err != nil {
		return err
	}
	if f.epoch > l.cfg.Epoch {
		l.fence(f.epoch)
		return fmt.Errorf("follower %s knows epoch %d: %w", h.node, f.epoch, ErrFenced)
	}
	truncateTo := int64(-1)
	if h.lastEpoch >= 0 {
		_, truncateTo = l.cfg.Epochs.EndOffset(h.lastEpoch, l.cfg.Log.WriteOffset())
	}
	leaderMin, parts := l.offsetsAtMin()
	start := appendFrame(nil, frameStart, l.cfg.Epoch, int64s(truncateTo, leaderMin, l.cfg.FileSize))
	if err := l.write(c, appendOffsets(start, l.cfg.Epoch, leaderMin, parts)); err != nil {
		return err
	}
	// The follower cuts its log and says where it now ends.
	f, err = fr.next()
	if err != nil {
		return err
	}
	var end, flushed int64
	if f.typ != frameAck {
		return fmt.Errorf("%w: frame of type %d after start", ErrProtocol, f.typ)
	}
	if err := readInt64s(f.payload, &end, &flushed); err != nil {
		return err
	}
	c.SetReadDeadline(time.Time{})
	if !l.join(h.node, c, end, flushed) {
		return net.ErrClosed
	}
	defer l.leave(h.node, c)
	l.log.WithFields(logrus.Fields{"follower": h.node, "from": end, "its_epoch": h.lastEpoch}).Info("follower connected")

	errc := make(chan error, 1)
	go func() { errc <- l.readAcks(fr, h.node) }()
	serr := l.send(c, end)
	c.Close()
	if rerr := <-errc; serr == nil {
		serr = rerr
	}
	return serr
}

// authenticate proves this leader to the follower over its Hello's nonce
// and checks the follower's proof over a nonce of its own. The Auth frames
// carry epoch 0: the epoch is told only to a member.
func (l *Leader) authenticate(c net.Conn, fr *frameReader, h hello, addr string) error {
	n, err := newNonce()
	if err != nil {
		return err
	}
	if err := l.write(c, encodeLeaderAuth(0, n, leaderProof(l.cfg.Key, h.nonce, n, addr))); err != nil {
		return err
	}
	f, err := fr.next()
	if err != nil {
		// A follower that found this leader's proof wrong hangs up here.
		return fmt.Errorf("%w: read follower auth: %w", ErrUnauthenticated, err)
	}
	proof, err := decodeFollowerAuth(f)
	if err != nil {
		return err
	}
	if !hmac.Equal(proof, followerProof(l.cfg.Key, n, h.nonce, h.node)) {
		return fmt.Errorf("follower %q: %w", h.node, ErrUnauthenticated)
	}
	return nil
}

// offsetsAtMin returns the log's MinOffset and the partitions' next
// offsets there, taken again if retention moved the minimum meanwhile.
func (l *Leader) offsetsAtMin() (int64, []commitlog.PartitionOffset) {
	for {
		at := l.cfg.Log.MinOffset()
		if l.cfg.Offsets == nil {
			return at, nil
		}
		parts := l.cfg.Offsets(at)
		if l.cfg.Log.MinOffset() == at {
			return at, parts
		}
	}
}

func (l *Leader) join(node string, c net.Conn, end, flushed int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	if old := l.conns[node]; old != nil {
		old.Close() // a reconnect replaces the old session
	}
	l.conns[node] = c
	l.set.connect(node, end, flushed)
	return true
}

func (l *Leader) leave(node string, c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[node] != c {
		return
	}
	delete(l.conns, node)
	if l.set.disconnect(node) {
		l.log.WithField("follower", node).Warn("follower disconnected: out of sync")
		l.changedLocked()
	}
}

func (l *Leader) readAcks(fr *frameReader, node string) error {
	for {
		f, err := fr.next()
		if err != nil {
			return err
		}
		switch f.typ {
		case frameAck:
			var end, flushed int64
			if err := readInt64s(f.payload, &end, &flushed); err != nil {
				return err
			}
			l.ack(node, end, flushed)
		case frameFenced:
			l.fence(f.epoch)
			return ErrFenced
		default:
			return fmt.Errorf("%w: frame of type %d from a follower", ErrProtocol, f.typ)
		}
	}
}

// send streams the log from pos, and heartbeats while idle.
func (l *Leader) send(c net.Conn, pos int64) error {
	hb := time.NewTicker(l.cfg.Heartbeat)
	defer hb.Stop()
	var buf, out []byte
	sentHW := int64(-1)
	for {
		appended := l.cfg.Log.Appended()
		changed := l.Changed()
		recEpoch, boundary := l.epochAt(pos)
		var chunk []byte
		next := pos
		if pos < l.cfg.Log.WriteOffset() {
			var err error
			chunk, next, err = l.cfg.Log.ReadRaw(buf[:0], pos, int(min(MaxChunk, boundary-pos)))
			if err != nil {
				return fmt.Errorf("replication: read the log at %d: %w", pos, err)
			}
			buf = chunk
		} else if sentHW >= 0 {
			// Idle: a frame only for a new high watermark or a heartbeat
			// (every ack changes the followers' state; most leave it be).
			// The first frame goes at once, even empty: the follower's
			// ack to it puts a caught-up follower in sync, which a new
			// leader's acks=all writes may wait for, without a heartbeat
			// interval's delay.
			select {
			case <-appended:
				continue
			case <-changed:
				if l.HighWatermark() == sentHW {
					continue
				}
			case <-hb.C:
			case <-l.stop:
				return net.ErrClosed
			}
		}
		sentHW = l.HighWatermark()
		out = appendFrame(out[:0], frameData, l.cfg.Epoch, int64s(recEpoch, sentHW, pos), chunk)
		if err := l.write(c, out); err != nil {
			return err
		}
		pos = next
	}
}

// epochAt returns the epoch that wrote pos (-1 before the first one: a
// log written before it was replicated) and where the next one starts.
func (l *Leader) epochAt(pos int64) (epoch, boundary int64) {
	epoch, boundary = -1, math.MaxInt64
	list := l.cfg.Epochs.List()
	i := sort.Search(len(list), func(i int) bool { return list[i].Start > pos })
	if i > 0 {
		epoch = list[i-1].Epoch
	}
	if i < len(list) {
		boundary = list[i].Start
	}
	return epoch, boundary
}

func (l *Leader) write(c net.Conn, b []byte) error {
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(b); err != nil {
		return fmt.Errorf("replication: write to %s: %w", c.RemoteAddr(), err)
	}
	return nil
}
