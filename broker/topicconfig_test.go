package broker

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeTopicConfigs maps a topic's configs to value and source.
func describeTopicConfigs(t testing.TB, adm *kadm.Client, topic string) map[string]kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	out := make(map[string]kadm.Config)
	for _, c := range rc.Configs {
		out[c.Key] = c
	}
	return out
}

func configIs(c kadm.Config, value string, source kmsg.ConfigSource) bool {
	return c.Value != nil && *c.Value == value && c.Source == source
}

// TestCreateTopicWithConfigs: CreateTopics stores per-topic configs
// (refused with INVALID_CONFIG before), DescribeConfigs shows them as the
// topic's and the rest as defaults, and they survive a restart; configs
// the design cannot honour are refused with the reason.
func TestCreateTopicWithConfigs(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	b, err := Open(cfg, testStore())
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kmsg.StringPtr("2000000"), "retention.ms": kmsg.StringPtr("60000")}, "big")
	if err != nil || resp.Err != nil {
		t.Fatalf("create with configs: %v %v %s", err, resp.Err, resp.ErrMessage)
	}
	check := func(when string) {
		t.Helper()
		got := describeTopicConfigs(t, adm, "big")
		if !configIs(got["max.message.bytes"], "2000000", kmsg.ConfigSourceDynamicTopicConfig) ||
			!configIs(got["retention.ms"], "60000", kmsg.ConfigSourceDynamicTopicConfig) ||
			!configIs(got["message.timestamp.type"], "CreateTime", kmsg.ConfigSourceDefaultConfig) ||
			!configIs(got["cleanup.policy"], "delete", kmsg.ConfigSourceDefaultConfig) {
			t.Fatalf("%s: configs %+v", when, got)
		}
	}
	check("created")
	for _, tc := range []struct {
		name, value, why string
	}{
		{"cleanup.policy", "compact", "compaction"},
		{"cleanup.policy", "compact,delete", "compaction"},
		{"no.such.config", "1", "unknown"},
		{"max.message.bytes", "lots", "integer"},
		{"retention.ms", "-1", "integer"},
		{"retention.ms", strconv.FormatInt(logRetentionMs+1, 10), "commit log"},
		{"compression.type", "zstd", "as the producer sent"},
		{"message.timestamp.type", "Later", "CreateTime"},
	} {
		resps, err := adm.CreateTopics(ctx, 1, 1, map[string]*string{tc.name: kmsg.StringPtr(tc.value)}, "refused")
		if err != nil {
			t.Fatal(err)
		}
		resp := resps["refused"]
		if !errorsIs(resp.Err, kerr.InvalidConfig) || !strings.Contains(resp.ErrMessage, tc.why) {
			t.Errorf("%s=%s: %v %q, want INVALID_CONFIG saying %q", tc.name, tc.value, resp.Err, resp.ErrMessage, tc.why)
		}
	}
	if _, ok := b.meta.Topic("refused"); ok {
		t.Fatal("a topic with a refused config was created")
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startBroker(t, cfg)
	adm = kadm.NewClient(newClient(t, b.Addr()))
	check("after a restart")
}

func errorsIs(err error, want *kerr.Error) bool {
	var ke *kerr.Error
	for err != nil {
		if k, ok := err.(*kerr.Error); ok {
			ke = k
			break
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			break
		}
		err = u.Unwrap()
	}
	return ke == want
}

