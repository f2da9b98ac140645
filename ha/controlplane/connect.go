package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Bucket names; see the package doc for their keys and values.
const (
	MembersBucket  = "unilog_members"
	LeasesBucket   = "unilog_leases"
	MetadataBucket = "unilog_meta"
)

// ConnConfig says how to reach NATS.
type ConnConfig struct {
	// URLs is a comma-separated list of nats:// URLs.
	URLs string
	// Creds is a NATS credentials file (JWT and nkey seed).
	Creds string
	// NKeySeed is a file holding an nkey seed.
	NKeySeed string
	// Secret signs in to an embedded server started with the same one
	// (ServerConfig.Secret); a server that asks for no credentials is
	// joined without.
	Secret *Secret
	// Name identifies the connection in the server's monitoring.
	Name string
}

// Dial connects to NATS and keeps reconnecting for as long as it is open:
// a control plane that gives up during a NATS restart would fence every
// leader for good.
func Dial(cfg ConnConfig) (*nats.Conn, error) {
	if cfg.URLs == "" {
		return nil, errors.New("ha: no NATS URL")
	}
	opts := []nats.Option{nats.Name(cfg.Name), nats.MaxReconnects(-1)}
	if cfg.Creds != "" {
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	}
	if cfg.NKeySeed != "" {
		o, err := nats.NkeyOptionFromSeed(cfg.NKeySeed)
		if err != nil {
			return nil, fmt.Errorf("ha: nkey seed %s: %w", cfg.NKeySeed, err)
		}
		opts = append(opts, o)
	}
	if cfg.Secret != nil {
		kp, pub, err := cfg.Secret.natsUser()
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Nkey(pub, kp.Sign))
	}
	nc, err := nats.Connect(cfg.URLs, opts...)
	if errors.Is(err, nats.ErrNkeysNotSupported) && cfg.Secret != nil {
		// An open server (an external NATS without accounts) takes no
		// nkey: nothing to sign in to.
		nc, err = nats.Connect(cfg.URLs, opts[:len(opts)-1]...)
	}
	if err != nil {
		return nil, fmt.Errorf("ha: connect to NATS %s: %w", cfg.URLs, err)
	}
	return nc, nil
}

// Buckets are the control plane's key-value buckets.
type Buckets struct {
	Members  jetstream.KeyValue
	Leases   jetstream.KeyValue
	Metadata jetstream.KeyValue
}

// OpenBuckets creates or binds the buckets with the given replica count
// (0: 3 when NATS names three or more servers, else 1). A JetStream
// cluster still electing its meta leader refuses or ignores bucket
// creation for a moment, so this retries until ctx ends.
func OpenBuckets(ctx context.Context, nc *nats.Conn, replicas int, memberDeadline time.Duration) (Buckets, error) {
	if replicas <= 0 {
		replicas = 1
		if len(nc.Servers()) >= 3 {
			replicas = 3
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return Buckets{}, fmt.Errorf("ha: jetstream: %w", err)
	}
	if memberDeadline <= 0 {
		memberDeadline = DefaultMemberDeadline
	}
	cfgs := []jetstream.KeyValueConfig{
		// A departed node's heartbeat is cleaned up eventually; liveness
		// is judged by the deadline, never by the key vanishing.
		{Bucket: MembersBucket, Description: "unilog member heartbeats", Replicas: replicas, Storage: jetstream.FileStorage, TTL: 20 * memberDeadline},
		// No TTL: a lease's epoch must outlive any outage.
		{Bucket: LeasesBucket, Description: "unilog replica group leases", Replicas: replicas, Storage: jetstream.FileStorage},
		{Bucket: MetadataBucket, Description: "unilog cluster metadata", Replicas: replicas, Storage: jetstream.FileStorage},
	}
	kvs := make([]jetstream.KeyValue, len(cfgs))
	for i, c := range cfgs {
		// A request sent before the meta leader exists is never answered.
		err := retry(ctx, func(tctx context.Context) (err error) {
			kvs[i], err = js.CreateOrUpdateKeyValue(tctx, c)
			return err
		})
		if err != nil {
			return Buckets{}, fmt.Errorf("ha: bucket %s (%d replicas): %w", c.Bucket, replicas, err)
		}
	}
	return Buckets{Members: kvs[0], Leases: kvs[1], Metadata: kvs[2]}, nil
}

// retry calls try until it succeeds or ctx ends, giving each call its own
// timeout of retryTryTimeout, and returns the last error. It is for
// requests that a JetStream cluster still electing a leader (its meta
// leader, or a stream's) leaves unanswered: one try with the caller's
// whole deadline would spend it all.
func retry(ctx context.Context, try func(context.Context) error) error {
	for {
		tctx, cancel := context.WithTimeout(ctx, retryTryTimeout)
		err := try(tctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(retryWait):
		}
	}
}

const (
	retryTryTimeout = time.Second
	retryWait       = 250 * time.Millisecond
)

// validToken accepts names usable as one KV key token.
func validToken(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == ""
}
