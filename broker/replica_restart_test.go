package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/ha/replication"
	"github.com/unilog/unilog/store"
)

// replicaFileSize is small so that a few hundred records fill several
// commit-log files and retention has whole files to delete.
const replicaFileSize = 64 << 10

// applyRetention opens the stopped broker's data directory with a size cap
// of one byte and waits until retention left only the last commit-log file
// and the consume queues followed (the broker has no retention flag of its
// own: the default is 72 hours by age).
func applyRetention(t *testing.T, dir string) {
	t.Helper()
	meta, err := OpenFileMetadata(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	d, err := store.Open(store.Options{
		Dir: dir,
		CommitLog: commitlog.Options{
			FileSize:               replicaFileSize,
			RetentionBytes:         1,
			RetentionCheckInterval: 5 * time.Millisecond,
			Logger:                 testLogger(t),
		},
		ConsumeQueue: consumequeue.Options{Logger: testLogger(t)},
		Live: func(topic string) (commitlog.TopicID, bool) {
			if topic == "pad" {
				return commitlog.TopicID{}, true
			}
			m, ok := meta.Topic(topic)
			return m.RecordID(), ok
		},
		Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// A retention pass that ran before Open returned reached the log but
	// not the queues; records of no topic fill files until one after it
	// has raised the queues' starts too.
	pad := []store.Batch{{Topic: "pad", Count: 1, Records: make([]byte, 16<<10)}}
	eventually(t, "retention down to the last file, followed by the queues", func() (bool, string) {
		// Files are replicaFileSize each: the oldest left is the last one
		// when the log starts less than a file before its end.
		lastFile := d.MinOffset() > d.WriteOffset()-replicaFileSize
		lo, hi := d.Bounds("kept", 0)
		if lastFile && lo == hi {
			return true, ""
		}
		if _, err := d.Append(nil, pad); err != nil {
			t.Fatal(err)
		}
		return false, fmt.Sprint("log ", d.MinOffset(), "..", d.WriteOffset(), ", kept/0 at ", lo, "..", hi)
	})
}

// listOffsets answers earliest and latest offsets of every partition of
// topic, and the group's committed offsets, as a client sees them.
func listOffsets(t *testing.T, addr, topic, group string) (earliest, latest, committed map[int32]int64) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addr))
	ctx := testCtx(t)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil || starts.Error() != nil {
		t.Fatalf("list start offsets: %v %v", err, starts.Error())
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("list end offsets: %v %v", err, ends.Error())
	}
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil || offs.Error() != nil {
		t.Fatalf("fetch offsets of %s: %v %v", group, err, offs.Error())
	}
	earliest, latest, committed = map[int32]int64{}, map[int32]int64{}, map[int32]int64{}
	starts.Each(func(o kadm.ListedOffset) { earliest[o.Partition] = o.Offset })
	ends.Each(func(o kadm.ListedOffset) { latest[o.Partition] = o.Offset })
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			committed[o.Partition] = o.At
		}
	})
	return earliest, latest, committed
}

