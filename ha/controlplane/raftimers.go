package controlplane

import (
	"fmt"
	"sync"
	"time"
	_ "unsafe" // go:linkname

	"github.com/nats-io/nats-server/v2/server"
)

// The Raft timers of an embedded NATS server.
//
// nats-server elects a new leader for a Raft group (each bucket's stream,
// JetStream's meta group) only once a follower has heard nothing from the
// old one for its election timeout, 4 to 9 s, and offers no option to
// change it. When a broker dies its embedded server dies with it, and
// every stream that server led takes no writes until the election:
// neither the lease renewals of a leader whose follower died, nor the
// take of the next leader. With the defaults that stalled a failover up
// to 13.7 s (docs/BENCHMARKS.md, "Failover time").
//
// The timers are unexported package variables of nats-server
// (server/raft.go); the linknames below reach them. They are
// process-global: every NATS server in the process runs on them, which is
// why they are set only when a broker embeds a routed server
// (StartServer), never for a broker that joins an external NATS (whose
// timers are that server's business). Raft's safety does not depend on
// timers, only its liveness does: too short, and a loaded machine that
// delays a heartbeat gets an election it did not need (a stream's writes
// pause for the vote, nothing is lost). On a 2-core machine at load
// average 15 to 23 these values caused no election nobody needed, and
// brought a dead server's streams back in about a second
// (docs/BENCHMARKS.md), so they are no flag: set before any server
// starts, they could not change per server anyway.
//
// A renamed function fails the link ("relocation target not defined");
// a renamed variable would not (this package would silently define its
// own), so applyRaftTimers first checks that each variable holds
// nats-server's compiled-in default, and afterwards that the server's own
// randElectionTimeout draws from the new range.

//go:linkname natsMinElectionTimeout github.com/nats-io/nats-server/v2/server.minElectionTimeout
var natsMinElectionTimeout time.Duration

//go:linkname natsMaxElectionTimeout github.com/nats-io/nats-server/v2/server.maxElectionTimeout
var natsMaxElectionTimeout time.Duration

//go:linkname natsHBInterval github.com/nats-io/nats-server/v2/server.hbInterval
var natsHBInterval time.Duration

//go:linkname natsRandElectionTimeout github.com/nats-io/nats-server/v2/server.randElectionTimeout
func natsRandElectionTimeout() time.Duration

// raftTimer is one of nats-server's Raft timers: where it lives, its
// compiled-in default and the value an embedded server runs on.
type raftTimer struct {
	name     string
	v        *time.Duration
	def, set time.Duration
}

// embeddedRaftTimers keeps nats-server's ratio: an election timeout of
// several heartbeats (5 to 10 here, 4 to 9 there), so one late heartbeat
// does not start an election. The lost-quorum timers (a leader that has
// heard from no quorum for 10 s steps down) stay as they are: the side
// of a partition that holds a quorum elects on the election timeout
// alone (with 2 s here, a stream leader once stepped down for lost
// quorum while a restarted peer caught up, and the next follower kill
// stalled writes 10 s).
var embeddedRaftTimers = []raftTimer{
	// A follower starts an election 500 ms to 1 s after the last word
	// from its leader: a dead stream leader is replaced in about a
	// second, within the 1.5 s lease a failover waits for anyway.
	{name: "minElectionTimeout", v: &natsMinElectionTimeout, def: 4 * time.Second, set: 500 * time.Millisecond},
	{name: "maxElectionTimeout", v: &natsMaxElectionTimeout, def: 9 * time.Second, set: time.Second},
	{name: "hbInterval", v: &natsHBInterval, def: time.Second, set: 100 * time.Millisecond},
}

var (
	raftTimersOnce sync.Once
	raftTimersErr  error
)

// applyRaftTimers sets the embedded Raft timers, once per process, before
// the first server starts. It fails when a variable does not hold
// nats-server's default (renamed, or its meaning changed with a new
// release: look again before changing the expected default here).
func applyRaftTimers() error {
	raftTimersOnce.Do(func() {
		for _, t := range embeddedRaftTimers {
			if *t.v != t.def {
				raftTimersErr = fmt.Errorf("ha: nats-server %s's Raft timer %s is %s, want its default %s: see ha/controlplane/raftimers.go", server.VERSION, t.name, *t.v, t.def)
				return
			}
		}
		for _, t := range embeddedRaftTimers {
			*t.v = t.set
		}
		if d := natsRandElectionTimeout(); d < natsMinElectionTimeout || d >= natsMaxElectionTimeout {
			raftTimersErr = fmt.Errorf("ha: nats-server %s draws election timeouts (%s) outside the range set [%s, %s): see ha/controlplane/raftimers.go", server.VERSION, d, natsMinElectionTimeout, natsMaxElectionTimeout)
		}
	})
	return raftTimersErr
}
