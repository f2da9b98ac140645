package broker

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/store"
)

// childDirEnv makes the test binary a broker over the named data directory
// instead of running tests (see TestMain): the parent kills it with SIGKILL
// to crash it, or stops it cleanly with SIGTERM.
const childDirEnv = "UNILOG_BROKER_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		os.Exit(runChildBroker(dir))
	}
	os.Exit(m.Run())
}

// runChildBroker serves dir with synchronous flushing and, so that a kill
// always lands after the last checkpoint, no periodic checkpoint. It prints
// its address, then serves until SIGTERM.
func runChildBroker(dir string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	b, err := open(Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: logger}, store.Options{
		CommitLog:          commitlog.Options{FileSize: 8 << 20, FlushMode: commitlog.FlushSync},
		CheckpointInterval: time.Hour,
	}, childCrashHook())
	if err != nil {
		fmt.Fprintln(os.Stderr, "child broker:", err)
		return 1
	}
	fmt.Printf("listening %s\n", b.Addr())
	<-term
	if err := b.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "child broker close:", err)
		return 1
	}
	return 0
}

// childBroker is a broker in a child process.
type childBroker struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string
}

func startChildBroker(t *testing.T, dir string) *childBroker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &childBroker{t: t, cmd: cmd}
	t.Cleanup(func() { c.stop(syscall.SIGKILL) })
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("child broker did not start: %q %v", line, err)
	}
	c.addr = addr
	return c
}

// stop sends sig and waits for the child to exit; stopping twice is a no-op.
func (c *childBroker) stop(sig syscall.Signal) {
	if c.cmd.ProcessState != nil {
		return
	}
	if err := c.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("signal child broker: %v", err)
	}
	err := c.cmd.Wait()
	if sig == syscall.SIGTERM && err != nil {
		c.t.Fatalf("child broker after SIGTERM: %v", err)
	}
}

// plainClient produces as kcat does by default: acks=all, no idempotence,
// so a re-created partition is not confused with the old one's sequences.
func plainClient(t *testing.T, addr string) *kgo.Client {
	return newClient(t, addr, kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()))
}

// topicID returns the topic id Metadata reports for topic.
func topicID(t *testing.T, addr, topic string) kadm.TopicID {
	t.Helper()
	md, err := kadm.NewClient(plainClient(t, addr)).Metadata(testCtx(t), topic)
	if err != nil || md.Topics[topic].Err != nil {
		t.Fatalf("metadata of %s: %v %v", topic, err, md.Topics[topic].Err)
	}
	return md.Topics[topic].ID
}

// partitionRecords returns "offset=value" for every record of partition 0
// of topic, from its start offset to its high watermark.
func partitionRecords(t *testing.T, addr, topic string) []string {
	t.Helper()
	adm := kadm.NewClient(plainClient(t, addr))
	starts, err := adm.ListStartOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := starts.Lookup(topic, 0)
	e, _ := ends.Lookup(topic, 0)
	if s.Err != nil || e.Err != nil {
		t.Fatalf("offsets of %s/0: %v %v", topic, s.Err, e.Err)
	}
	out := []string{fmt.Sprintf("start=%d", s.Offset)}
	if n := int(e.Offset - s.Offset); n > 0 {
		for _, r := range consumeN(t, addr, topic, n) {
			out = append(out, fmt.Sprintf("%d=%s", r.Offset, r.Value))
		}
	}
	return out
}

