package controlplane

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// MemberStatus is a member as read from the bucket, with the age of its
// last heartbeat by the NATS server's clock.
type MemberStatus struct {
	Member
	Age time.Duration
}

// ClusterStatus is the whole cluster as the buckets hold it.
type ClusterStatus struct {
	Members []MemberStatus
	Leaders []GroupLeader
}

// ReadStatus reads the members and leases buckets without creating them,
// for operators (unilog cluster status).
func ReadStatus(ctx context.Context, nc *nats.Conn) (ClusterStatus, error) {
	var st ClusterStatus
	js, err := jetstream.New(nc)
	if err != nil {
		return st, fmt.Errorf("ha: jetstream: %w", err)
	}
	err = eachEntry(ctx, js, MembersBucket, func(e jetstream.KeyValueEntry) error {
		var m Member
		if err := decodeValue(e.Value(), &m); err != nil {
			return fmt.Errorf("%s: %w", e.Key(), err)
		}
		st.Members = append(st.Members, MemberStatus{Member: m, Age: time.Since(e.Created())})
		return nil
	})
	if err != nil {
		return st, err
	}
	sort.Slice(st.Members, func(i, j int) bool { return st.Members[i].NodeID < st.Members[j].NodeID })
	err = eachEntry(ctx, js, LeasesBucket, func(e jetstream.KeyValueEntry) error {
		var v leaseValue
		if err := decodeValue(e.Value(), &v); err != nil {
			return fmt.Errorf("%s: %w", e.Key(), err)
		}
		gl := GroupLeader{Group: v.Group, NodeID: v.Holder, Epoch: v.Epoch}
		if v.Released {
			gl.NodeID = -1
		}
		st.Leaders = append(st.Leaders, gl)
		return nil
	})
	sort.Slice(st.Leaders, func(i, j int) bool { return st.Leaders[i].Group < st.Leaders[j].Group })
	return st, err
}

func eachEntry(ctx context.Context, js jetstream.JetStream, bucket string, f func(jetstream.KeyValueEntry) error) error {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return fmt.Errorf("ha: bucket %s: %w", bucket, err)
	}
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ha: bucket %s: %w", bucket, err)
	}
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("ha: bucket %s: %w", bucket, err)
		}
		if err := f(e); err != nil {
			return fmt.Errorf("ha: bucket %s: %w", bucket, err)
		}
	}
	return nil
}

// Status is ReadStatus over the node's own connection, for the console.
func (n *Node) Status(ctx context.Context) (ClusterStatus, error) { return ReadStatus(ctx, n.nc) }