// TestAlterConfigs: AlterConfigs replaces the topic's own configs (those
// not named return to the default); IncrementalAlterConfigs sets and
// deletes one by one; validate-only and refused changes store nothing.
func TestAlterConfigs(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	createTopic(t, cl, "t", 1)

	set := func(name, value string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: kmsg.StringPtr(value)}
	}
	if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "1000"), set("min.insync.replicas", "1")}, "t"); err != nil || r[0].Err != nil {
		t.Fatalf("incremental set: %v %+v", err, r)
	}
	got := describeTopicConfigs(t, adm, "t")
	if !configIs(got["retention.ms"], "1000", kmsg.ConfigSourceDynamicTopicConfig) || !configIs(got["min.insync.replicas"], "1", kmsg.ConfigSourceDynamicTopicConfig) {
		t.Fatalf("after incremental set: %+v", got)
	}
	if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, "t"); err != nil || r[0].Err != nil {
		t.Fatalf("incremental delete: %v %+v", err, r)
	}
	got = describeTopicConfigs(t, adm, "t")
	if !configIs(got["retention.ms"], strconv.FormatInt(logRetentionMs, 10), kmsg.ConfigSourceDefaultConfig) || !configIs(got["min.insync.replicas"], "1", kmsg.ConfigSourceDynamicTopicConfig) {
		t.Fatalf("after incremental delete: %+v", got)
	}
	for _, bad := range [][]kadm.AlterConfig{
		{set("retention.ms", "5"), set("cleanup.policy", "compact")},
		{set("retention.ms", "5"), {Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("delete")}},
	} {
		r, err := adm.AlterTopicConfigs(ctx, bad, "t")
		if err != nil || !errorsIs(r[0].Err, kerr.InvalidConfig) {
			t.Fatalf("refused change: %v %+v", err, r)
		}
	}
	if r, err := adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "7")}, "t"); err != nil || r[0].Err != nil {
		t.Fatalf("validate only: %v %+v", err, r)
	}
	if got := describeTopicConfigs(t, adm, "t"); got["retention.ms"].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("refused or validate-only changes were stored: %+v", got["retention.ms"])
	}

	// The non-incremental API replaces the whole set.
	if r, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{set("max.message.bytes", "100")}, "t"); err != nil || r[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, r)
	}
	got = describeTopicConfigs(t, adm, "t")
	if !configIs(got["max.message.bytes"], "100", kmsg.ConfigSourceDynamicTopicConfig) || got["min.insync.replicas"].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("after alter: %+v", got)
	}
	// max.message.bytes is enforced on the next produce.
	if r := rawProduce(t, cl, "t", 0, rawBatch(-1, -1, -1, strings.Repeat("x", 100))); r.ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("produce over the topic's max.message.bytes: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	r, err := adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{set("num.partitions", "3")})
	if err != nil || len(r) != 1 || !errorsIs(r[0].Err, kerr.InvalidRequest) {
		t.Fatalf("broker config: %v %+v", err, r)
	}
}

// TestLogAppendTime: a topic with message.timestamp.type=LogAppendTime
// stores batches stamped with the broker's time, CRC redone.
func TestLogAppendTime(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(testCtx(t), 1, 1, map[string]*string{"message.timestamp.type": kmsg.StringPtr("LogAppendTime")}, "lat"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	before := time.Now().UnixMilli()
	r := rawProduce(t, cl, "lat", 0, rawBatch(-1, -1, -1, "a", "b"))
	if r.ErrorCode != 0 || r.LogAppendTime < before {
		t.Fatalf("produce: %v log append time %d, want at least %d", kerr.ErrorForCode(r.ErrorCode), r.LogAppendTime, before)
	}
	p := rawFetch(t, cl, "lat", 0, 0, 0)
	bs := batches(t, p.RecordBatches)
	if len(bs) != 1 || bs[0].Attributes&attrLogAppendTime == 0 || bs[0].MaxTimestamp != r.LogAppendTime {
		t.Fatalf("stored batch attributes %#x max timestamp %d, want LogAppendTime %d", bs[0].Attributes, bs[0].MaxTimestamp, r.LogAppendTime)
	}
	raw := p.RecordBatches
	if crc := crc32.Checksum(raw[batchAttributes:], castagnoli); crc != binary.BigEndian.Uint32(raw[batchCRCAt:]) {
		t.Fatal("stamped batch fails its CRC")
	}
	recs := consumeN(t, b.Addr(), "lat", 2)
	if !recs[0].Timestamp.Equal(time.UnixMilli(r.LogAppendTime)) {
		t.Fatalf("consumer sees timestamp %v, want the log append time %d", recs[0].Timestamp, r.LogAppendTime)
	}
}

// TestMinInsyncReplicas: a single node is one in-sync replica, so a topic
// asking for two refuses acks=-1 produces (nothing stored) and takes
// acks=1 ones, as Kafka.
func TestMinInsyncReplicas(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	if r, err := kadm.NewClient(cl).CreateTopic(testCtx(t), 1, 1, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, "isr"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	if r := rawProduce(t, cl, "isr", 0, rawBatch(-1, -1, -1, "all")); r.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=-1: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(r.ErrorCode))
	}
	raw, ok := dialRaw(t, b.Addr()).roundTrip(produceReq("isr", 0, 1, 10*time.Second, rawBatch(-1, -1, -1, "one")))
	if !ok {
		t.Fatal("connection closed")
	}
	if p := raw.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("acks=1: %v at %d, want offset 0 (nothing stored by the refused one)", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
}

// TestTopicRetention: retention.ms and retention.bytes move a partition's
// log start past what they no longer keep, at a batch boundary, never
// past the high watermark; a topic without them keeps everything.
func TestTopicRetention(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	for _, topic := range []string{"byTime", "bySize", "kept"} {
		createTopic(t, cl, topic, 1)
		produceSync(t, cl, topic, 0, "aaaa", "bbbb", "cccc", "dddd", "eeee")
	}
	start := func(topic string) int64 {
		t.Helper()
		l, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := l.Lookup(topic, 0)
		return o.Offset
	}
	alter := func(topic, name, value string) {
		t.Helper()
		r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kmsg.StringPtr(value)}}, topic)
		if err != nil || r[0].Err != nil {
			t.Fatalf("set %s=%s: %v %+v", name, value, err, r)
		}
	}
	alter("byTime", "retention.ms", "3600000")
	one := b.st.PartitionBytes("bySize", 0, 0, 1)
	alter("bySize", "retention.bytes", strconv.FormatInt(2*one, 10))
	b.applyTopicRetention()
	if s := start("byTime"); s != 0 {
		t.Fatalf("an hour's retention moved the start to %d", s)
	}
	if s := start("bySize"); s != 3 {
		t.Fatalf("retention.bytes of two records: start %d, want 3", s)
	}
	alter("byTime", "retention.ms", "1")
	// Every record is now at least a few milliseconds older than 1 ms.
	time.Sleep(10 * time.Millisecond)
	b.applyTopicRetention()
	if s := start("byTime"); s != 5 {
		t.Fatalf("retention.ms 1: start %d, want 5", s)
	}
	if s := start("kept"); s != 0 {
		t.Fatalf("a topic without retention configs: start %d", s)
	}
	if p := rawFetch(t, cl, "bySize", 0, 2, 0); p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch below the retained bytes: %v", kerr.ErrorForCode(p.ErrorCode))
	}
}