// TestRecreatedTopic deletes a topic holding 100 records and creates it
// again, then stops the broker (SIGKILL or clean), optionally deletes the
// consume queues so they are rebuilt from the log, and restarts it. The
// re-created topic must hold exactly its own record at offset 0: nothing of
// the deleted one, and its acknowledged record not lost.
func TestRecreatedTopic(t *testing.T) {
	for _, tc := range []struct {
		name string
		// recreate before the stop; otherwise only after the restart.
		recreate   bool
		stop       syscall.Signal
		dropQueues bool
	}{
		{name: "kill", recreate: true, stop: syscall.SIGKILL},
		{name: "clean restart", recreate: true, stop: syscall.SIGTERM},
		{name: "kill after delete", stop: syscall.SIGKILL},
		{name: "rebuild after clean stop", recreate: true, stop: syscall.SIGTERM, dropQueues: true},
		{name: "rebuild after kill", recreate: true, stop: syscall.SIGKILL, dropQueues: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			child := startChildBroker(t, dir)
			cl := plainClient(t, child.addr)
			createTopic(t, cl, "again", 1)
			old := make([]string, 100)
			for i := range old {
				old[i] = fmt.Sprintf("old-%d", i+1)
			}
			produceSync(t, cl, "again", 0, old...)
			oldID := topicID(t, child.addr, "again")
			del, err := kadm.NewClient(cl).DeleteTopics(testCtx(t), "again")
			if err != nil || del["again"].Err != nil {
				t.Fatalf("delete: %v %v", err, del["again"].Err)
			}
			var newID kadm.TopicID
			if tc.recreate {
				createTopic(t, cl, "again", 1)
				produceSync(t, cl, "again", 0, "new-1")
				newID = topicID(t, child.addr, "again")
			}
			cl.Close()
			child.stop(tc.stop)
			if tc.dropQueues {
				if err := os.RemoveAll(filepath.Join(dir, "consumequeue")); err != nil {
					t.Fatal(err)
				}
			}

			b := startBroker(t, testConfig(t, dir))
			cl = plainClient(t, b.Addr())
			if !tc.recreate {
				md, err := kadm.NewClient(cl).Metadata(testCtx(t))
				md.Topics.FilterInternal()
				if err != nil || len(md.Topics) != 0 {
					t.Fatalf("topics after restart: %v %v", err, md.Topics.Names())
				}
				createTopic(t, cl, "again", 1)
				if got := partitionRecords(t, b.Addr(), "again"); len(got) != 1 || got[0] != "start=0" {
					t.Fatalf("re-created topic after the restart holds %q", got)
				}
				produceSync(t, cl, "again", 0, "new-1")
				newID = topicID(t, b.Addr(), "again")
			}
			if id := topicID(t, b.Addr(), "again"); id != newID || id == oldID || id == (kadm.TopicID{}) {
				t.Fatalf("topic id %x after the restart; the first incarnation had %x, the second %x", id, oldID, newID)
			}
			got := partitionRecords(t, b.Addr(), "again")
			if want := []string{"start=0", "0=new-1"}; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("again/0 holds %q, want %q", got, want)
			}
			produceSync(t, cl, "again", 0, "new-2")
			if got := partitionRecords(t, b.Addr(), "again"); strings.Join(got, " ") != "start=0 0=new-1 1=new-2" {
				t.Fatalf("after one more record again/0 holds %q", got)
			}
			cl.Close()
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			verifyDir(t, dir)
		})
	}
}

