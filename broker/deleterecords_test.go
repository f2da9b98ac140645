package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func deleteRecords(t testing.TB, b *Broker, topic string, partition int32, offset int64) kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	raw, err := direct(t, b, newClient(t, b.Addr()), req)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
}

// TestDeleteRecords moves a partition's log start: fetches below it are
// out of range, earliest answers it, and it survives a restart; offsets
// beyond the high watermark are refused and -1 is the high watermark.
func TestDeleteRecords(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	b, err := Open(cfg, testStore())
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "t", 2)
	produceSync(t, cl, "t", 0, "a", "b", "c", "d", "e")
	produceSync(t, cl, "t", 1, "x")

	for _, tc := range []struct {
		partition int32
		offset    int64
		err       int16
		low       int64
	}{
		{0, 6, kerr.OffsetOutOfRange.Code, -1},
		{0, -2, kerr.OffsetOutOfRange.Code, -1},
		{0, 3, 0, 3},
		{0, 2, 0, 3}, // never back
		{1, -1, 0, 1},
		{2, 0, kerr.UnknownTopicOrPartition.Code, -1},
	} {
		if got := deleteRecords(t, b, "t", tc.partition, tc.offset); got.ErrorCode != tc.err || got.LowWatermark != tc.low {
			t.Errorf("p%d to %d: %v low %d, want %v %d", tc.partition, tc.offset, kerr.ErrorForCode(got.ErrorCode), got.LowWatermark, kerr.ErrorForCode(tc.err), tc.low)
		}
	}
	if got := deleteRecords(t, b, offsetsTopic, 0, 0); got.ErrorCode != kerr.InvalidTopicException.Code {
		t.Errorf("offsets topic: %v", kerr.ErrorForCode(got.ErrorCode))
	}

	check := func(when string) {
		t.Helper()
		if p := rawFetch(t, cl, "t", 0, 1, 0); p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != 3 {
			t.Fatalf("%s: fetch below the start: %v log start %d", when, kerr.ErrorForCode(p.ErrorCode), p.LogStartOffset)
		}
		p := rawFetch(t, cl, "t", 0, 3, 0)
		if p.ErrorCode != 0 || p.LogStartOffset != 3 || p.HighWatermark != 5 {
			t.Fatalf("%s: fetch at the start: %v log start %d hw %d", when, kerr.ErrorForCode(p.ErrorCode), p.LogStartOffset, p.HighWatermark)
		}
		if bs := batches(t, p.RecordBatches); len(bs) != 2 || bs[0].FirstOffset != 3 {
			t.Fatalf("%s: fetched %d batches from %d, want 2 from 3", when, len(bs), bs[0].FirstOffset)
		}
		starts, err := kadm.NewClient(cl).ListStartOffsets(testCtx(t), "t")
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range map[int32]int64{0: 3, 1: 1} {
			if o, _ := starts.Lookup("t", p); o.Err != nil || o.Offset != want {
				t.Fatalf("%s: earliest of p%d %+v, want %d", when, p, o, want)
			}
		}
		if r := rawProduce(t, cl, "t", 0, rawBatch(-1, -1, -1, "f")); r.ErrorCode != 0 || r.LogStartOffset != 3 {
			t.Fatalf("%s: produce: %v log start %d", when, kerr.ErrorForCode(r.ErrorCode), r.LogStartOffset)
		}
	}
	check("before the restart")
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startBroker(t, cfg)
	cl = newClient(t, b.Addr())
	if p := rawFetch(t, cl, "t", 0, 2, 0); p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != 3 {
		t.Fatalf("after the restart: fetch below the start: %v log start %d", kerr.ErrorForCode(p.ErrorCode), p.LogStartOffset)
	}
	// The produce of the first check moved the high watermark to 6.
	if got := deleteRecords(t, b, "t", 0, -1); got.ErrorCode != 0 || got.LowWatermark != 6 {
		t.Fatalf("after the restart, to the high watermark: %v low %d", kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
	}
	starts, err := kadm.NewClient(cl).ListStartOffsets(testCtx(t), "t")
	if o, _ := starts.Lookup("t", 0); err != nil || o.Offset != 6 {
		t.Fatalf("earliest after the restart: %+v %v, want 6", o, err)
	}
}

// TestDeleteRecordsKadm: the admin client's call, as tools make it.
func TestDeleteRecordsKadm(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "t", 1)
	produceSync(t, cl, "t", 0, "a", "b", "c")
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 2})
	resp, err := kadm.NewClient(cl).DeleteRecords(testCtx(t), offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := resp.Lookup("t", 0); !ok || r.Err != nil || r.LowWatermark != 2 {
		t.Fatalf("%+v", r)
	}
	if got := consumeN(t, b.Addr(), "t", 1); string(got[0].Value) != "c" || got[0].Offset != 2 {
		t.Fatalf("consumed %q at %d from the start, want c at 2", got[0].Value, got[0].Offset)
	}
}

// TestListOffsetsByTimeAfterDeleteRecords: a lookup by time never answers
// an offset below the log start DeleteRecords moved (it did: the consume
// queue still indexes the records below it).
func TestListOffsetsByTimeAfterDeleteRecords(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "t", 1)
	produceSync(t, cl, "t", 0, "a", "b", "c", "d")
	if got := deleteRecords(t, b, "t", 0, 2); got.ErrorCode != 0 {
		t.Fatalf("delete records: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	offs, err := kadm.NewClient(cl).ListOffsetsAfterMilli(testCtx(t), 0, "t")
	if o, _ := offs.Lookup("t", 0); err != nil || o.Offset != 2 {
		t.Fatalf("the first offset at or after time 0: %+v %v, want the log start 2", o, err)
	}
}

// TestACLDeleteRecords: moving a log start needs admin on the topic.
func TestACLDeleteRecords(t *testing.T) {
	b := aclBroker(t)
	for _, tc := range []struct {
		user string
		want int16
	}{{"bob", kerr.TopicAuthorizationFailed.Code}, {"alice", 0}} {
		req := kmsg.NewPtrDeleteRecordsRequest()
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		raw, err := direct(t, b, userClient(t, b, tc.user), req)
		if err != nil {
			t.Fatal(err)
		}
		if got := raw.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Errorf("%s: %v, want %v", tc.user, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
}