// TestACLAlterConfigs: altering a topic's configs needs admin on it;
// altering the broker's, admin on every topic.
func TestACLAlterConfigs(t *testing.T) {
	b := aclBroker(t)
	for _, tc := range []struct {
		user string
		typ  kmsg.ConfigResourceType
		name string
		want int16
	}{
		{"bob", kmsg.ConfigResourceTypeTopic, "orders", kerr.TopicAuthorizationFailed.Code},
		{"bob", kmsg.ConfigResourceTypeBroker, "", kerr.ClusterAuthorizationFailed.Code},
		{"alice", kmsg.ConfigResourceTypeTopic, "orders", 0},
		{"alice", kmsg.ConfigResourceTypeBroker, "", kerr.InvalidRequest.Code},
	} {
		cl := userClient(t, b, tc.user)
		inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
		ir := kmsg.NewIncrementalAlterConfigsRequestResource()
		ir.ResourceType, ir.ResourceName = tc.typ, tc.name
		ic := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		ic.Name, ic.Value = "max.message.bytes", kmsg.StringPtr("5000")
		ir.Configs = append(ir.Configs, ic)
		inc.Resources = append(inc.Resources, ir)
		raw, err := direct(t, b, cl, inc)
		if err != nil {
			t.Fatal(err)
		}
		if got := raw.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; got != tc.want {
			t.Errorf("%s IncrementalAlterConfigs %v %q: %v, want %v", tc.user, tc.typ, tc.name, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
		alt := kmsg.NewPtrAlterConfigsRequest()
		ar := kmsg.NewAlterConfigsRequestResource()
		ar.ResourceType, ar.ResourceName = tc.typ, tc.name
		ac := kmsg.NewAlterConfigsRequestResourceConfig()
		ac.Name, ac.Value = "max.message.bytes", kmsg.StringPtr("5000")
		ar.Configs = append(ar.Configs, ac)
		alt.Resources = append(alt.Resources, ar)
		raw, err = direct(t, b, cl, alt)
		if err != nil {
			t.Fatal(err)
		}
		if got := raw.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode; got != tc.want {
			t.Errorf("%s AlterConfigs %v %q: %v, want %v", tc.user, tc.typ, tc.name, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
}

// TestMinInsyncReplicasReplicated: with followers, this node and the
// in-sync ones count (the fake has one of two in sync): two are enough,
// three are not.
func TestMinInsyncReplicasReplicated(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Replication = newFakeReplication()
	b := startBroker(t, cfg)
	cl := newClient(t, b.Addr())
	for _, tc := range []struct {
		min  string
		want int16
	}{{"2", 0}, {"3", kerr.NotEnoughReplicas.Code}} {
		topic := "isr" + tc.min
		if r, err := kadm.NewClient(cl).CreateTopic(testCtx(t), 1, 1, map[string]*string{"min.insync.replicas": kmsg.StringPtr(tc.min)}, topic); err != nil || r.Err != nil {
			t.Fatal(err, r.Err)
		}
		if r := rawProduce(t, cl, topic, 0, rawBatch(-1, -1, -1, "v")); r.ErrorCode != tc.want {
			t.Errorf("min.insync.replicas=%s: %v, want %v", tc.min, kerr.ErrorForCode(r.ErrorCode), kerr.ErrorForCode(tc.want))
		}
	}
}
