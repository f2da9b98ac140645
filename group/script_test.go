package group

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/clock/clocktest"
	"github.com/unilog/unilog/internal/scripttest"
)

// TestScripts runs the group state-machine scripts in testdata/. A script
// is a sequence of commands, each followed by the lines it is expected to
// print, prefixed "> ". Commands act on one group "g" with a fake clock:
//
//	join A client=c1 [member=ID] [instance=I] [v=N] [protocols=p1,p2] [meta=M] [session=10s] [rebalance=10s]
//	sync A member=ID gen=N [v=N] [protocol=P] [assign=ID:X,ID:Y]
//	heartbeat member=ID gen=N [instance=I]
//	leave member=ID | leave instance=I[,I2] (v3 batch)
//	commit member=ID gen=N offsets=topic/partition:offset,...
//	fetch
//	describe
//	tick 5s
//	close A          (the connection of parked call A closes)
//
// join and sync are parked calls named by a label; their answer is
// printed ("A: join ...") after whichever command completes them. After
// each command the runner waits until the group has processed everything,
// so the output is deterministic. Run with -rewrite to regenerate.
func TestScripts(t *testing.T) {
	scripttest.RunAll(t, "testdata/*.txt", func(t *testing.T) func(string) []string {
		clock := clocktest.New()
		r := &scriptRunner{t: t, clock: clock, c: openTest(t, newMemLog(), clock), calls: make(map[string]*scriptCall)}
		return r.run
	})
}

type scriptCall struct {
	label string
	join  chan *kmsg.JoinGroupResponse
	sync  chan *kmsg.SyncGroupResponse
	g     *group
}

type scriptRunner struct {
	t     *testing.T
	clock *clocktest.Fake
	c     *Coordinator
	calls map[string]*scriptCall
}

const scriptGroup = "g"

func args(fields []string) map[string]string {
	m := make(map[string]string)
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}

func (r *scriptRunner) num(a map[string]string, k string, def int) int {
	v, ok := a[k]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.t.Fatalf("%s=%s: %v", k, v, err)
	}
	return n
}

func (r *scriptRunner) dur(a map[string]string, k string, def time.Duration) int32 {
	d := def
	if v, ok := a[k]; ok {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			r.t.Fatalf("%s=%s: %v", k, v, err)
		}
	}
	return int32(d / time.Millisecond)
}

