package broker

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
	"github.com/unilog/unilog/group"
)

// groupACL: alice owns groups app and hidden and the topics; bob may use groups app
// and bobs but consume only orders; carol may consume orders but use no
// group.
const groupACL = `unilog-acl 1
alice produce orders secret kg
alice consume orders secret kg
alice admin   *
alice group   app hidden
bob   consume orders
bob   group   app bobs
carol consume orders
`

// groupACLBroker serves groupACL with one record in each of orders and
// secret.
func groupACLBroker(t *testing.T) *Broker {
	t.Helper()
	b := saslACLBroker(t, groupACL, nil)
	admin := userClient(t, b, "alice")
	for _, topic := range []string{"orders", "secret"} {
		createTopic(t, admin, topic, 1)
		produceSync(t, admin, topic, 0, topic+"-1")
	}
	return b
}

// TestACLGroupConsumer: a principal allowed on the group and its topics
// consumes through franz-go's group consumer and commits; one without
// the group permission is told GROUP_AUTHORIZATION_FAILED by franz-go.
func TestACLGroupConsumer(t *testing.T) {
	b := groupACLBroker(t)
	cl := newClient(t, b.Addr(), kgo.SASL(scramMech(auth.ScramSHA256, "alice", "alice-pw")),
		kgo.ConsumerGroup("app"), kgo.ConsumeTopics("orders", "secret"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	var got []string
	for len(got) < 2 {
		fs := cl.PollFetches(testCtx(t))
		if err := fs.Err0(); err != nil {
			t.Fatalf("alice polling group app: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	sort.Strings(got)
	if strings.Join(got, ",") != "orders-1,secret-1" {
		t.Fatalf("alice consumed %v", got)
	}
	if err := cl.CommitUncommittedOffsets(testCtx(t)); err != nil {
		t.Fatalf("alice committing: %v", err)
	}
	offs, err := kadm.NewClient(cl).FetchOffsets(testCtx(t), "app")
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"orders", "secret"} {
		if o, ok := offs.Lookup(topic, 0); !ok || o.Err != nil || o.At != 1 {
			t.Errorf("app committed %s: %+v %v, want offset 1", topic, o, ok)
		}
	}

	carol := newClient(t, b.Addr(), kgo.SASL(scramMech(auth.ScramSHA256, "carol", "carol-pw")),
		kgo.ConsumerGroup("app"), kgo.ConsumeTopics("orders"))
	for {
		err := carol.PollFetches(testCtx(t)).Err0()
		if errors.Is(err, kerr.GroupAuthorizationFailed) {
			break
		}
		if err != nil {
			t.Fatalf("carol polling group app: %v, want GROUP_AUTHORIZATION_FAILED", err)
		}
	}
}

// loginRaw opens a raw connection logged in as user with PLAIN.
func loginRaw(t *testing.T, b *Broker, user string) *rawConn {
	t.Helper()
	c := dialRaw(t, b.Addr())
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, auth.Plain
	if resp, ok := c.roundTrip(hs); !ok || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		t.Fatalf("%s handshake: %+v %v", user, resp, ok)
	}
	sa := kmsg.NewPtrSASLAuthenticateRequest()
	sa.Version, sa.SASLAuthBytes = 2, []byte("\x00"+user+"\x00"+testPasswords[user])
	if resp, ok := c.roundTrip(sa); !ok || resp.(*kmsg.SASLAuthenticateResponse).ErrorCode != 0 {
		t.Fatalf("%s login: %+v %v", user, resp, ok)
	}
	return c
}

// codeName is "ok" or the Kafka name of an error code.
func codeName(code int16) string {
	if code == 0 {
		return "ok"
	}
	var ke *kerr.Error
	if errors.As(kerr.ErrorForCode(code), &ke) {
		return ke.Message
	}
	return fmt.Sprint(code)
}

// groupAnswer sums a group API's response up as sorted "what:CODE"
// entries ("" is the top-level code, "topic/partition@offset" an
// OffsetFetch partition), or the group names of a ListGroups.
func groupAnswer(resp kmsg.Response) string {
	var out []string
	add := func(what string, code int16) { out = append(out, what+":"+codeName(code)) }
	switch r := resp.(type) {
	case *kmsg.FindCoordinatorResponse:
		if r.Version < 4 {
			add("", r.ErrorCode)
		}
		for _, c := range r.Coordinators {
			add(c.Key, c.ErrorCode)
		}
	case *kmsg.JoinGroupResponse:
		add("", r.ErrorCode)
	case *kmsg.SyncGroupResponse:
		add("", r.ErrorCode)
	case *kmsg.HeartbeatResponse:
		add("", r.ErrorCode)
	case *kmsg.LeaveGroupResponse:
		add("", r.ErrorCode)
	case *kmsg.OffsetCommitResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(fmt.Sprintf("%s/%d", t.Topic, p.Partition), p.ErrorCode)
			}
		}
	case *kmsg.OffsetFetchResponse:
		if r.Version >= 2 && r.Version < 8 {
			add("", r.ErrorCode)
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(fmt.Sprintf("%s/%d@%d", t.Topic, p.Partition, p.Offset), p.ErrorCode)
			}
		}
		for _, g := range r.Groups {
			add(g.Group, g.ErrorCode)
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					add(fmt.Sprintf("%s/%s/%d@%d", g.Group, t.Topic, p.Partition, p.Offset), p.ErrorCode)
				}
			}
		}
	case *kmsg.OffsetDeleteResponse:
		add("", r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(fmt.Sprintf("%s/%d", t.Topic, p.Partition), p.ErrorCode)
			}
		}
	case *kmsg.ListGroupsResponse:
		for _, g := range r.Groups {
			out = append(out, g.Group)
		}
	case *kmsg.DescribeGroupsResponse:
		for _, g := range r.Groups {
			add(g.Group, g.ErrorCode)
		}
	case *kmsg.DeleteGroupsResponse:
		for _, g := range r.Groups {
			add(g.Group, g.ErrorCode)
		}
	default:
		return fmt.Sprintf("unexpected %T", resp)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func findCoordinator(version int16, typ int8, keys ...string) *kmsg.FindCoordinatorRequest {
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.Version, r.CoordinatorType = version, typ
	if version < 4 {
		r.CoordinatorKey = keys[0]
	} else {
		r.CoordinatorKeys = keys
	}
	return r
}

