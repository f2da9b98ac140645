package group

import (
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/clock"
)

// member is one consumer of a group, owned by the group's goroutine.
type member struct {
	id         string
	instanceID *string
	clientID   string
	host       string
	session    time.Duration
	rebalance  time.Duration
	protocols  []kmsg.JoinGroupRequestProtocol
	assignment []byte
	// fresh is true until the member is part of a completed join phase.
	fresh bool
	// deadline is when the session expires unless the member is heard from.
	deadline time.Time

	// A parked JoinGroup or SyncGroup: its reply channel (buffered, one
	// answer) and the version to answer at. A parked member is kept alive
	// without heartbeats, as Kafka does.
	join        chan<- *kmsg.JoinGroupResponse
	joinVersion int16
	sync        chan<- *kmsg.SyncGroupResponse
	syncVersion int16
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func (m *member) supports(name string) bool {
	for _, p := range m.protocols {
		if p.Name == name {
			return true
		}
	}
	return false
}

// group is the state of one group. Every field is owned by the goroutine
// run starts; the coordinator and handlers reach it only through do.
type group struct {
	c    *Coordinator
	id   string
	log  logrus.FieldLogger
	reqs chan func()
	done chan struct{} // closed when the goroutine ends (group deleted or coordinator closed)

	state        State
	protocolType string
	protocol     string
	generation   int32
	leader       string
	// members in join order, which makes leader choice and every listing
	// deterministic.
	members []*member
	// pending are ids handed out with MEMBER_ID_REQUIRED and the time they
	// lapse unless the client joins with them; a rebalance waits for them.
	pending map[string]time.Time
	// static maps group.instance.id to the current member id (KIP-345).
	static            map[string]string
	rebalanceDeadline time.Time
	rebalances        int64

	timer   clock.Timer
	timerAt time.Time
}

func newGroup(c *Coordinator, id string) *group {
	return &group{
		c:       c,
		id:      id,
		log:     c.log.WithField("group", id),
		reqs:    make(chan func(), 16),
		done:    make(chan struct{}),
		pending: make(map[string]time.Time),
		static:  make(map[string]string),
	}
}

// run serves the group's requests one at a time until stop.
func (g *group) run(stop <-chan struct{}) {
	defer close(g.done)
	for {
		select {
		case fn := <-g.reqs:
			fn()
			if g.state == Dead {
				g.stopTimer()
				return
			}
			g.rearm()
		case <-stop:
			g.stopTimer()
			g.failParked()
			return
		}
	}
}

// do runs fn on the group's goroutine and reports false if the group has
// ended (deleted, or the coordinator closed) instead.
func (g *group) do(fn func()) bool {
	select {
	case g.reqs <- fn:
		return true
	case <-g.done:
		return false
	}
}

// wait runs fn on the group's goroutine and waits for it to finish.
func (g *group) wait(fn func()) bool {
	fin := make(chan struct{})
	if !g.do(func() { fn(); close(fin) }) {
		return false
	}
	select {
	case <-fin:
		return true
	case <-g.done:
		// fn ending the group (DeleteGroups) closes fin before done:
		// both may be ready, and fn must not run twice.
		select {
		case <-fin:
			return true
		default:
			return false
		}
	}
}

func (g *group) now() time.Time { return g.c.clock.Now() }

func (g *group) find(id string) *member {
	for _, m := range g.members {
		if m.id == id {
			return m
		}
	}
	return nil
}

func (g *group) touch(m *member) { m.deadline = g.now().Add(m.session) }

// nextDeadline is the earliest time something may expire.
func (g *group) nextDeadline() time.Time {
	var next time.Time
	earlier := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, m := range g.members {
		if m.join == nil && m.sync == nil {
			earlier(m.deadline)
		}
	}
	for _, d := range g.pending {
		earlier(d)
	}
	if g.state == PreparingRebalance {
		earlier(g.rebalanceDeadline)
	}
	return next
}

// rearm keeps one timer armed for the earliest deadline. A timer that
// fires early (its deadline was extended) only runs expire, which finds
// nothing due and re-arms.
func (g *group) rearm() {
	next := g.nextDeadline()
	if next.IsZero() {
		g.stopTimer()
		return
	}
	if g.timer != nil && !next.Before(g.timerAt) {
		return
	}
	g.stopTimer()
	g.timerAt = next
	g.timer = g.c.clock.AfterFunc(next.Sub(g.now()), func() { g.do(g.expire) })
}

func (g *group) stopTimer() {
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
}

// expire evicts members whose session lapsed and ends a rebalance whose
// timeout passed.
func (g *group) expire() {
	g.timer = nil
	now := g.now()
	for id, d := range g.pending {
		if !now.Before(d) {
			delete(g.pending, id)
		}
	}
	for _, m := range append([]*member(nil), g.members...) {
		if m.join == nil && m.sync == nil && !now.Before(m.deadline) {
			g.log.WithFields(logrus.Fields{"member": m.id, "session_timeout": m.session}).Info("member evicted: session timeout")
			g.remove(m)
		}
	}
	if g.state == PreparingRebalance && !now.Before(g.rebalanceDeadline) {
		for _, m := range append([]*member(nil), g.members...) {
			if m.join == nil {
				g.log.WithField("member", m.id).Info("member evicted: did not rejoin within the rebalance timeout")
				g.remove(m)
			}
		}
		clear(g.pending)
		if g.state == PreparingRebalance {
			g.completeJoin()
		}
		return
	}
	g.maybeCompleteJoin()
}

// remove drops a member, answers its parked calls with UNKNOWN_MEMBER_ID
// and rebalances the rest.
func (g *group) remove(m *member) {
	g.removeQuiet(m)
	g.answerParked(m, unknownMemberID)
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance()
	}
	g.maybeCompleteJoin()
}