func strPtr(a map[string]string, k string) *string {
	if v, ok := a[k]; ok {
		return &v
	}
	return nil
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

// run executes one command and returns what it printed.
func (r *scriptRunner) run(line string) []string {
	f := strings.Fields(line)
	cmd, rest := f[0], f[1:]
	var out []string
	switch cmd {
	case "join":
		label, a := rest[0], args(rest[1:])
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = int16(r.num(a, "v", 5))
		req.Group = scriptGroup
		req.MemberID = a["member"]
		req.InstanceID = strPtr(a, "instance")
		req.ProtocolType = "consumer"
		req.SessionTimeoutMillis = r.dur(a, "session", 10*time.Second)
		req.RebalanceTimeoutMillis = r.dur(a, "rebalance", 10*time.Second)
		protos := "range"
		if p, ok := a["protocols"]; ok {
			protos = p
		}
		for _, p := range strings.Split(protos, ",") {
			jp := kmsg.NewJoinGroupRequestProtocol()
			jp.Name = p
			jp.Metadata = []byte(a["meta"])
			req.Protocols = append(req.Protocols, jp)
		}
		call := &scriptCall{label: label, join: make(chan *kmsg.JoinGroupResponse, 1)}
		r.calls[label] = call
		if code := r.c.validJoin(req); code != 0 {
			call.join <- joinError(req.Version, code, req.MemberID)
			break
		}
		call.g = r.c.group(scriptGroup, true)
		call.g.do(func() { call.g.join(req, Client{ID: a["client"], Host: "/127.0.0.1"}, call.join) })
	case "sync":
		label, a := rest[0], args(rest[1:])
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version = int16(r.num(a, "v", 3))
		req.Group = scriptGroup
		req.MemberID = a["member"]
		req.InstanceID = strPtr(a, "instance")
		req.Generation = int32(r.num(a, "gen", -1))
		if p, ok := a["protocol"]; ok {
			req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), &p
		}
		if as, ok := a["assign"]; ok {
			for _, kv := range strings.Split(as, ",") {
				id, plan, _ := strings.Cut(kv, ":")
				ga := kmsg.NewSyncGroupRequestGroupAssignment()
				ga.MemberID, ga.MemberAssignment = id, []byte(plan)
				req.GroupAssignment = append(req.GroupAssignment, ga)
			}
		}
		call := &scriptCall{label: label, sync: make(chan *kmsg.SyncGroupResponse, 1)}
		r.calls[label] = call
		call.g = r.c.group(scriptGroup, false)
		if call.g == nil {
			call.sync <- syncError(req.Version, unknownMemberID)
			break
		}
		call.g.do(func() { call.g.sync(req, call.sync) })
	case "heartbeat":
		a := args(rest)
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group = scriptGroup
		req.MemberID = a["member"]
		req.InstanceID = strPtr(a, "instance")
		req.Generation = int32(r.num(a, "gen", -1))
		out = append(out, "heartbeat err="+errName(r.c.Heartbeat(req).ErrorCode))
	case "leave":
		a := args(rest)
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group = scriptGroup
		if inst, ok := a["instance"]; ok {
			req.Version = 3
			for _, i := range strings.Split(inst, ",") {
				lm := kmsg.NewLeaveGroupRequestMember()
				lm.InstanceID = kmsg.StringPtr(i)
				req.Members = append(req.Members, lm)
			}
		} else {
			req.MemberID = a["member"]
		}
		resp := r.c.LeaveGroup(req)
		if req.Version < 3 {
			out = append(out, "leave err="+errName(resp.ErrorCode))
		}
		for _, m := range resp.Members {
			out = append(out, fmt.Sprintf("leave instance=%s err=%s", *m.InstanceID, errName(m.ErrorCode)))
		}
	case "commit":
		a := args(rest)
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 7
		req.Group = scriptGroup
		req.MemberID = a["member"]
		req.Generation = int32(r.num(a, "gen", -1))
		for _, o := range strings.Split(a["offsets"], ",") {
			tp, off, _ := strings.Cut(o, ":")
			topic, part, _ := strings.Cut(tp, "/")
			p, _ := strconv.Atoi(part)
			n, _ := strconv.Atoi(off)
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = int32(p), int64(n)
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp := r.c.OffsetCommit(context.Background(), req)
		out = append(out, "commit err="+errName(resp.Topics[0].Partitions[0].ErrorCode))
	case "fetch":
		committed := r.c.Committed(scriptGroup)
		var lines []string
		for tp, o := range committed {
			lines = append(lines, fmt.Sprintf("offset %s/%d=%d", tp.Topic, tp.Partition, o.Offset))
		}
		sort.Strings(lines)
		out = append(out, lines...)
	case "describe":
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{scriptGroup}
		dg := r.c.DescribeGroups(req).Groups[0]
		var s Stats
		for _, st := range r.c.Groups() {
			if st.Group == scriptGroup {
				s = st
			}
		}
		out = append(out, fmt.Sprintf("state=%s gen=%d protocol=%s rebalances=%d", dg.State, s.Generation, dg.Protocol, s.Rebalances))
		for _, m := range dg.Members {
			inst := ""
			if m.InstanceID != nil {
				inst = " instance=" + *m.InstanceID
			}
			out = append(out, fmt.Sprintf("member %s client=%s%s assignment=%s", m.MemberID, m.ClientID, inst, m.MemberAssignment))
		}
	case "tick":
		d, err := time.ParseDuration(rest[0])
		if err != nil {
			r.t.Fatal(err)
		}
		r.clock.Advance(d)
	case "close":
		call := r.calls[rest[0]]
		if call == nil {
			r.t.Fatalf("close %s: no such call parked", rest[0])
		}
		if call.join != nil {
			call.g.do(func() { call.g.cancelJoin(call.join) })
		} else {
			call.g.do(func() { call.g.cancelSync(call.sync) })
		}
	default:
		r.t.Fatalf("unknown command %q", line)
	}
	// Everything posted so far has run once a no-op has.
	r.c.onGroup(scriptGroup, false, func(*group) {})
	return append(out, r.answered()...)
}

// answered prints the parked calls answered since the last command, by label.
func (r *scriptRunner) answered() []string {
	labels := make([]string, 0, len(r.calls))
	for l := range r.calls {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	var out []string
	for _, l := range labels {
		call := r.calls[l]
		select {
		case resp := <-call.join:
			s := fmt.Sprintf("%s: join err=%s member=%s", l, errName(resp.ErrorCode), resp.MemberID)
			if resp.ErrorCode == 0 {
				s += fmt.Sprintf(" gen=%d leader=%s protocol=%s", resp.Generation, resp.LeaderID, *resp.Protocol)
				var ms []string
				for _, m := range resp.Members {
					ms = append(ms, m.MemberID)
				}
				if len(ms) > 0 {
					s += " members=" + strings.Join(ms, ",")
				}
				if resp.SkipAssignment {
					s += " skip-assignment"
				}
			}
			out = append(out, s)
			delete(r.calls, l)
		case resp := <-call.sync:
			s := fmt.Sprintf("%s: sync err=%s", l, errName(resp.ErrorCode))
			if resp.ErrorCode == 0 {
				s += " assignment=" + string(resp.MemberAssignment)
			}
			out = append(out, s)
			delete(r.calls, l)
		default:
		}
	}
	return out
}
