package group

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/clock/clocktest"
)

func openSnapshot(t *testing.T, log Log, snap []byte) *Coordinator {
	t.Helper()
	opts := testOptions(t, log, clocktest.New())
	opts.Snapshot = snap
	c, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestSnapshotPlusTail: a coordinator opened from a snapshot replays only
// the records after it. The records the snapshot covers are dropped from
// the log here, so the view can only be right if the snapshot was used.
func TestSnapshotPlusTail(t *testing.T) {
	log := newMemLog()
	c := openTest(t, log, clocktest.New())
	mustCommit(t, c, "a", map[TopicPartition]int64{{"t", 0}: 1, {"t", 1}: 1})
	mustCommit(t, c, "b", map[TopicPartition]int64{{"t", 0}: 7})
	snap, err := c.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	covered := log.pos
	mustCommit(t, c, "a", map[TopicPartition]int64{{"t", 0}: 2})
	dg := deleteGroupsReq("b")
	if code := c.DeleteGroups(context.Background(), dg).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("DeleteGroups: %d", code)
	}
	want := map[string]map[TopicPartition]int64{"a": {{"t", 0}: 2, {"t", 1}: 1}, "b": {}}

	log.dropBefore(covered)
	c2 := openSnapshot(t, log, snap)
	for g, w := range want {
		if got := offsetsOf(c2, g); !reflect.DeepEqual(got, w) {
			t.Fatalf("from snapshot plus tail, group %s: %v, want %v", g, got, w)
		}
	}
	// Commits after a reopen continue the partitions' offsets, and a
	// snapshot of the reopened view reproduces it.
	mustCommit(t, c2, "a", map[TopicPartition]int64{{"t", 1}: 5})
	snap2, err := c2.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c3 := openSnapshot(t, log, snap2)
	if got := offsetsOf(c3, "a"); !reflect.DeepEqual(got, map[TopicPartition]int64{{"t", 0}: 2, {"t", 1}: 5}) {
		t.Fatalf("second snapshot: %v", got)
	}
}

func deleteGroupsReq(groups ...string) *kmsg.DeleteGroupsRequest {
	r := kmsg.NewPtrDeleteGroupsRequest()
	r.Groups = groups
	return r
}

// TestSnapshotRejected: a damaged snapshot, or one that no longer joins
// the log, is not used; the whole log is replayed instead.
func TestSnapshotRejected(t *testing.T) {
	log := newMemLog()
	c := openTest(t, log, clocktest.New())
	mustCommit(t, c, "a", map[TopicPartition]int64{{"t", 0}: 1})
	snap, err := c.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, c, "a", map[TopicPartition]int64{{"t", 0}: 2})
	mustCommit(t, c, "a", map[TopicPartition]int64{{"t", 1}: 3})
	want := map[TopicPartition]int64{{"t", 0}: 2, {"t", 1}: 3}

	flipped := append([]byte(nil), snap...)
	flipped[len(flipped)-1] ^= 1
	if got := offsetsOf(openSnapshot(t, log, flipped), "a"); !reflect.DeepEqual(got, want) {
		t.Fatalf("damaged snapshot: %v", got)
	}
	// Retention took the record right after the snapshot: it must not be
	// used, or the commits in that record would be lost silently.
	log.dropBefore(log.parts[PartitionFor("a", 4)][1].end)
	delete(want, TopicPartition{"t", 0})
	if got := offsetsOf(openSnapshot(t, log, snap), "a"); !reflect.DeepEqual(got, want) {
		t.Fatalf("snapshot with a gap after it: %v, want only what the log still holds %v", got, want)
	}
}

func TestSnapshotFormat(t *testing.T) {
	good := encodeSnapshot(snapshot{next: []int64{3, 0}, entries: []snapshotEntry{{offsetKey{"g", "t", 1}, Offset{Offset: 9, LeaderEpoch: -1}, 77}}})
	s, err := decodeSnapshot(good)
	if err != nil || !reflect.DeepEqual(s.next, []int64{3, 0}) || len(s.entries) != 1 || s.entries[0].end != 77 || s.entries[0].value.Offset != 9 {
		t.Fatalf("round trip: %+v %v", s, err)
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for name, b := range map[string][]byte{
		"empty":     nil,
		"magic":     mutate(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version":   mutate(func(b []byte) []byte { b[5] = 9; return b }),
		"truncated": good[:len(good)-3],
		"crc":       mutate(func(b []byte) []byte { b[20] ^= 0xff; return b }),
	} {
		if _, err := decodeSnapshot(b); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
