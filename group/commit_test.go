package group

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/unilog/unilog/internal/clock/clocktest"
)

// failingLog is a memLog whose WaitDurable fails with waitErr when set.
type failingLog struct {
	*memLog
	waitErr error
}

func (l *failingLog) WaitDurable(ctx context.Context, end int64) error { return l.waitErr }

func commitCodeOf(c *Coordinator, group string, offs map[TopicPartition]int64) int16 {
	return c.OffsetCommit(context.Background(), commitReq(group, offs)).Topics[0].Partitions[0].ErrorCode
}

// TestFailedCommitIsNotVisible: a commit the log could not make durable is
// answered as Kafka's coordinator answers it, and OffsetFetch keeps
// returning the offset committed before it.
func TestFailedCommitIsNotVisible(t *testing.T) {
	for _, tc := range []struct {
		name               string
		appendErr, waitErr error
		want               int16
	}{
		{"too few in sync before the append", fmt.Errorf("1 in sync, 2 required: %w", ErrNotEnoughReplicas), nil, kerr.CoordinatorNotAvailable.Code},
		{"too few in sync after the append", nil, fmt.Errorf("1 in sync, 2 required: %w", ErrNotEnoughReplicas), kerr.CoordinatorNotAvailable.Code},
		{"not the leader", fmt.Errorf("following: %w", ErrNotCoordinator), nil, kerr.NotCoordinator.Code},
		{"deposed while waiting", nil, fmt.Errorf("fenced: %w", ErrNotCoordinator), kerr.NotCoordinator.Code},
		{"timed out", nil, fmt.Errorf("replicate: %w", context.DeadlineExceeded), kerr.CoordinatorNotAvailable.Code},
		{"storage", nil, errors.New("input/output error"), kerr.KafkaStorageError.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &failingLog{memLog: newMemLog()}
			c := openTest(t, log, clocktest.New())
			tp := TopicPartition{"t", 0}
			mustCommit(t, c, "g", map[TopicPartition]int64{tp: 5})
			log.failNext, log.waitErr = tc.appendErr, tc.waitErr
			if code := commitCodeOf(c, "g", map[TopicPartition]int64{tp: 9}); code != tc.want {
				t.Fatalf("failed commit answered %v, want %v", kerr.ErrorForCode(code), kerr.ErrorForCode(tc.want))
			}
			if got := offsetsOf(c, "g"); got[tp] != 5 {
				t.Fatalf("after a failed commit of 9 the group's offset is %d, want 5", got[tp])
			}
		})
	}
}

// TestCommitVisibleOnceDurable: OffsetFetch sees a commit only once it is
// durable, not from its append on.
func TestCommitVisibleOnceDurable(t *testing.T) {
	log := durableGate{newMemLog(), make(chan int64), make(chan struct{})}
	c := openTest(t, log, clocktest.New())
	tp := TopicPartition{"t", 0}
	done := make(chan int16, 1)
	go func() { done <- commitCodeOf(c, "g", map[TopicPartition]int64{tp: 7}) }()
	<-log.waiting
	if got := offsetsOf(c, "g"); len(got) != 0 {
		t.Fatalf("a commit waiting to be durable is visible: %v", got)
	}
	close(log.release)
	if code := <-done; code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	if got := offsetsOf(c, "g"); got[tp] != 7 {
		t.Fatalf("a durable commit is not visible: %v", got)
	}
}

// TestCommitsSettleOutOfOrder: commits of one key settling out of log
// order leave the view as the log's order would.
func TestCommitsSettleOutOfOrder(t *testing.T) {
	k := TopicPartition{"t", 0}
	v := func(n int64) *Offset { return &Offset{Offset: n, LeaderEpoch: -1} }
	for _, tc := range []struct {
		name          string
		first, second *Offset // nil deletes
		firstOK       bool
		want          int64 // -1: no commit
	}{
		{"set, set", v(1), v(2), true, 2},
		{"set, delete", v(1), nil, true, -1},
		{"delete, set", nil, v(2), true, 2},
		{"failed set, set", v(1), v(2), false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOffsets(newMemLog(), 4)
			first, err := o.commit("g", map[TopicPartition]*Offset{k: tc.first})
			if err != nil {
				t.Fatal(err)
			}
			second, err := o.commit("g", map[TopicPartition]*Offset{k: tc.second})
			if err != nil {
				t.Fatal(err)
			}
			o.settle(second, true)
			o.settle(first, tc.firstOK)
			got, ok := o.get("g")[k]
			if !ok {
				got.Offset = -1
			}
			if got.Offset != tc.want {
				t.Fatalf("offset %d, want %d", got.Offset, tc.want)
			}
			if len(o.gone) != 0 {
				t.Fatalf("deletes still remembered with nothing pending: %v", o.gone)
			}
		})
	}
}

