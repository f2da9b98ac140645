package replication

import (
	"context"
	"crypto/hmac"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/commitlog"
)

// ErrStaleLeader is returned by Follow when the peer leads an older epoch
// than the one the follower was told to follow.
var ErrStaleLeader = errors.New("replication: leader epoch is older than the one to follow")

// ErrFileSize is returned by Follow when the leader's log files are of
// another size: the logs could never be byte-identical.
var ErrFileSize = errors.New("replication: leader and follower file sizes differ")

// FollowerLog is what a follower writes to.
type FollowerLog interface {
	AppendRaw(phys int64, data []byte) (int64, error)
	WriteOffset() int64
	FlushedOffset() int64
	MinOffset() int64
	WaitDurable(ctx context.Context, end int64) error
}

// FollowerEpochs is the follower's epoch file.
type FollowerEpochs interface {
	Latest() (commitlog.EpochStart, bool)
	Assign(epoch, start int64) error
	TruncateFrom(offset int64) error
}

// FollowerConfig configures a Follower.
type FollowerConfig struct {
	Node     string
	Log      FollowerLog
	Epochs   FollowerEpochs
	FileSize int64
	// Truncate cuts the log (and whatever indexes it) back to a record
	// boundary; Restart empties it and starts it again at a leader's
	// MinOffset, for a follower too far behind to catch up, with every
	// partition's next offset there as the leader sent it
	// (LeaderConfig.Offsets).
	Truncate func(to int64) error
	Restart  func(at int64, next []commitlog.PartitionOffset) error
	// Durable acknowledges only what is flushed (with --flush sync).
	Durable bool
	// Timeout is how long the leader may stay silent (default 5s; it
	// heartbeats every 250ms by default).
	Timeout time.Duration
	// Key is what the leader must prove it holds before the follower acts
	// on anything it says, and what the follower proves in turn (see
	// LeaderConfig.Key).
	Key []byte
	// TLS, if set, is the dialer's config (internal/tlsconf): the leader's
	// certificate is verified, and the follower's own is presented for a
	// leader that requires one.
	TLS    *tls.Config
	Logger logrus.FieldLogger
}

// Follower replicates a leader's log into its own.
type Follower struct {
	cfg FollowerConfig
	log logrus.FieldLogger
	hw  atomic.Int64
}

// NewFollower returns a Follower; Follow runs it against one leader.
func NewFollower(cfg FollowerConfig) *Follower {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.StandardLogger()
	}
	return &Follower{cfg: cfg, log: cfg.Logger.WithFields(logrus.Fields{"component": "replication", "role": "follower"})}
}

// HighWatermark is the leader's high watermark as last received, capped
// at this log's end.
func (f *Follower) HighWatermark() int64 { return min(f.hw.Load(), f.cfg.Log.WriteOffset()) }

