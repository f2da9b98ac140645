package group

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/clock/clocktest"
)

func commitReq(group string, offs map[TopicPartition]int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group = group
	for tp, o := range offs {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = tp.Topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = tp.Partition, o, 3
		rp.Metadata = kmsg.StringPtr("m")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func mustCommit(t *testing.T, c *Coordinator, group string, offs map[TopicPartition]int64) {
	t.Helper()
	for _, rt := range c.OffsetCommit(context.Background(), commitReq(group, offs)).Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("commit %s %s/%d: %v", group, rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
}

func offsetsOf(c *Coordinator, group string) map[TopicPartition]int64 {
	out := make(map[TopicPartition]int64)
	for tp, o := range c.Committed(group) {
		out[tp] = o.Offset
	}
	return out
}

// TestOffsetsReplay reopens a coordinator over the same log: commits,
// overwrites, OffsetDelete and DeleteGroups tombstones all replay to the
// same view.
func TestOffsetsReplay(t *testing.T) {
	log := newMemLog()
	c := openTest(t, log, clocktest.New())
	mustCommit(t, c, "a", map[TopicPartition]int64{{"t", 0}: 5, {"t", 1}: 6, {"u", 0}: 1})
	mustCommit(t, c, "a", map[TopicPartition]int64{{"t", 0}: 9})
	mustCommit(t, c, "b", map[TopicPartition]int64{{"t", 0}: 2})
	mustCommit(t, c, "gone", map[TopicPartition]int64{{"t", 0}: 2})

	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "a"
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic = "u"
	odt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
	od.Topics = append(od.Topics, odt)
	if resp := c.OffsetDelete(context.Background(), od); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("OffsetDelete: %+v", resp)
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"gone", "never"}
	resp := c.DeleteGroups(context.Background(), dg)
	if resp.Groups[0].ErrorCode != 0 || resp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("DeleteGroups: %+v", resp.Groups)
	}

	want := map[string]map[TopicPartition]int64{
		"a":    {{"t", 0}: 9, {"t", 1}: 6},
		"b":    {{"t", 0}: 2},
		"gone": {},
	}
	for _, cc := range []*Coordinator{c, openTest(t, log, clocktest.New())} {
		for g, w := range want {
			if got := offsetsOf(cc, g); !reflect.DeepEqual(got, w) {
				t.Fatalf("group %s: %v, want %v", g, got, w)
			}
		}
		if o := cc.Committed("a")[TopicPartition{"t", 0}]; o.LeaderEpoch != 3 || o.Metadata != "m" {
			t.Fatalf("epoch and metadata: %+v", o)
		}
	}
}

// TestOffsetFetchVersions reads committed offsets the ways clients ask:
// named partitions (v1, -1 where nothing is committed), everything (v2+,
// topics null) and several groups at once (v8+).
func TestOffsetFetchVersions(t *testing.T) {
	c := openTest(t, newMemLog(), clocktest.New())
	mustCommit(t, c, "a", map[TopicPartition]int64{{"t", 0}: 5, {"t", 1}: 6})
	mustCommit(t, c, "b", map[TopicPartition]int64{{"t", 0}: 7})

	v1 := kmsg.NewPtrOffsetFetchRequest()
	v1.Version, v1.Group = 1, "a"
	v1.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{1, 2}}}
	got := c.OffsetFetch(v1)
	if ps := got.Topics[0].Partitions; len(ps) != 2 || ps[0].Offset != 6 || ps[1].Offset != -1 {
		t.Fatalf("v1: %+v", got.Topics)
	}
	v7 := kmsg.NewPtrOffsetFetchRequest()
	v7.Version, v7.Group = 7, "a"
	got = c.OffsetFetch(v7)
	if len(got.Topics) != 1 || len(got.Topics[0].Partitions) != 2 || got.Topics[0].Partitions[0].Offset != 5 {
		t.Fatalf("v7 all: %+v", got.Topics)
	}
	v8 := kmsg.NewPtrOffsetFetchRequest()
	v8.Version = 8
	v8.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "a"}, {Group: "b"}, {Group: "none"}}
	got = c.OffsetFetch(v8)
	var desc []string
	for _, g := range got.Groups {
		for _, tp := range g.Topics {
			for _, p := range tp.Partitions {
				desc = append(desc, fmt.Sprintf("%s %s/%d=%d", g.Group, tp.Topic, p.Partition, p.Offset))
			}
		}
	}
	if fmt.Sprint(desc) != "[a t/0=5 a t/1=6 b t/0=7]" || len(got.Groups) != 3 {
		t.Fatalf("v8: %v", desc)
	}
}

// TestOffsetsRetention: the retention floor holds the oldest record with
// a live commit; Compact copies live commits out of the oldest file, after
// which the floor passes it and a replay without the dropped records still
// has every commit.
func TestOffsetsRetention(t *testing.T) {
	log := newMemLog()
	c := openTest(t, log, clocktest.New())
	if f := c.RetentionFloor(); f != math.MaxInt64 {
		t.Fatalf("floor with nothing committed: %d", f)
	}
	mustCommit(t, c, "a", map[TopicPartition]int64{{"t", 0}: 1, {"t", 1}: 1})
	firstEnd := log.pos
	mustCommit(t, c, "b", map[TopicPartition]int64{{"t", 0}: 4})
	mustCommit(t, c, "a", map[TopicPartition]int64{{"t", 0}: 2})
	if f := c.RetentionFloor(); f != firstEnd-1 {
		t.Fatalf("floor %d, want %d (inside the first record)", f, firstEnd-1)
	}

	// The oldest "file" ends after the first two records.
	log.oldestEnd = log.parts[PartitionFor("b", 4)][0].end
	n, err := c.Compact(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("Compact: %d copied, %v (want a t/1 and b t/0)", n, err)
	}
	if f := c.RetentionFloor(); f < log.oldestEnd {
		t.Fatalf("floor %d still inside the oldest file ending at %d", f, log.oldestEnd)
	}
	log.dropBefore(log.oldestEnd)
	want := map[string]map[TopicPartition]int64{"a": {{"t", 0}: 2, {"t", 1}: 1}, "b": {{"t", 0}: 4}}
	c2 := openTest(t, log, clocktest.New())
	for g, w := range want {
		if got := offsetsOf(c2, g); !reflect.DeepEqual(got, w) {
			t.Fatalf("after retention, group %s: %v, want %v", g, got, w)
		}
	}
	if n, err := c2.Compact(context.Background()); err != nil || n != 0 {
		t.Fatalf("second Compact copied %d: %v", n, err)
	}
}