// TestFollowerRestartKeepsOffsets: a fresh follower of a leader whose
// retention deleted every record of some partitions starts its log at the
// leader's first offset; promoted, it must answer the old leader's
// earliest and latest offsets for every partition, keep the group's
// committed offsets, and append after them, never reusing an offset.
func TestFollowerRestartKeepsOffsets(t *testing.T) {
	leaderDir, followerDir := t.TempDir(), t.TempDir()
	cfg := groupConfig(t, leaderDir)
	so := testStore()
	so.CommitLog.FileSize = replicaFileSize
	b := startBrokerWith(t, cfg, so)
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "gone", 2)
	createTopic(t, cl, "kept", 1)
	ctx := testCtx(t)
	produce := func(cl *kgo.Client, topic string, partition int32, n int, size int) {
		t.Helper()
		for i := range n {
			r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte(fmt.Sprintf("%d:%s", i, strings.Repeat("x", size)))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce to %s/%d: %v", topic, partition, err)
			}
		}
	}
	produce(cl, "gone", 0, 7, 10)
	produce(cl, "gone", 1, 3, 10)
	produce(cl, "kept", 0, 5, 10)
	createTopic(t, cl, "filler", 1)
	produce(cl, "filler", 0, 200, 1000) // several files, so retention leaves none of the above
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	applyRetention(t, leaderDir)

	// The group commits after retention: the coordinator's retention floor
	// (and compaction) keeps live commits in a running leader's log, which
	// the offline retention above does not know.
	b = startBroker(t, cfg)
	cl = newClient(t, b.Addr())
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "gone", Partition: 0, At: 7, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "gone", Partition: 1, At: 2, LeaderEpoch: -1})
	if resp, err := kadm.NewClient(cl).CommitOffsets(ctx, "app", offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	produce(cl, "filler", 0, 3, 10)
	goneStart, goneEnd, goneCommitted := listOffsets(t, b.Addr(), "gone", "app")
	keptStart, keptEnd, _ := listOffsets(t, b.Addr(), "kept", "app")
	fillerStart, fillerEnd, _ := listOffsets(t, b.Addr(), "filler", "app")
	if fillerStart[0] == 0 || fillerEnd[0] != 203 {
		t.Fatalf("filler/0 on the leader after retention: [%d, %d), want records deleted and 203 produced", fillerStart[0], fillerEnd[0])
	}
	if goneStart[0] != 7 || goneEnd[0] != 7 || goneStart[1] != 3 || goneEnd[1] != 3 || keptEnd[0] != 5 || keptStart[0] != 5 || goneCommitted[0] != 7 || goneCommitted[1] != 2 {
		t.Fatalf("the leader after retention: gone %v..%v committed %v, kept %v..%v", goneStart, goneEnd, goneCommitted, keptStart, keptEnd)
	}

	f := promotedFollower(t, b, leaderDir, followerDir)

	start, end, committed := listOffsets(t, f.Addr(), "gone", "app")
	for p := range int32(2) {
		if start[p] != goneStart[p] || end[p] != goneEnd[p] || committed[p] != goneCommitted[p] {
			t.Fatalf("gone/%d on the promoted follower: [%d, %d) committed %d; the old leader [%d, %d) committed %d",
				p, start[p], end[p], committed[p], goneStart[p], goneEnd[p], goneCommitted[p])
		}
	}
	if start, end, _ := listOffsets(t, f.Addr(), "kept", "app"); start[0] != keptStart[0] || end[0] != keptEnd[0] {
		t.Fatalf("kept/0 on the promoted follower: [%d, %d); the old leader [%d, %d)", start[0], end[0], keptStart[0], keptEnd[0])
	}
	if start, end, _ := listOffsets(t, f.Addr(), "filler", "app"); start[0] != fillerStart[0] || end[0] != fillerEnd[0] {
		t.Fatalf("filler/0, whose newest records remain, on the promoted follower: [%d, %d); the old leader [%d, %d)", start[0], end[0], fillerStart[0], fillerEnd[0])
	}
	fcl := newClient(t, f.Addr())
	for p := range int32(2) {
		r := &kgo.Record{Topic: "gone", Partition: p, Value: []byte("after")}
		if err := fcl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if r.Offset != goneEnd[p] {
			t.Fatalf("gone/%d: produced at offset %d on the promoted follower, the old leader's next was %d", p, r.Offset, goneEnd[p])
		}
	}
	// A consumer resuming from the committed offset reads what follows it.
	cons := newClient(t, f.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"gone": {0: kgo.NewOffset().At(goneCommitted[0])}}))
	var got []*kgo.Record
	for len(got) == 0 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume from the committed offset %d: %v", goneCommitted[0], err)
		}
		got = fs.Records()
	}
	if got[0].Offset != goneCommitted[0] || string(got[0].Value) != "after" {
		t.Fatalf("resumed at %d: read offset %d %q", goneCommitted[0], got[0].Offset, got[0].Value)
	}
}

// promotedFollower starts a broker on followerDir with the leader's
// metadata, makes it a follower, replicates the leader's whole log into it
// (epoch 1) and promotes it, as a failover does.
func promotedFollower(t *testing.T, leader *Broker, leaderDir, followerDir string) *Broker {
	t.Helper()
	shareMetadata(t, leaderDir, followerDir)
	so := testStore()
	so.CommitLog.FileSize = replicaFileSize
	f := startBrokerWith(t, groupConfig(t, followerDir), so)
	f.Demote()
	replicate(t, leader, f, 1)
	if err := f.Promote(testCtx(t)); err != nil {
		t.Fatalf("Promote: %v", err)
	}
	return f
}

// shareMetadata gives the follower's data directory the leader's metadata,
// as the control plane gives every node of a cluster the same: the same
// topics, the same incarnations.
func shareMetadata(t *testing.T, leaderDir, followerDir string) {
	t.Helper()
	meta, err := os.ReadFile(filepath.Join(leaderDir, MetadataFileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(followerDir, MetadataFileName), meta, 0o644); err != nil {
		t.Fatal(err)
	}
}

// replicate streams leader's log into follower (a broker that Demote made
// a follower) under epoch, which must be above any used before, until both
// end at the same place and the follower has dispatched it, then stops.
func replicate(t *testing.T, leader, follower *Broker, epoch int64) {
	t.Helper()
	llog, flog := storeOf(leader), storeOf(follower)
	lepochs, err := llog.Epochs()
	if err != nil {
		t.Fatal(err)
	}
	if err := lepochs.Assign(epoch, llog.WriteOffset()); err != nil {
		t.Fatal(err)
	}
	fepochs, err := flog.Epochs()
	if err != nil {
		t.Fatal(err)
	}
	ld := replication.NewLeader(replication.LeaderConfig{
		Log: llog, Epochs: lepochs, Epoch: epoch, FileSize: replicaFileSize, Offsets: llog.OffsetsAt,
		Heartbeat: 20 * time.Millisecond, Logger: testLogger(t),
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ld.Serve(ln)
	defer ld.Close()
	fl := replication.NewFollower(replication.FollowerConfig{
		Node: "follower", Log: flog, Epochs: fepochs, FileSize: replicaFileSize,
		Truncate: follower.TruncateLog, Restart: follower.RestartLog, Logger: testLogger(t),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fl.Follow(ctx, ln.Addr().String(), epoch) }()
	end := llog.WriteOffset()
	eventually(t, "the follower caught up and dispatched", func() (bool, string) {
		return flog.WriteOffset() == end && flog.Dispatched() == end, fmt.Sprint(flog.WriteOffset(), " of ", end)
	})
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Follow: %v", err)
	}
}
