package broker

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
)

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

// TestGroupKcat runs kcat's balanced consumer (librdkafka, which
// negotiates the newest versions): it consumes everything, commits, and a
// second run of the same group sees only what was produced since.
func TestGroupKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat not installed (make test-deps installs it): %v", err)
	}
	b := startBroker(t, groupConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "kg", 3)
	consume := func(n int) []string {
		t.Helper()
		cmd := exec.CommandContext(testCtx(t), kcat, "-b", b.Addr(), "-G", "kcat-group", "kg",
			"-e", "-q", "-f", "%s\n", "-X", "auto.offset.reset=earliest", "-X", "session.timeout.ms=6000")
		out, err := cmd.CombinedOutput()
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
	first := produceValues(t, cl, "kg", 3, "a", 30)
	sort.Strings(first)
	if got := consume(30); strings.Join(got, ",") != strings.Join(first, ",") {
		t.Fatalf("kcat -G: %v", got)
	}
	if n := committedTotal(t, adm, "kcat-group", "kg"); n != 30 {
		t.Fatalf("committed %d offsets, want 30", n)
	}
	second := produceValues(t, cl, "kg", 3, "b", 15)
	sort.Strings(second)
	if got := consume(15); strings.Join(got, ",") != strings.Join(second, ",") {
		t.Fatalf("kcat -G second run: %v", got)
	}
}

// TestGroupKafkaGoReader reads through kafka-go's Reader with a GroupID
// (JoinGroup v1/v2, SyncGroup/Heartbeat/LeaveGroup v0, OffsetCommit v2,
// OffsetFetch v1, FindCoordinator v0 hard-coded), which commits what
// ReadMessage returned; a second reader of the group continues there.
func TestGroupKafkaGoReader(t *testing.T) {
	b := startBroker(t, groupConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
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
	first := produceValues(t, cl, "kgr", 2, "a", 20)
	sort.Strings(first)
	if got := read(20); strings.Join(got, ",") != strings.Join(first, ",") {
		t.Fatalf("first reader: %v", got)
	}
	if n := committedTotal(t, adm, "kafka-go-group", "kgr"); n != 20 {
		t.Fatalf("committed %d offsets, want 20", n)
	}
	second := produceValues(t, cl, "kgr", 2, "b", 10)
	sort.Strings(second)
	if got := read(10); strings.Join(got, ",") != strings.Join(second, ",") {
		t.Fatalf("second reader: %v", got)
	}
	t.Logf("kafka-go sent: %s", sn.report())
	for _, want := range []string{"FindCoordinator", "JoinGroup", "SyncGroup", "OffsetCommit", "OffsetFetch"} {
		if !strings.Contains(sn.report(), want) {
			t.Errorf("kafka-go never sent %s: %s", want, sn.report())
		}
	}
}