// TestSnapshotReplaysPendingCommit: a snapshot taken while a commit is
// pending continues before it, so a load from it has the commit once it
// settled as durable.
func TestSnapshotReplaysPendingCommit(t *testing.T) {
	log := newMemLog()
	o := newOffsets(log, 4)
	k := TopicPartition{"t", 0}
	pc, err := o.commit("g", map[TopicPartition]*Offset{k: {Offset: 3, LeaderEpoch: -1}})
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := o.snapshot()
	o.settle(pc, true)
	loaded := newOffsets(log, 4)
	if _, snapErr, err := loaded.load(encodeSnapshot(snap)); err != nil || snapErr != nil {
		t.Fatalf("load: %v, snapshot %v", err, snapErr)
	}
	if got := loaded.get("g"); got[k].Offset != 3 {
		t.Fatalf("loaded from a snapshot taken while the commit was pending: %v", got)
	}
}

// TestRewriteLeavesPendingKeys: compaction does not copy a key with a
// commit pending, whose copy would land after the pending record and undo
// it on replay.
func TestRewriteLeavesPendingKeys(t *testing.T) {
	log := newMemLog()
	o := newOffsets(log, 4)
	k := TopicPartition{"t", 0}
	first, err := o.commit("g", map[TopicPartition]*Offset{k: {Offset: 1, LeaderEpoch: -1}})
	if err != nil {
		t.Fatal(err)
	}
	o.settle(first, true)
	log.oldestEnd = log.pos
	second, err := o.commit("g", map[TopicPartition]*Offset{k: {Offset: 2, LeaderEpoch: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := o.rewrite(context.Background()); err != nil || n != 0 {
		t.Fatalf("rewrite with the key pending: copied %d, %v", n, err)
	}
	o.settle(second, true)
	replayed := newOffsets(log, 4)
	if _, _, err := replayed.load(nil); err != nil {
		t.Fatal(err)
	}
	if got := replayed.get("g"); got[k].Offset != 2 {
		t.Fatalf("replayed %v, want offset 2", got)
	}
}

// TestCommitFailuresLoggedOnce: a log failing every commit is reported
// once at warn level, not once per commit, and again only after commits
// succeeded meanwhile.
func TestCommitFailuresLoggedOnce(t *testing.T) {
	logger, hook := logtest.NewNullLogger()
	log := &failingLog{memLog: newMemLog()}
	opts := testOptions(t, log, clocktest.New())
	opts.Logger = logger
	c, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	tp := TopicPartition{"t", 0}
	levels := func() []logrus.Level {
		var out []logrus.Level
		for _, e := range hook.AllEntries() {
			if e.Level <= logrus.InfoLevel && e.Message != "group coordinator: offsets loaded" {
				out = append(out, e.Level)
			}
		}
		return out
	}
	log.waitErr = fmt.Errorf("1 in sync, 2 required: %w", ErrNotEnoughReplicas)
	for range 5 {
		commitCodeOf(c, "g", map[TopicPartition]int64{tp: 1})
	}
	log.waitErr = nil
	mustCommit(t, c, "g", map[TopicPartition]int64{tp: 2})
	mustCommit(t, c, "g", map[TopicPartition]int64{tp: 3})
	log.waitErr = fmt.Errorf("fenced: %w", ErrNotCoordinator)
	commitCodeOf(c, "g", map[TopicPartition]int64{tp: 4})
	commitCodeOf(c, "g", map[TopicPartition]int64{tp: 4})
	want := []logrus.Level{logrus.WarnLevel, logrus.InfoLevel, logrus.WarnLevel}
	if got := levels(); !reflect.DeepEqual(got, want) {
		t.Fatalf("logged %v for 5 failures, 2 successes, 2 failures; want %v", got, want)
	}
}
