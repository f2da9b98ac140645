package broker

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
)

// sessionFetch is a Fetch v11 of the given session and epoch naming the
// partitions of topic "s" at their offsets, forgetting others; no wait.
func sessionFetch(id, epoch int32, offsets map[int32]int64, forget ...int32) *kmsg.FetchRequest {
	req := fetchReq("s", 0, 0)
	req.SessionID, req.SessionEpoch = id, epoch
	req.Topics[0].Partitions = nil
	for _, p := range slices.Sorted(func(yield func(int32) bool) {
		for p := range offsets {
			if !yield(p) {
				return
			}
		}
	}) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p
		rp.FetchOffset = offsets[p]
		rp.PartitionMaxBytes = 1 << 20
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic = "s"
		ft.Partitions = forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

// answered lists "partition:records" of a fetch response.
func answered(t testing.TB, resp *kmsg.FetchResponse) []string {
	t.Helper()
	var out []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("partition %d: %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
			n := 0
			for _, b := range batches(t, rp.RecordBatches) {
				n += int(b.NumRecords)
			}
			out = append(out, fmt.Sprintf("%d:%d", rp.Partition, n))
		}
	}
	return out
}

// TestFetchSessionProtocol walks one session through KIP-227's cases: the
// full fetch that opens it, incremental fetches answering only changed
// partitions, forgotten partitions, wrong epochs and ids, and closing.
func TestFetchSessionProtocol(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "s", 3)
	produceSync(t, cl, "s", 0, "a", "b")
	produceSync(t, cl, "s", 1, "c")
	rc := dialRaw(t, b.Addr())

	var id int32
	steps := []struct {
		name    string
		req     func() *kmsg.FetchRequest
		before  func()
		wantErr *kerr.Error
		want    []string
	}{
		{name: "full fetch opens", req: func() *kmsg.FetchRequest {
			return sessionFetch(0, 0, map[int32]int64{0: 0, 1: 0, 2: 0})
		}, want: []string{"0:2", "1:1", "2:0"}},
		{name: "nothing changed", req: func() *kmsg.FetchRequest {
			return sessionFetch(id, 1, map[int32]int64{0: 2, 1: 1})
		}, want: nil},
		{name: "one partition grew", before: func() { produceSync(t, cl, "s", 2, "d") }, req: func() *kmsg.FetchRequest {
			return sessionFetch(id, 2, nil)
		}, want: []string{"2:1"}},
		{name: "offset moved on, nothing new", req: func() *kmsg.FetchRequest {
			return sessionFetch(id, 3, map[int32]int64{2: 1})
		}, want: nil},
		{name: "forgotten partition is not answered", before: func() { produceSync(t, cl, "s", 1, "e") }, req: func() *kmsg.FetchRequest {
			return sessionFetch(id, 4, nil, 1)
		}, want: nil},
		{name: "re-added partition is answered", req: func() *kmsg.FetchRequest {
			return sessionFetch(id, 5, map[int32]int64{1: 1})
		}, want: []string{"1:1"}},
		{name: "stale epoch", req: func() *kmsg.FetchRequest {
			return sessionFetch(id, 5, nil)
		}, wantErr: kerr.InvalidFetchSessionEpoch},
		{name: "unknown session", req: func() *kmsg.FetchRequest {
			return sessionFetch(id+1, 1, nil)
		}, wantErr: kerr.FetchSessionIDNotFound},
		{name: "epoch -1 closes and fetches in full", req: func() *kmsg.FetchRequest {
			return sessionFetch(id, -1, map[int32]int64{0: 2})
		}, want: []string{"0:0"}},
		{name: "closed session is gone", req: func() *kmsg.FetchRequest {
			return sessionFetch(id, 6, nil)
		}, wantErr: kerr.FetchSessionIDNotFound},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		r, ok := rc.roundTrip(st.req())
		if !ok {
			t.Fatalf("%s: connection closed", st.name)
		}
		resp := r.(*kmsg.FetchResponse)
		var wantCode int16
		if st.wantErr != nil {
			wantCode = st.wantErr.Code
		}
		if resp.ErrorCode != wantCode {
			t.Fatalf("%s: error %v, want %v", st.name, kerr.ErrorForCode(resp.ErrorCode), st.wantErr)
		}
		if st.wantErr != nil {
			continue
		}
		if got := answered(t, resp); !slices.Equal(got, st.want) {
			t.Fatalf("%s: answered %v, want %v", st.name, got, st.want)
		}
		if id == 0 {
			if id = resp.SessionID; id == 0 {
				t.Fatalf("%s: no session id", st.name)
			}
		}
	}
	if n := b.fetchSessions.count(); n != 0 {
		t.Fatalf("%d sessions cached after the close, want 0", n)
	}
}

