package replication

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// inSyncSet holds the rules that decide whether data survives a failover:
// which followers are in sync, what the high watermark is, and whether
// enough replicas are in sync to take a write. It does no I/O, takes no
// lock and reads no clock: the Leader calls it under its mutex with the
// time and its log's end, and the scripts in testdata/insync drive it
// directly (TestInSyncScripts).
//
// The rules:
//   - A follower joins the set when it caught up with the leader's end
//     within maxLag and confirmed at least the high watermark (or the
//     leader's end, if lower): joining never pulls the high watermark
//     back. Confirmed is its flushed end when durable, its write end
//     otherwise.
//   - It leaves the set when it has not caught up for longer than maxLag,
//     or disconnects. It then stops counting toward minInSync at once,
//     but holds the high watermark at what it had confirmed until a set
//     without it was published (it may still be elected until then).
//   - The high watermark is the lowest confirmed end of the in-sync
//     followers and of those left but not yet published out;
//     math.MaxInt64 with none (the leader's own end bounds it outside).
//   - A write needs minInSync replicas in sync, the leader counted.
type inSyncSet struct {
	maxLag    time.Duration
	durable   bool
	minInSync int
	// publishes: changes of the set take effect once published (the
	// Leader has PublishInSync); otherwise at once.
	publishes bool

	peers map[string]*peerState
	hw    int64
	// gen counts changes of the set; published is the newest one stored.
	gen, published uint64
}

type peerState struct {
	end, flushed  int64
	lastLeaderEnd int64 // the leader's end at the previous ack
	caughtUpAt    time.Time
	inSync        bool
	// Out of sync but not yet published so: the high watermark stays at
	// or below heldAt (what it had confirmed) while leftGen > published.
	leftGen   uint64
	heldAt    int64
	connected bool
}

func newInSyncSet(maxLag time.Duration, durable bool, minInSync int, publishes bool) *inSyncSet {
	return &inSyncSet{maxLag: maxLag, durable: durable, minInSync: minInSync, publishes: publishes,
		peers: make(map[string]*peerState), hw: math.MaxInt64}
}

func (s *inSyncSet) confirmed(p *peerState) int64 {
	if s.durable {
		return p.flushed
	}
	return p.end
}

// connect records a follower's session starting at end and flushed.
func (s *inSyncSet) connect(node string, end, flushed int64) {
	p := s.peers[node]
	if p == nil {
		p = &peerState{}
		s.peers[node] = p
	}
	p.connected, p.end, p.flushed, p.lastLeaderEnd = true, end, flushed, end
}

// disconnect ends a follower's session; it reports whether the follower
// left the set.
func (s *inSyncSet) disconnect(node string) (left bool) {
	p := s.peers[node]
	if p == nil {
		return false
	}
	p.connected = false
	if !p.inSync {
		return false
	}
	s.drop(p)
	s.update()
	return true
}

// ack records an acknowledgement at now, when the leader's log ended at
// leaderEnd; it reports whether the follower joined the set.
func (s *inSyncSet) ack(node string, end, flushed, leaderEnd int64, now time.Time) (joined bool) {
	p := s.peers[node]
	if p == nil {
		p = &peerState{connected: true}
		s.peers[node] = p
	}
	p.end, p.flushed = end, flushed
	if end >= p.lastLeaderEnd {
		p.caughtUpAt = now
	}
	p.lastLeaderEnd = leaderEnd
	if !p.inSync && now.Sub(p.caughtUpAt) <= s.maxLag && s.confirmed(p) >= min(s.hw, leaderEnd) {
		p.inSync, p.leftGen = true, 0
		s.changed()
		joined = true
	}
	s.update()
	return joined
}

// lag drops the followers that have not caught up within maxLag at now,
// and returns them, sorted.
func (s *inSyncSet) lag(now time.Time) []string {
	var dropped []string
	for node, p := range s.peers {
		if p.inSync && now.Sub(p.caughtUpAt) > s.maxLag {
			s.drop(p)
			dropped = append(dropped, node)
		}
	}
	if len(dropped) > 0 {
		s.update()
	}
	sort.Strings(dropped)
	return dropped
}

// drop takes p out of the set; it holds the high watermark until a set
// without it is published.
func (s *inSyncSet) drop(p *peerState) {
	p.inSync, p.heldAt = false, s.confirmed(p)
	p.leftGen = s.changed()
}

// changed counts a change of the set, in effect at once without
// publishing.
func (s *inSyncSet) changed() uint64 {
	s.gen++
	if !s.publishes {
		s.published = s.gen
	}
	return s.gen
}

// unpublished reports whether a change waits to be published.
func (s *inSyncSet) unpublished() bool { return s.gen > s.published }

// markPublished records that the set as of gen was stored; it reports
// whether that released anything.
func (s *inSyncSet) markPublished(gen uint64) bool {
	if gen <= s.published {
		return false
	}
	s.published = gen
	s.update()
	return true
}

// update recomputes the high watermark.
func (s *inSyncSet) update() {
	hw := int64(math.MaxInt64)
	for _, p := range s.peers {
		switch {
		case p.inSync:
			hw = min(hw, s.confirmed(p))
		case p.leftGen > s.published:
			hw = min(hw, p.heldAt)
		}
	}
	s.hw = hw
}

// highWatermark is the high watermark for a leader whose log ends at end.
func (s *inSyncSet) highWatermark(end int64) int64 { return min(end, s.hw) }

// members lists the in-sync followers, sorted.
func (s *inSyncSet) members() []string {
	out := []string{}
	for node, p := range s.peers {
		if p.inSync {
			out = append(out, node)
		}
	}
	sort.Strings(out)
	return out
}

// enough is nil when minInSync replicas, the leader counted, are in sync.
func (s *inSyncSet) enough() error {
	n := 1
	for _, p := range s.peers {
		if p.inSync {
			n++
		}
	}
	if n < s.minInSync {
		return fmt.Errorf("replication: %d replicas in sync (the leader and %d followers), %d required: %w", n, n-1, s.minInSync, ErrNotEnoughReplicas)
	}
	return nil
}

// status reports every follower seen, sorted by node, for a leader whose
// log ends at end.
func (s *inSyncSet) status(end int64) []FollowerStatus {
	out := make([]FollowerStatus, 0, len(s.peers))
	for node, p := range s.peers {
		out = append(out, FollowerStatus{Node: node, End: p.end, Flushed: p.flushed, InSync: p.inSync, Connected: p.connected, LagBytes: max(0, end-p.end)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}