func (g *group) removeQuiet(m *member) {
	for i, x := range g.members {
		if x == m {
			g.members = append(g.members[:i], g.members[i+1:]...)
			break
		}
	}
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
}

// answerParked ends a member's parked calls with an error.
func (g *group) answerParked(m *member, code int16) {
	if m.join != nil {
		m.join <- joinError(m.joinVersion, code, m.id)
		m.join = nil
	}
	if m.sync != nil {
		m.sync <- syncError(m.syncVersion, code)
		m.sync = nil
	}
}

// failParked answers everything parked when the coordinator closes.
func (g *group) failParked() {
	for _, m := range g.members {
		g.answerParked(m, coordinatorNotAvailable)
	}
}

// prepareRebalance starts a new round: every member must rejoin within
// the largest rebalance timeout. Syncs parked for the generation being
// abandoned learn of it now.
func (g *group) prepareRebalance() {
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			if m.sync != nil {
				m.sync <- syncError(m.syncVersion, rebalanceInProgress)
				m.sync = nil
			}
		}
	}
	var timeout time.Duration
	for _, m := range g.members {
		timeout = max(timeout, m.rebalance)
	}
	g.state = PreparingRebalance
	g.rebalanceDeadline = g.now().Add(timeout)
	g.rebalances++
}

// maybeCompleteJoin completes the join phase once every member has a
// JoinGroup parked and no MEMBER_ID_REQUIRED id is outstanding.
func (g *group) maybeCompleteJoin() {
	if g.state != PreparingRebalance || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.join == nil {
			return
		}
	}
	g.completeJoin()
}

// completeJoin starts the next generation with the members that joined:
// the protocol every one of them supports, the leader kept if still
// present, and each parked JoinGroup answered (the leader with the
// members' metadata).
func (g *group) completeJoin() {
	g.generation++
	if len(g.members) == 0 {
		g.state = Empty
		g.protocol = ""
		g.leader = ""
		g.log.WithField("generation", g.generation).Info("group is empty")
		return
	}
	g.protocol = g.chooseProtocol()
	if g.find(g.leader) == nil {
		g.leader = g.members[0].id
	}
	g.state = CompletingRebalance
	for _, m := range g.members {
		m.assignment = nil
		m.fresh = false
		g.touch(m)
		if m.join != nil {
			m.join <- g.joinResult(m, m.joinVersion)
			m.join = nil
		}
	}
	g.log.WithFields(logrus.Fields{"generation": g.generation, "members": len(g.members), "protocol": g.protocol, "leader": g.leader}).Info("rebalance: join complete")
}

// chooseProtocol picks, among the protocols every member supports, the one
// most members list first among those (Kafka's vote); ties go to the
// earliest member's preference.
func (g *group) chooseProtocol() string {
	var candidates []string
	for _, p := range g.members[0].protocols {
		all := true
		for _, m := range g.members[1:] {
			all = all && m.supports(p.Name)
		}
		if all {
			candidates = append(candidates, p.Name)
		}
	}
	votes := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			if contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range candidates {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// supportsAny reports whether a joining member's protocols leave at least
// one that every current member also supports.
func (g *group) supportsAny(protocols []kmsg.JoinGroupRequestProtocol, except *member) bool {
	for _, p := range protocols {
		all := true
		for _, m := range g.members {
			all = all && (m == except || m.supports(p.Name))
		}
		if all {
			return true
		}
	}
	return false
}

// joinResult is the JoinGroup answer for m in the current generation.
func (g *group) joinResult(m *member, version int16) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.Generation = g.generation
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.LeaderID = g.leader
	resp.MemberID = m.id
	if m.id == g.leader {
		for _, x := range g.members {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID = x.id
			jm.InstanceID = x.instanceID
			jm.ProtocolMetadata = x.metadata(g.protocol)
			resp.Members = append(resp.Members, jm)
		}
	}
	return resp
}
