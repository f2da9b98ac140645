package controlplane

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"
)

// GroupLeader is the holder of a replica group's lease as last seen.
type GroupLeader struct {
	Group  string `json:"group"`
	NodeID int32  `json:"node_id"`
	Epoch  uint64 `json:"epoch"`
}

// Leaders follows every replica group's lease, so any node can tell a
// client which node leads a partition.
type Leaders struct {
	log logrus.FieldLogger
	kv  jetstream.KeyValue
	rev *watchRevision

	mu     sync.Mutex
	groups map[string]leaseValue
	// revs is the revision of each group's entry applied last, kept after
	// a delete: CatchUp's fresh read can apply a group's newest lease
	// before the lagging watch delivers the older ones it still holds,
	// which must not take the copy back to an older epoch.
	revs map[string]uint64

	watcher jetstream.KeyWatcher
	done    chan struct{}
}

// WatchLeaders starts watching the leases bucket and returns once the
// current leases are loaded.
func WatchLeaders(ctx context.Context, kv jetstream.KeyValue, log logrus.FieldLogger) (*Leaders, error) {
	// Every key: CatchUp waits for the bucket's last revision.
	w, err := kv.WatchAll(context.Background())
	if err != nil {
		return nil, fmt.Errorf("ha: watch leases: %w", err)
	}
	l := &Leaders{log: log, kv: kv, rev: newWatchRevision(), groups: make(map[string]leaseValue), revs: make(map[string]uint64), watcher: w, done: make(chan struct{})}
	if err := loadInitial(ctx, w, l.apply); err != nil {
		w.Stop()
		return nil, fmt.Errorf("ha: watch leases: %w", err)
	}
	go func() {
		defer close(l.done)
		for e := range w.Updates() {
			if e != nil {
				l.apply(e)
			}
		}
	}()
	return l, nil
}

func (l *Leaders) apply(e jetstream.KeyValueEntry) {
	defer l.rev.note(e.Revision())
	group, lease := strings.CutPrefix(e.Key(), "lease.")
	if !lease {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Revision() <= l.revs[group] {
		return
	}
	l.revs[group] = e.Revision()
	if e.Operation() != jetstream.KeyValuePut {
		delete(l.groups, group)
		return
	}
	var v leaseValue
	if err := decodeValue(e.Value(), &v); err != nil {
		l.log.WithError(err).WithField("key", e.Key()).Error("leases bucket: value unreadable")
		return
	}
	l.groups[group] = v
}

// Leader returns the group's lease holder; false while the group has none
// (never led, or released).
func (l *Leaders) Leader(group string) (GroupLeader, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.groups[group]
	if !ok || v.Released {
		return GroupLeader{}, false
	}
	return GroupLeader{Group: group, NodeID: v.Holder, Epoch: v.Epoch}, true
}

// Epoch is the epoch of the group's newest lease, held, released or
// lapsed: no later leader exists. Zero for a group never led.
func (l *Leaders) Epoch(group string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.groups[group].Epoch
}

// All lists every group's lease, released ones with NodeID -1.
func (l *Leaders) All() []GroupLeader {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]GroupLeader, 0, len(l.groups))
	for g, v := range l.groups {
		gl := GroupLeader{Group: g, NodeID: v.Holder, Epoch: v.Epoch}
		if v.Released {
			gl.NodeID = -1
		}
		out = append(out, gl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

// Stop ends the watch.
func (l *Leaders) Stop() {
	l.watcher.Stop()
	<-l.done
}