// Follow replicates from the leader at addr, which must lead epoch (or a
// newer one), until ctx ends or the stream fails; the caller reconnects,
// to the same or a new leader.
func (f *Follower) Follow(ctx context.Context, addr string, epoch int64) error {
	var d interface {
		DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	} = &net.Dialer{Timeout: f.cfg.Timeout}
	if f.cfg.TLS != nil {
		d = &tls.Dialer{NetDialer: &net.Dialer{Timeout: f.cfg.Timeout}, Config: f.cfg.TLS}
	}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("replication: dial leader %s: %w", addr, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	err = f.session(ctx, c, addr, epoch)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func (f *Follower) session(ctx context.Context, c net.Conn, addr string, epoch int64) error {
	last := int64(-1)
	if e, ok := f.cfg.Epochs.Latest(); ok {
		last = e.Epoch
	}
	n, err := newNonce()
	if err != nil {
		return err
	}
	if err := f.write(c, encodeHello(epoch, hello{end: f.cfg.Log.WriteOffset(), lastEpoch: last, node: f.cfg.Node, nonce: n})); err != nil {
		return err
	}
	fr := &frameReader{r: c, max: MaxChunk + 1<<20}
	if err := f.authenticate(c, fr, addr, n); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(f.cfg.Timeout))
	fm, err := fr.next()
	if err != nil {
		return fmt.Errorf("replication: read start: %w", err)
	}
	if fm.epoch < epoch {
		f.write(c, appendFrame(nil, frameFenced, epoch))
		return fmt.Errorf("replication: leader at epoch %d, following %d: %w", fm.epoch, epoch, ErrStaleLeader)
	}
	epoch = fm.epoch
	var truncateTo, leaderMin, fileSize int64
	if fm.typ != frameStart {
		return fmt.Errorf("%w: frame of type %d instead of start", ErrProtocol, fm.typ)
	}
	if err := readInt64s(fm.payload, &truncateTo, &leaderMin, &fileSize); err != nil {
		return err
	}
	if fileSize != f.cfg.FileSize {
		return fmt.Errorf("replication: leader files of %d bytes, ours %d: %w", fileSize, f.cfg.FileSize, ErrFileSize)
	}
	parts, err := f.readOffsets(c, fr, leaderMin)
	if err != nil {
		return err
	}
	if err := f.align(truncateTo, leaderMin, parts); err != nil {
		return err
	}
	end := f.cfg.Log.WriteOffset()
	if err := f.ack(c, epoch, end); err != nil {
		return err
	}
	f.log.WithFields(logrus.Fields{"leader": c.RemoteAddr().String(), "epoch": epoch, "from": end}).Info("following")

	for {
		c.SetReadDeadline(time.Now().Add(f.cfg.Timeout))
		fm, err := fr.next()
		if err != nil {
			return fmt.Errorf("replication: read from leader: %w", err)
		}
		if fm.epoch < epoch {
			return fmt.Errorf("replication: frame of epoch %d after %d: %w", fm.epoch, epoch, ErrStaleLeader)
		}
		if fm.typ != frameData {
			return fmt.Errorf("%w: frame of type %d from the leader", ErrProtocol, fm.typ)
		}
		var recEpoch, hw, phys int64
		if err := readInt64s(fm.payload, &recEpoch, &hw, &phys); err != nil {
			return err
		}
		if chunk := fm.payload[dataHeader:]; len(chunk) > 0 || phys != end {
			if err := f.assign(recEpoch, phys); err != nil {
				return err
			}
			if end, err = f.cfg.Log.AppendRaw(phys, chunk); err != nil {
				return fmt.Errorf("replication: apply %d bytes at %d: %w", len(chunk), phys, err)
			}
		}
		f.hw.Store(hw)
		if f.cfg.Durable {
			if err := f.cfg.Log.WaitDurable(ctx, end); err != nil {
				return fmt.Errorf("replication: flush to %d: %w", end, err)
			}
		}
		if err := f.ack(c, epoch, end); err != nil {
			return err
		}
	}
}

// authenticate checks the leader's proof over the Hello's nonce n, the
// first thing the leader sends, and answers with this follower's proof.
func (f *Follower) authenticate(c net.Conn, fr *frameReader, addr string, n nonce) error {
	c.SetReadDeadline(time.Now().Add(f.cfg.Timeout))
	fm, err := fr.next()
	if err != nil {
		return fmt.Errorf("replication: read leader auth: %w", err)
	}
	ln, proof, err := decodeLeaderAuth(fm)
	if err != nil {
		return err
	}
	if !hmac.Equal(proof, leaderProof(f.cfg.Key, n, ln, addr)) {
		return fmt.Errorf("replication: leader at %s: %w", addr, ErrUnauthenticated)
	}
	return f.write(c, appendFrame(nil, frameAuth, 0, followerProof(f.cfg.Key, ln, n, f.cfg.Node)))
}

// readOffsets reads the Offsets frames that follow Start: the leader's
// next offsets at leaderMin.
func (f *Follower) readOffsets(c net.Conn, fr *frameReader, leaderMin int64) ([]commitlog.PartitionOffset, error) {
	var parts []commitlog.PartitionOffset
	for {
		c.SetReadDeadline(time.Now().Add(f.cfg.Timeout))
		fm, err := fr.next()
		if err != nil {
			return nil, fmt.Errorf("replication: read offsets: %w", err)
		}
		if fm.typ != frameOffsets {
			return nil, fmt.Errorf("%w: frame of type %d instead of offsets", ErrProtocol, fm.typ)
		}
		o, err := decodeOffsets(fm.payload)
		if err != nil {
			return nil, err
		}
		if o.at != leaderMin {
			return nil, fmt.Errorf("%w: offsets at %d, the leader's log starts at %d", ErrProtocol, o.at, leaderMin)
		}
		parts = append(parts, o.parts...)
		if o.last {
			return parts, nil
		}
	}
}

// align cuts the log to what it shares with the leader: nothing after the
// end of its own latest epoch on the leader, and nothing at all if the
// leader no longer holds where it ends; then it starts again at leaderMin
// with the partitions' offsets there.
func (f *Follower) align(truncateTo, leaderMin int64, parts []commitlog.PartitionOffset) error {
	lg := f.cfg.Log
	end := lg.WriteOffset()
	target := end
	if truncateTo < 0 {
		target = lg.MinOffset()
	} else {
		target = min(end, truncateTo)
	}
	if target < end {
		if target < lg.MinOffset() {
			target = lg.MinOffset()
		}
		f.log.WithFields(logrus.Fields{"from": end, "to": target}).Warn("truncating the tail the leader does not have")
		if err := f.cfg.Truncate(target); err != nil {
			return fmt.Errorf("replication: truncate to %d: %w", target, err)
		}
		if err := f.cfg.Epochs.TruncateFrom(target); err != nil {
			return err
		}
	}
	if lg.WriteOffset() < leaderMin || lg.WriteOffset() == lg.MinOffset() && lg.MinOffset() != leaderMin {
		f.log.WithFields(logrus.Fields{"end": lg.WriteOffset(), "leader_min": leaderMin}).Warn("starting the log again at the leader's first offset")
		if err := f.cfg.Restart(leaderMin, parts); err != nil {
			return fmt.Errorf("replication: restart at %d: %w", leaderMin, err)
		}
		if err := f.cfg.Epochs.TruncateFrom(0); err != nil {
			return err
		}
	}
	return nil
}

func (f *Follower) assign(epoch, start int64) error {
	if last, ok := f.cfg.Epochs.Latest(); epoch < 0 || ok && last.Epoch >= epoch {
		return nil
	}
	if err := f.cfg.Epochs.Assign(epoch, start); err != nil {
		return fmt.Errorf("replication: epoch %d at %d: %w", epoch, start, err)
	}
	return nil
}

func (f *Follower) ack(c net.Conn, epoch, end int64) error {
	return f.write(c, appendFrame(nil, frameAck, epoch, int64s(end, f.cfg.Log.FlushedOffset())))
}

func (f *Follower) write(c net.Conn, b []byte) error {
	c.SetWriteDeadline(time.Now().Add(f.cfg.Timeout))
	if _, err := c.Write(b); err != nil {
		return fmt.Errorf("replication: write to leader: %w", err)
	}
	return nil
}
