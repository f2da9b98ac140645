package group

import (
	"bytes"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka error codes the coordinator answers with.
var (
	unknownMemberID           = kerr.UnknownMemberID.Code
	illegalGeneration         = kerr.IllegalGeneration.Code
	rebalanceInProgress       = kerr.RebalanceInProgress.Code
	coordinatorNotAvailable   = kerr.CoordinatorNotAvailable.Code
	fencedInstanceID          = kerr.FencedInstanceID.Code
	inconsistentGroupProtocol = kerr.InconsistentGroupProtocol.Code
	memberIDRequired          = kerr.MemberIDRequired.Code
)

func joinError(version, code int16, memberID string) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.ErrorCode = code
	resp.Generation = -1
	resp.MemberID = memberID
	return resp
}

func syncError(version, code int16) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = version
	resp.ErrorCode = code
	return resp
}

// Client identifies the connection a request came from; DescribeGroups
// reports it per member.
type Client struct {
	ID   string
	Host string
}

// join handles a JoinGroup on the group's goroutine. The answer goes to
// reply, now or when the join phase completes.
func (g *group) join(req *kmsg.JoinGroupRequest, cl Client, reply chan<- *kmsg.JoinGroupResponse) {
	answer := func(code int16) { reply <- joinError(req.Version, code, req.MemberID) }
	if len(g.members) > 0 && (req.ProtocolType != g.protocolType || !g.supportsAny(req.Protocols, g.find(req.MemberID))) {
		answer(inconsistentGroupProtocol)
		return
	}
	if req.MemberID == "" {
		// Kafka prefixes a static member's id with its instance id, which
		// clients rely on to recognise their own old id.
		prefix := cl.ID
		if req.InstanceID != nil {
			prefix = *req.InstanceID
		}
		id := g.c.newMemberID(prefix)
		if req.InstanceID != nil {
			if old := g.find(g.static[*req.InstanceID]); old != nil {
				g.replaceStatic(old, id, req, cl, reply)
				return
			}
		} else if req.Version >= 4 {
			// KIP-394: the client learns its id first and joins with it, so
			// a client that dies mid-join leaves no member behind.
			g.pending[id] = g.now().Add(time.Duration(req.SessionTimeoutMillis) * time.Millisecond)
			reply <- joinError(req.Version, memberIDRequired, id)
			return
		}
		g.add(id, req, cl, reply)
		return
	}
	if req.InstanceID != nil {
		if cur, ok := g.static[*req.InstanceID]; ok && cur != req.MemberID {
			answer(fencedInstanceID)
			return
		}
	}
	if _, ok := g.pending[req.MemberID]; ok {
		delete(g.pending, req.MemberID)
		g.add(req.MemberID, req, cl, reply)
		return
	}
	m := g.find(req.MemberID)
	if m == nil {
		answer(unknownMemberID)
		return
	}
	g.touch(m)
	changed := !sameProtocols(m.protocols, req.Protocols)
	g.update(m, req, cl)
	switch g.state {
	case CompletingRebalance, Stable:
		if !changed && (g.state == CompletingRebalance || m.id != g.leader) {
			// A retry, or a follower rejoining without changes: the current
			// generation stands.
			reply <- g.joinResult(m, req.Version)
			return
		}
		g.prepareRebalance()
	}
	g.park(m, req.Version, reply)
}

// add makes a new member and starts (or joins) a rebalance.
func (g *group) add(id string, req *kmsg.JoinGroupRequest, cl Client, reply chan<- *kmsg.JoinGroupResponse) {
	m := &member{id: id, instanceID: req.InstanceID, fresh: true}
	g.update(m, req, cl)
	g.touch(m)
	g.members = append(g.members, m)
	if m.instanceID != nil {
		g.static[*m.instanceID] = id
	}
	g.protocolType = req.ProtocolType
	g.log.WithFields(logrus.Fields{"member": id, "client_id": cl.ID, "host": cl.Host}).Info("member joined")
	if g.state != PreparingRebalance {
		g.prepareRebalance()
	}
	g.park(m, req.Version, reply)
}

func (g *group) update(m *member, req *kmsg.JoinGroupRequest, cl Client) {
	m.clientID, m.host = cl.ID, cl.Host
	m.protocols = req.Protocols
	m.session = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	m.rebalance = m.session
	if req.Version >= 1 {
		m.rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
}

// park holds m's JoinGroup until the join phase completes. A JoinGroup
// already parked for m (a retry on a new connection) is told to rejoin.
func (g *group) park(m *member, version int16, reply chan<- *kmsg.JoinGroupResponse) {
	if m.join != nil {
		m.join <- joinError(m.joinVersion, rebalanceInProgress, m.id)
	}
	m.join, m.joinVersion = reply, version
	g.maybeCompleteJoin()
}

// replaceStatic gives a restarted static member (same group.instance.id,
// no member id) a new member id in place of its old one. In a Stable group
// whose chosen protocol stays nothing is rebalanced: the member keeps the
// generation and its assignment (KIP-345). The old id's parked calls are
// fenced.
func (g *group) replaceStatic(old *member, id string, req *kmsg.JoinGroupRequest, cl Client, reply chan<- *kmsg.JoinGroupResponse) {
	g.answerParked(old, fencedInstanceID)
	oldID := old.id
	old.id = id
	g.static[*req.InstanceID] = id
	if g.leader == oldID {
		g.leader = id
	}
	g.update(old, req, cl)
	g.touch(old)
	g.log.WithFields(logrus.Fields{"member": id, "replaces": oldID, "instance_id": *req.InstanceID}).Info("static member rejoined")
	// As Kafka, only a change of the group's protocol forces a rebalance:
	// a restarted client's metadata differs (cooperative assignors encode
	// what they owned, which a fresh process does not know).
	if g.state == Stable && g.chooseProtocol() == g.protocol {
		resp := g.joinResult(old, req.Version)
		// KIP-814: the leader's plan is already in force.
		resp.SkipAssignment = id == g.leader
		reply <- resp
		return
	}
	if g.state != PreparingRebalance {
		g.prepareRebalance()
	}
	g.park(old, req.Version, reply)
}

func sameProtocols(a, b []kmsg.JoinGroupRequestProtocol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Metadata, b[i].Metadata) {
			return false
		}
	}
	return true
}

