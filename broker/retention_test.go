package broker

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestLiveStart: the commit log may delete whole files before the first
// record a partition still serves; moving a partition's log start, or
// deleting its topic, moves that point up to the next live record, and
// the offsets topic is left to the group floor.
func TestLiveStart(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	ds := storeOf(b)
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "old", 1)
	createTopic(t, cl, "gone", 1)
	createTopic(t, cl, "young", 2)
	produceSync(t, cl, "old", 0, "o1", "o2")
	produceSync(t, cl, "gone", 0, "g1")
	produceSync(t, cl, "young", 1, "y1")
	produceSync(t, cl, "old", 0, "o3")
	// Where the record holding offset starts, in the one partition of
	// topic written to.
	phys := func(topic string, offset int64) int64 {
		t.Helper()
		p := int32(0)
		if topic == "young" {
			p = 1
		}
		at := ds.FirstLive(topic, p, offset)
		if at == math.MinInt64 || at == math.MaxInt64 {
			t.Fatalf("no record at %s/%d offset %d", topic, p, offset)
		}
		return at
	}
	want := []int64{phys("old", 0), phys("gone", 0), phys("young", 0)}
	if got := b.liveStart(); got != want[0] {
		t.Fatalf("live start %d, want old/0's first record at %d", got, want[0])
	}
	trim := func(topic string, to int64) {
		t.Helper()
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: to})
		if _, err := adm.DeleteRecords(testCtx(t), offs); err != nil {
			t.Fatal(err)
		}
	}
	trim("old", 2)
	if got := b.liveStart(); got != want[1] {
		t.Fatalf("after trimming old to 2: live start %d, want gone/0 at %d", got, want[1])
	}
	if _, err := adm.DeleteTopics(testCtx(t), "gone"); err != nil {
		t.Fatal(err)
	}
	if got := b.liveStart(); got != want[2] {
		t.Fatalf("after deleting gone: live start %d, want young/1 at %d", got, want[2])
	}
	trim("old", 3)
	trim("young", 0) // partition 0 has nothing: no move
	if got := b.liveStart(); got != want[2] {
		t.Fatalf("live start %d, want young/1 at %d", got, want[2])
	}
	b.following.Store(true)
	defer b.following.Store(false)
	if got := b.liveStart(); got != math.MinInt64 {
		t.Fatalf("a follower's live start %d: its leader decides what is dead", got)
	}
}