// TestOffsetCommitFailureStoresNothing: a failed append answers every
// partition with the error and leaves the view as it was.
func TestOffsetCommitFailureStoresNothing(t *testing.T) {
	log := newMemLog()
	c := openTest(t, log, clocktest.New())
	mustCommit(t, c, "a", map[TopicPartition]int64{{"t", 0}: 1})
	log.failNext = errors.New("disk on fire")
	resp := c.OffsetCommit(context.Background(), commitReq("a", map[TopicPartition]int64{{"t", 0}: 2, {"t", 1}: 2}))
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != kerr.KafkaStorageError.Code {
				t.Fatalf("%s/%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	if got := offsetsOf(c, "a"); !reflect.DeepEqual(got, map[TopicPartition]int64{{"t", 0}: 1}) {
		t.Fatalf("after a failed commit: %v", got)
	}
}

// TestOffsetsRecordFormat pins the key and value layout and rejects
// damaged or unknown records.
func TestOffsetsRecordFormat(t *testing.T) {
	k := offsetKey{"g", "t", 7}
	key := encodeKey(k)
	if want := []byte{0, 1, 0, 1, 'g', 0, 1, 't', 0, 0, 0, 7}; !reflect.DeepEqual(key, want) {
		t.Fatalf("key % x", key)
	}
	v := Offset{Offset: 42, LeaderEpoch: -1, Metadata: "x", CommitMs: 1}
	val := encodeValue(v)
	if got, err := decodeValue(val); err != nil || got != v {
		t.Fatalf("value round trip: %+v %v", got, err)
	}
	if got, err := decodeKey(key); err != nil || got != k {
		t.Fatalf("key round trip: %+v %v", got, err)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"short key", key[:5], ErrCorrupt},
		{"long key", append(append([]byte(nil), key...), 0), ErrCorrupt},
		{"key version", append([]byte{0, 9}, key[2:]...), ErrUnsupportedVersion},
	} {
		if _, err := decodeKey(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"short value", val[:len(val)-1], ErrCorrupt},
		{"value version", append([]byte{0, 0}, val[2:]...), ErrUnsupportedVersion},
	} {
		if _, err := decodeValue(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// durableGate is a memLog whose WaitDurable reports each wait and blocks
// until the test lets it go.
type durableGate struct {
	*memLog
	waiting chan int64
	release chan struct{}
}

func (l durableGate) WaitDurable(ctx context.Context, end int64) error {
	l.waiting <- end
	<-l.release
	return nil
}

// TestOffsetCommitWaitsForDurability: with SyncCommits an OffsetCommit is
// answered only after the log is durable through its record.
func TestOffsetCommitWaitsForDurability(t *testing.T) {
	log := durableGate{newMemLog(), make(chan int64), make(chan struct{})}
	c := openTest(t, log, clocktest.New())
	done := make(chan *kmsg.OffsetCommitResponse, 1)
	go func() {
		done <- c.OffsetCommit(context.Background(), commitReq("a", map[TopicPartition]int64{{"t", 0}: 1}))
	}()
	select {
	case end := <-log.waiting:
		if end != log.pos {
			t.Fatalf("waited for %d, the commit's record ends at %d", end, log.pos)
		}
	case resp := <-done:
		t.Fatalf("answered before the commit was durable: %+v", resp)
	}
	close(log.release)
	if resp := <-done; resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}
}

// TestOffsetCommitCancelledIsNotATimeout: a commit whose wait for
// durability ends because its request was cancelled (the client went away,
// the broker is closing) is not a timeout, and is not logged as one; a
// commit that outlives its deadline still is. Both are answered
// COORDINATOR_NOT_AVAILABLE, as Kafka's coordinator answers a commit it
// could not make durable (commitCode). Under flush sync the broker
// logged "offset commit timed out ... context canceled" for every client
// that closed with a commit in flight.
func TestOffsetCommitCancelledIsNotATimeout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ctx      func() (context.Context, context.CancelFunc)
		warnings int
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, 0},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Unix(0, 0))
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, hook := logtest.NewNullLogger()
			opts := testOptions(t, newMemLog(), clocktest.New())
			opts.Logger = logger
			c, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			ctx, cancel := tc.ctx()
			defer cancel()
			resp := c.OffsetCommit(ctx, commitReq("a", map[TopicPartition]int64{{"t", 0}: 1}))
			if code := resp.Topics[0].Partitions[0].ErrorCode; code != coordinatorNotAvailable {
				t.Errorf("answered %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(code))
			}
			warnings := 0
			for _, e := range hook.AllEntries() {
				if e.Level <= logrus.WarnLevel {
					warnings++
				}
			}
			if warnings != tc.warnings {
				t.Errorf("%d warnings or errors logged, want %d: %v", warnings, tc.warnings, hook.AllEntries())
			}
		})
	}
}