// copyTree copies the directory tree src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeFromVersion1 opens testdata/v1-datadir, written by the last
// build before topic ids (metadata version 1, commit-log records version 1,
// topic "legacy" holding legacy-1..3). The topic keeps its records and its
// offsets, new records join them across restarts and a rebuild of the
// queues, and once it is deleted and created again none of it comes back.
func TestUpgradeFromVersion1(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, filepath.Join("testdata", "v1-datadir"), dir)
	cfg := testConfig(t, dir)
	so := testStore()
	so.CommitLog.FileSize = 4096 // as the old build wrote it
	restart := func(b *Broker, dropQueues bool) *Broker {
		t.Helper()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		verifyDir(t, dir)
		if dropQueues {
			if err := os.RemoveAll(filepath.Join(dir, "consumequeue")); err != nil {
				t.Fatal(err)
			}
		}
		b, err := Open(cfg, so)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	expect := func(b *Broker, want string) {
		t.Helper()
		if got := strings.Join(partitionRecords(t, b.Addr(), "legacy"), " "); got != want {
			t.Fatalf("legacy/0 holds %q, want %q", got, want)
		}
	}

	b, err := Open(cfg, so)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { b.Close() }()
	expect(b, "start=0 0=legacy-1 1=legacy-2 2=legacy-3")
	produceSync(t, plainClient(t, b.Addr()), "legacy", 0, "upgraded")
	want := "start=0 0=legacy-1 1=legacy-2 2=legacy-3 3=upgraded"
	expect(b, want)
	b = restart(b, false)
	expect(b, want)
	b = restart(b, true)
	expect(b, want)

	cl := plainClient(t, b.Addr())
	del, err := kadm.NewClient(cl).DeleteTopics(testCtx(t), "legacy")
	if err != nil || del["legacy"].Err != nil {
		t.Fatalf("delete: %v %v", err, del["legacy"].Err)
	}
	createTopic(t, cl, "legacy", 1)
	produceSync(t, cl, "legacy", 0, "new-1")
	expect(b, "start=0 0=new-1")
	b = restart(b, true)
	expect(b, "start=0 0=new-1")
}

// TestTopicIDRequests names topics by id (Metadata v12, DeleteTopics v6):
// the id of a deleted incarnation names nothing, so it cannot reach the
// topic created again under the same name.
func TestTopicIDRequests(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := plainClient(t, b.Addr())
	createTopic(t, cl, "ids", 1)
	oldID := topicID(t, b.Addr(), "ids")
	del, err := kadm.NewClient(cl).DeleteTopics(testCtx(t), "ids")
	if err != nil || del["ids"].Err != nil {
		t.Fatalf("delete: %v %v", err, del["ids"].Err)
	}
	createTopic(t, cl, "ids", 1)
	newID := topicID(t, b.Addr(), "ids")
	if newID == oldID {
		t.Fatalf("re-created topic kept the id %x", oldID)
	}

	c := dialRaw(t, b.Addr())
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	for _, id := range [][16]byte{newID, oldID} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = id
		md.Topics = append(md.Topics, rt)
	}
	resp, ok := c.roundTrip(md)
	if !ok {
		t.Fatal("Metadata v12: connection closed")
	}
	mdr := resp.(*kmsg.MetadataResponse)
	if len(mdr.Topics) != 2 || mdr.Topics[0].ErrorCode != 0 || *mdr.Topics[0].Topic != "ids" || mdr.Topics[0].TopicID != newID ||
		mdr.Topics[1].ErrorCode != kerr.UnknownTopicID.Code || mdr.Topics[1].TopicID != oldID {
		t.Fatalf("Metadata by id: %+v", mdr.Topics)
	}

	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.SetVersion(6)
	dt.TimeoutMillis = 10000
	dtt := kmsg.NewDeleteTopicsRequestTopic()
	dtt.TopicID = oldID
	dt.Topics = append(dt.Topics, dtt)
	resp, ok = c.roundTrip(dt)
	if !ok {
		t.Fatal("DeleteTopics v6: connection closed")
	}
	if r := resp.(*kmsg.DeleteTopicsResponse); len(r.Topics) != 1 || r.Topics[0].ErrorCode != kerr.UnknownTopicID.Code || r.Topics[0].TopicID != oldID {
		t.Fatalf("DeleteTopics by the dead id: %+v", r.Topics)
	}
	if id := topicID(t, b.Addr(), "ids"); id != newID {
		t.Fatalf("after deleting by the dead id the topic has id %x, want %x", id, newID)
	}
	dtt.TopicID = newID
	dt.Topics[0] = dtt
	if resp, ok = c.roundTrip(dt); !ok {
		t.Fatal("DeleteTopics v6: connection closed")
	}
	if r := resp.(*kmsg.DeleteTopicsResponse); len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 || r.Topics[0].TopicID != newID {
		t.Fatalf("DeleteTopics by the live id: %+v", r.Topics)
	}
}
