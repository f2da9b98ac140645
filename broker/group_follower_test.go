package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFollowerAnswersNotCoordinator: a demoted node answers every group
// API with NOT_COORDINATOR, at each version's place for it, instead of the
// commits it holds from its own term; promoted again, it serves them.
func TestFollowerAnswersNotCoordinator(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "f", 2)
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "f", Partition: 1, At: 42, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(testCtx(t), "g", offs); err != nil {
		t.Fatal(err)
	}

	b.Demote()
	nc := kerr.NotCoordinator.Code
	fetch := func(v int16) kmsg.Request {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version = v
		if v >= 8 {
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "g"
			r.Groups = append(r.Groups, g)
		} else {
			r.Group = "g"
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic, rt.Partitions = "f", []int32{1}
			r.Topics = append(r.Topics, rt)
		}
		return r
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis = "g", "consumer", 10000
	heartbeat := kmsg.NewPtrHeartbeatRequest()
	heartbeat.Group = "g"
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Groups = []string{"g"}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g"}
	list := kmsg.NewPtrListGroupsRequest()

	c := dialRaw(t, b.Addr())
	for _, tc := range []struct {
		req  kmsg.Request
		code func(kmsg.Response) []int16
	}{
		{commitF1(2), func(r kmsg.Response) []int16 {
			return []int16{r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode}
		}},
		{fetch(1), func(r kmsg.Response) []int16 {
			return []int16{r.(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0].ErrorCode}
		}},
		{fetch(5), func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.OffsetFetchResponse).ErrorCode} }},
		{fetch(8), func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode} }},
		{join, func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.JoinGroupResponse).ErrorCode} }},
		{heartbeat, func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.HeartbeatResponse).ErrorCode} }},
		{describe, func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode} }},
		{del, func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode} }},
	} {
		resp, ok := c.roundTrip(tc.req)
		if !ok {
			t.Fatalf("%s v%d: connection closed", kmsg.NameForKey(tc.req.Key()), tc.req.GetVersion())
		}
		for _, code := range tc.code(resp) {
			if code != nc {
				t.Errorf("%s v%d: error %d, want NOT_COORDINATOR", kmsg.NameForKey(tc.req.Key()), tc.req.GetVersion(), code)
			}
		}
	}
	if resp, ok := c.roundTrip(list); !ok || len(resp.(*kmsg.ListGroupsResponse).Groups) != 0 || resp.(*kmsg.ListGroupsResponse).ErrorCode != 0 {
		t.Errorf("ListGroups on a follower: %+v", resp)
	}

	if err := b.Promote(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	got, err := adm.FetchOffsets(testCtx(t), "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := got.Lookup("f", 1); !ok || o.At != 42 {
		t.Fatalf("after Promote: committed %+v, want 42", o)
	}
}

// TestRestartAwaitingRoleAnswersNotCoordinator: a node restarting in a
// replica group (Config.AwaitRole) loads the offsets its own log holds,
// which are those of its last term if it led then: until Promote or
// Demote says what it is, it must not serve them (the failover soak read
// a deposed leader's commit back from it while the new leader had
// acknowledged newer ones), nor take a commit into its log.
func TestRestartAwaitingRoleAnswersNotCoordinator(t *testing.T) {
	dir := t.TempDir()
	first := startBroker(t, testConfig(t, dir))
	cl := newClient(t, first.Addr())
	createTopic(t, cl, "f", 2)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "f", Partition: 1, At: 42, LeaderEpoch: -1})
	if _, err := kadm.NewClient(cl).CommitOffsets(testCtx(t), "g", offs); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(t, dir)
	cfg.AwaitRole = true
	b := startBroker(t, cfg)
	c := dialRaw(t, b.Addr())
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 8
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = "g"
	fetch.Groups = append(fetch.Groups, g)
	end := b.LogEndOffset()

	resp, ok := c.roundTrip(fetch)
	if !ok {
		t.Fatal("OffsetFetch: connection closed")
	}
	if fg := resp.(*kmsg.OffsetFetchResponse).Groups[0]; fg.ErrorCode != kerr.NotCoordinator.Code {
		t.Errorf("OffsetFetch before the role is known: error %d and %+v, want NOT_COORDINATOR", fg.ErrorCode, fg.Topics)
	}
	resp, ok = c.roundTrip(commitF1(8))
	if !ok {
		t.Fatal("OffsetCommit: connection closed")
	}
	if code := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotCoordinator.Code {
		t.Errorf("OffsetCommit before the role is known: error %d, want NOT_COORDINATOR", code)
	}
	if got := b.LogEndOffset(); got != end {
		t.Errorf("the log grew from %d to %d before the role is known", end, got)
	}

	// Leading from here on (no Demote before): the offsets it loaded are
	// its log's, served now.
	if err := b.Promote(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	got, err := kadm.NewClient(newClient(t, b.Addr())).FetchOffsets(testCtx(t), "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := got.Lookup("f", 1); !ok || o.At != 42 {
		t.Fatalf("after Promote: committed %+v, want 42", o)
	}
}

// commitF1 commits offset 43 of partition 1 of topic f for group g, past
// the 42 the tests commit first.
func commitF1(version int16) *kmsg.OffsetCommitRequest {
	r := offsetCommit(version, "g", 43, "f")
	r.Topics[0].Partitions[0].Partition = 1
	return r
}