// checkMember is the common check of SyncGroup, Heartbeat and
// OffsetCommit: the member exists, its static instance is not taken over,
// and it speaks for the current generation.
func (g *group) checkMember(memberID string, instanceID *string, generation int32) (*member, int16) {
	if instanceID != nil {
		if cur, ok := g.static[*instanceID]; ok && cur != memberID {
			return nil, fencedInstanceID
		}
	}
	m := g.find(memberID)
	if m == nil {
		return nil, unknownMemberID
	}
	if generation != g.generation {
		return m, illegalGeneration
	}
	return m, 0
}

// sync handles a SyncGroup: followers park until the leader's plan
// arrives; the leader's plan moves the group to Stable.
func (g *group) sync(req *kmsg.SyncGroupRequest, reply chan<- *kmsg.SyncGroupResponse) {
	m, code := g.checkMember(req.MemberID, req.InstanceID, req.Generation)
	switch {
	case code != 0:
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		code = inconsistentGroupProtocol
	case g.state == PreparingRebalance:
		code = rebalanceInProgress
	}
	if code != 0 {
		reply <- syncError(req.Version, code)
		return
	}
	g.touch(m)
	if g.state == Stable {
		reply <- g.syncResult(m, req.Version)
		return
	}
	if m.sync != nil {
		m.sync <- syncError(m.syncVersion, rebalanceInProgress)
	}
	m.sync, m.syncVersion = reply, req.Version
	if m.id != g.leader {
		return
	}
	for _, a := range req.GroupAssignment {
		if x := g.find(a.MemberID); x != nil {
			x.assignment = a.MemberAssignment
		}
	}
	g.state = Stable
	for _, x := range g.members {
		if x.sync != nil {
			x.sync <- g.syncResult(x, x.syncVersion)
			x.sync = nil
		}
	}
	g.log.WithField("generation", g.generation).Info("rebalance: group stable")
}

func (g *group) syncResult(m *member, version int16) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = version
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.MemberAssignment = m.assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp
}

// heartbeat keeps a member's session alive and tells it of a rebalance.
func (g *group) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	m, code := g.checkMember(req.MemberID, req.InstanceID, req.Generation)
	if code != 0 {
		return code
	}
	g.touch(m)
	if g.state == PreparingRebalance {
		return rebalanceInProgress
	}
	return 0
}

// leave removes members (one in v0-2, a batch by member or instance id
// in v3+) and returns a code per member.
func (g *group) leave(ids []kmsg.LeaveGroupRequestMember) []int16 {
	codes := make([]int16, len(ids))
	for i, l := range ids {
		id := l.MemberID
		if l.InstanceID != nil {
			cur, ok := g.static[*l.InstanceID]
			switch {
			case !ok:
				codes[i] = unknownMemberID
				continue
			case id != "" && id != cur:
				codes[i] = fencedInstanceID
				continue
			}
			id = cur
		}
		if _, ok := g.pending[id]; ok {
			delete(g.pending, id)
			g.maybeCompleteJoin()
			continue
		}
		m := g.find(id)
		if m == nil {
			codes[i] = unknownMemberID
			continue
		}
		g.log.WithField("member", id).Info("member left")
		g.remove(m)
	}
	return codes
}

// cancelJoin forgets a parked JoinGroup whose connection closed. A member
// that was only joining (never in a generation) is removed at once; an
// existing member's session runs from now, and the rebalance drops it at
// its timeout unless it rejoins.
func (g *group) cancelJoin(reply chan<- *kmsg.JoinGroupResponse) {
	m := g.parkedOn(func(m *member) bool { return m.join == reply })
	if m == nil {
		return
	}
	m.join = nil
	if m.fresh {
		g.remove(m)
		return
	}
	g.touch(m)
}

// cancelSync forgets a parked SyncGroup whose connection closed; the
// member's session timeout then decides.
func (g *group) cancelSync(reply chan<- *kmsg.SyncGroupResponse) {
	if m := g.parkedOn(func(m *member) bool { return m.sync == reply }); m != nil {
		m.sync = nil
		g.touch(m)
	}
}

func (g *group) parkedOn(match func(*member) bool) *member {
	for _, m := range g.members {
		if match(m) {
			return m
		}
	}
	return nil
}