func offsetCommit(version int16, group string, offset int64, topics ...string) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version, r.Group, r.Generation = version, group, -1
	for _, topic := range topics {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// offsetFetch asks v0-7 for partition 0 of topics, or for every committed
// topic when topics is nil.
func offsetFetch(version int16, group string, topics ...string) *kmsg.OffsetFetchRequest {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version, r.Group = version, group
	for _, topic := range topics {
		r.Topics = append(r.Topics, kmsg.OffsetFetchRequestTopic{Topic: topic, Partitions: []int32{0}})
	}
	return r
}

// offsetFetchGroups asks v9 for each group's partition 0 of the topics
// named after "=" ("app" alone: every committed topic).
func offsetFetchGroups(groups ...string) *kmsg.OffsetFetchRequest {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 9
	for _, g := range groups {
		name, topics, named := strings.Cut(g, "=")
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = name
		if named {
			for _, topic := range strings.Split(topics, ",") {
				rg.Topics = append(rg.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: topic, Partitions: []int32{0}})
			}
		}
		r.Groups = append(r.Groups, rg)
	}
	return r
}

func offsetDelete(group string, topics ...string) *kmsg.OffsetDeleteRequest {
	r := kmsg.NewPtrOffsetDeleteRequest()
	r.Group = group
	for _, topic := range topics {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// TestACLGroupAPIs sends every group API, at old and new versions, as
// principals with and without the group and topic permissions, in order:
// the cases build on the commits of the ones before.
func TestACLGroupAPIs(t *testing.T) {
	b := groupACLBroker(t)
	conns := make(map[string]*rawConn)
	for _, u := range []string{"alice", "bob", "carol"} {
		conns[u] = loginRaw(t, b, u)
	}
	join := rawJoin("")
	join.Version, join.Group = 9, "app"
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version, sync.Group, sync.Generation = 5, "app", 1
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group = 4, "app"
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 5, "app"
	leave.Members = append(leave.Members, kmsg.NewLeaveGroupRequestMember())
	listGroups := func() *kmsg.ListGroupsRequest {
		r := kmsg.NewPtrListGroupsRequest()
		r.Version = 5
		return r
	}
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Version, describe.Groups = 5, []string{"app", "zzz"}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version, del.Groups = 2, []string{"app", "bobs"}
	const (
		groupDenied = "GROUP_AUTHORIZATION_FAILED"
		topicDenied = "TOPIC_AUTHORIZATION_FAILED"
	)
	for i, tc := range []struct {
		user string
		req  kmsg.Request
		want string
	}{
		{"alice", offsetCommit(9, "app", 1, "orders", "secret"), "orders/0:ok secret/0:ok"},
		{"alice", offsetCommit(2, "hidden", 1, "orders"), "orders/0:ok"},
		{"alice", findCoordinator(3, 0, "app"), ":ok"},
		{"carol", findCoordinator(0, 0, "app"), ":" + groupDenied},
		{"bob", findCoordinator(4, 0, "app", "other"), "app:ok other:" + groupDenied},
		{"bob", findCoordinator(5, 1, "tx"), "tx:TRANSACTIONAL_ID_AUTHORIZATION_FAILED"},
		{"carol", join, ":" + groupDenied},
		{"carol", sync, ":" + groupDenied},
		{"carol", hb, ":" + groupDenied},
		{"carol", leave, ":" + groupDenied},
		// A denied topic is refused, the rest committed.
		{"bob", offsetCommit(9, "bobs", 5, "orders", "secret"), "orders/0:ok secret/0:" + topicDenied},
		{"bob", offsetCommit(9, "bobs", 6, "secret"), "secret/0:" + topicDenied},
		{"carol", offsetCommit(2, "app", 7, "orders"), "orders/0:" + groupDenied},
		{"carol", offsetFetch(1, "app", "orders"), "orders/0@-1:" + groupDenied},
		{"carol", offsetFetch(5, "app", "orders"), ":" + groupDenied},
		{"carol", offsetFetchGroups("app"), "app:" + groupDenied},
		// Every committed topic: only those bob may consume.
		{"bob", offsetFetch(5, "app"), ":ok orders/0@1:ok"},
		{"bob", offsetFetch(7, "app", "orders", "secret"), ":ok orders/0@1:ok secret/0@-1:" + topicDenied},
		{"bob", offsetFetch(1, "app", "secret"), "secret/0@-1:" + topicDenied},
		{"bob", offsetFetchGroups("app", "bobs=secret", "zzz", "hidden=orders"),
			"app/orders/0@1:ok app:ok bobs/secret/0@-1:" + topicDenied + " bobs:ok hidden:" + groupDenied + " zzz:" + groupDenied},
		{"alice", offsetFetchGroups("app=orders,secret"), "app/orders/0@1:ok app/secret/0@1:ok app:ok"},
		{"alice", listGroups(), "app hidden"},
		{"bob", listGroups(), "app bobs"},
		{"carol", listGroups(), ""},
		{"bob", describe, "app:ok zzz:" + groupDenied},
		{"carol", offsetDelete("app", "orders"), ":" + groupDenied},
		{"bob", offsetDelete("bobs", "secret"), ":ok secret/0:" + topicDenied},
		{"carol", del, "app:" + groupDenied + " bobs:" + groupDenied},
	} {
		resp, ok := conns[tc.user].roundTrip(tc.req)
		if !ok {
			t.Fatalf("case %d: %s %T v%d: connection closed", i, tc.user, tc.req, tc.req.GetVersion())
		}
		if got := groupAnswer(resp); got != tc.want {
			t.Errorf("case %d: %s %T v%d:\n got %s\nwant %s", i, tc.user, tc.req, tc.req.GetVersion(), got, tc.want)
		}
	}
	// Denied commits stored nothing.
	committed := b.groups.Load().Committed("bobs")
	if len(committed) != 1 || committed[group.TopicPartition{Topic: "orders"}].Offset != 5 {
		t.Fatalf("group bobs committed %v, want orders/0 at 5 only", committed)
	}
}

// TestACLGroupKcat: kcat's balanced consumer (librdkafka) logged in with
// SASL as a principal allowed on the group and topic consumes and
// commits.
func TestACLGroupKcat(t *testing.T) {
	b := groupACLBroker(t)
	cl := userClient(t, b, "alice")
	createTopic(t, cl, "kg", 2)
	consumeInTwoRuns(t, cl, "app", "kg", 2, func(n int) []string {
		return kcatGroupRun(t, b.Addr(), "app", "kg", n,
			"-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=SCRAM-SHA-512",
			"-X", "sasl.username=alice", "-X", "sasl.password="+testPasswords["alice"])
	})
}
