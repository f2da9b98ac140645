package broker

import (
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeInTwoRuns produces 30 records, has consume (one run of a group
// consumer) read them and checks the group committed them all, then
// produces 15 more, which the next run reads, and only those.
func consumeInTwoRuns(t *testing.T, cl *kgo.Client, grp, topic string, partitions int32, consume func(n int) []string) {
	t.Helper()
	for i, n := range []int{30, 15} {
		want := produceValues(t, cl, topic, partitions, fmt.Sprintf("run%d", i), n)
		sort.Strings(want)
		if got := consume(n); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("run %d of group %s read %v", i, grp, got)
		}
	}
	if n := committedTotal(t, kadm.NewClient(cl), grp, topic); n != 45 {
		t.Fatalf("group %s committed %d offsets in all, want 45", grp, n)
	}
}

// committedTotal sums a group's committed offsets of topic.
func committedTotal(t *testing.T, adm *kadm.Client, grp, topic string) int64 {
	t.Helper()
	offs, err := adm.FetchOffsets(testCtx(t), grp)
	if err != nil {
		t.Fatalf("FetchOffsets %s: %v", grp, err)
	}
	var n int64
	for _, ps := range offs {
		for _, o := range ps {
			if o.Topic == topic {
				n += o.At
			}
		}
	}
	return n
}

// kcatGroupRun runs kcat's balanced consumer (librdkafka, which negotiates
// the newest versions) on group grp until the end of topic and returns
// the values it read, sorted; it must read n. opts are more kcat flags.
func kcatGroupRun(t *testing.T, addr, grp, topic string, n int, opts ...string) []string {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat not installed (make test-deps installs it): %v", err)
	}
	args := append([]string{"-b", addr, "-G", grp, topic, "-e", "-q", "-f", "%s\n",
		"-X", "auto.offset.reset=earliest", "-X", "session.timeout.ms=6000"}, opts...)
	out, err := exec.CommandContext(testCtx(t), kcat, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -G: %v\n%s", err, out)
	}
	lines := strings.Fields(string(out))
	sort.Strings(lines)
	if len(lines) != n {
		t.Fatalf("kcat -G read %d lines, want %d:\n%s", len(lines), n, out)
	}
	return lines
}

// TestGroupKcat: kcat's balanced consumer consumes everything, commits,
// and a second run of the same group sees only what was produced since.
func TestGroupKcat(t *testing.T) {
	b := startBroker(t, groupConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "kg", 3)
	consumeInTwoRuns(t, cl, "kcat-group", "kg", 3, func(n int) []string {
		return kcatGroupRun(t, b.Addr(), "kcat-group", "kg", n)
	})
}

// TestGroupKafkaGoReader reads through kafka-go's Reader with a GroupID
// (JoinGroup v1/v2, SyncGroup/Heartbeat/LeaveGroup v0, OffsetCommit v2,
// OffsetFetch v1, FindCoordinator v0 hard-coded), which commits what
// ReadMessage returned; a second reader of the group continues there.
func TestGroupKafkaGoReader(t *testing.T) {
	b := startBroker(t, groupConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "kgr", 2)
	sn := newVersionSniffer(t, b.Addr())
	read := func(n int) []string {
		t.Helper()
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:           []string{b.Addr()},
			GroupID:           "kafka-go-group",
			Topic:             "kgr",
			MaxWait:           100 * time.Millisecond,
			HeartbeatInterval: 200 * time.Millisecond,
			SessionTimeout:    2 * time.Second,
			StartOffset:       kafka.FirstOffset,
			Dialer:            &kafka.Dialer{Timeout: 10 * time.Second, DialFunc: sn.dial},
		})
		var got []string
		for len(got) < n {
			m, err := r.ReadMessage(testCtx(t))
			if err != nil {
				t.Fatalf("ReadMessage after %d: %v", len(got), err)
			}
			got = append(got, string(m.Value))
		}
		if err := r.Close(); err != nil {
			t.Fatalf("Reader.Close: %v", err)
		}
		sort.Strings(got)
		return got
	}
	consumeInTwoRuns(t, cl, "kafka-go-group", "kgr", 2, read)
	t.Logf("kafka-go sent: %s", sn.report())
	for _, want := range []string{"FindCoordinator", "JoinGroup", "SyncGroup", "OffsetCommit", "OffsetFetch"} {
		if !strings.Contains(sn.report(), want) {
			t.Errorf("kafka-go never sent %s: %s", want, sn.report())
		}
	}
}