// TestFetchSessionCacheEviction: the cache stays within its session and
// partition limits by dropping the least recently used session.
func TestFetchSessionCacheEviction(t *testing.T) {
	full := func(partitions ...int32) *kmsg.FetchRequest {
		offsets := make(map[int32]int64)
		for _, p := range partitions {
			offsets[p] = 0
		}
		return sessionFetch(0, 0, offsets)
	}
	tests := []struct {
		name           string
		maxCount       int
		maxParts       int
		sessions       [][]int32 // partitions of each session, opened in order
		use            int       // index of a session used again before the last opens
		wantKept       []int
		wantPartitions int
	}{
		{name: "count limit drops the oldest", maxCount: 2, maxParts: 100, sessions: [][]int32{{0}, {1}, {2}}, use: -1, wantKept: []int{1, 2}, wantPartitions: 2},
		{name: "a used session is kept", maxCount: 2, maxParts: 100, sessions: [][]int32{{0}, {1}, {2}}, use: 0, wantKept: []int{0, 2}, wantPartitions: 2},
		{name: "partition limit drops the oldest", maxCount: 10, maxParts: 4, sessions: [][]int32{{0, 1}, {2, 3}, {4, 5}}, use: -1, wantKept: []int{1, 2}, wantPartitions: 4},
		{name: "one session over the limit stays", maxCount: 10, maxParts: 2, sessions: [][]int32{{0}, {1, 2, 3}}, use: -1, wantKept: []int{1}, wantPartitions: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFetchSessions(tc.maxCount, tc.maxParts)
			var ids []int32
			for i, parts := range tc.sessions {
				if i == len(tc.sessions)-1 && tc.use >= 0 {
					s := fs.get(ids[tc.use], "")
					if s == nil {
						t.Fatalf("session %d gone before use", tc.use)
					}
				}
				s, _, err := fs.open(full(parts...), "")
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, s.id)
				s.mu.Unlock()
			}
			var kept []int
			for i, id := range ids {
				if fs.get(id, "") != nil {
					kept = append(kept, i)
				}
			}
			if !slices.Equal(kept, tc.wantKept) {
				t.Fatalf("kept sessions %v, want %v", kept, tc.wantKept)
			}
			if fs.partitions != tc.wantPartitions {
				t.Fatalf("cache charges %d partitions, want %d", fs.partitions, tc.wantPartitions)
			}
		})
	}
}

// TestFetchSessionOtherPrincipal: a session id is no use to another
// principal, who gets FETCH_SESSION_ID_NOT_FOUND and no data.
func TestFetchSessionOtherPrincipal(t *testing.T) {
	fs := newFetchSessions(10, 100)
	s, _, err := fs.open(sessionFetch(0, 0, map[int32]int64{0: 0}), "alice")
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Unlock()
	if _, _, err := fs.open(sessionFetch(s.id, 1, nil), "mallory"); err != kerr.FetchSessionIDNotFound {
		t.Fatalf("other principal: %v, want %v", err, kerr.FetchSessionIDNotFound)
	}
	got, incremental, err := fs.open(sessionFetch(s.id, 1, nil), "alice")
	if err != nil || !incremental {
		t.Fatalf("owner: incremental %v, %v", incremental, err)
	}
	got.mu.Unlock()
}

// TestFetchSessionsFranzGo: franz-go, which opens a session by default,
// reads every record of many partitions, the later fetches incremental.
func TestFetchSessionsFranzGo(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	const partitions, perPartition = 200, 3
	cl := newClient(t, b.Addr(), kgo.DefaultProduceTopic("s"))
	createTopic(t, cl, "s", partitions)
	var recs []*kgo.Record
	for i := range partitions * perPartition {
		recs = append(recs, &kgo.Record{Partition: int32(i % partitions), Value: fmt.Appendf(nil, "%d", i)})
	}
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := consumeN(t, b.Addr(), "s", partitions*perPartition, kgo.FetchMaxWait(50*time.Millisecond))
	seen := make(map[string]bool)
	for _, r := range got {
		if seen[string(r.Value)] {
			t.Fatalf("record %s twice", r.Value)
		}
		seen[string(r.Value)] = true
	}
	if n := b.fetchSessions.count(); n == 0 {
		t.Fatal("franz-go consumed without a fetch session")
	}
	if got := scrapeMetric(t, b, "unilog_fetch_session_partitions"); got != fmt.Sprint(partitions) {
		t.Fatalf("unilog_fetch_session_partitions %s, want %d", got, partitions)
	}
}

// revocableACL allows everything until consume of one topic is revoked.
type revocableACL struct{ revoked atomic.Bool }

func (a *revocableACL) Allow(_ string, op auth.Operation, name string) bool {
	return !(a.revoked.Load() && op == auth.Consume && name == "s")
}

// TestFetchSessionACLRevoked: partitions a session holds are authorized on
// every fetch, not only when they joined it, so an incremental fetch that
// does not name them still answers TOPIC_AUTHORIZATION_FAILED once the ACL
// stops allowing them.
func TestFetchSessionACLRevoked(t *testing.T) {
	acl := &revocableACL{}
	cfg := testConfig(t, t.TempDir())
	cfg.Security.ACL = acl
	b := startBroker(t, cfg)
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "s", 2)
	produceSync(t, cl, "s", 0, "a")
	c := &conn{b: b, ctx: context.Background(), auth: connAuth{user: "alice"}}
	fetch := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		t.Helper()
		return handleDecoded(t, c, req).(*kmsg.FetchResponse)
	}
	full := fetch(sessionFetch(0, 0, map[int32]int64{0: 0, 1: 0}))
	if got := answered(t, full); !slices.Equal(got, []string{"0:1", "1:0"}) {
		t.Fatalf("full fetch answered %v", got)
	}
	acl.revoked.Store(true)
	resp := fetch(sessionFetch(full.SessionID, 1, nil))
	var denied []int32
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(rp.RecordBatches) != 0 {
				t.Fatalf("partition %d: error %d, %d record bytes after the ACL was revoked", rp.Partition, rp.ErrorCode, len(rp.RecordBatches))
			}
			denied = append(denied, rp.Partition)
		}
	}
	if !slices.Equal(denied, []int32{0, 1}) {
		t.Fatalf("denied partitions %v, want [0 1]", denied)
	}
}
