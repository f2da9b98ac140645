package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceAcrossAppendGroups: a request naming more partitions than
// one append group holds is answered, deduplicated on retry and stored
// as if appended at once.
func TestProduceAcrossAppendGroups(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	const partitions = 2*maxAppendGroup + 10
	createTopic(t, cl, "wide", partitions)
	pid, epoch := initProducerID(t, cl)
	send := func(seq int32) *kmsg.ProduceResponse {
		t.Helper()
		req := produceReq("wide", 0, -1, 10*time.Second, nil)
		rt := &req.Topics[0]
		rt.Partitions = rt.Partitions[:0]
		for p := range int32(partitions) {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, rawBatch(pid, epoch, seq, "a", "b")
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, step := range []struct {
		name string
		seq  int32
		base int64
	}{
		{"first", 0, 0},
		{"retry", 0, 0}, // a duplicate: the original's offsets
		{"next", 2, 2},
	} {
		for i, got := range send(step.seq).Topics[0].Partitions {
			if got.Partition != int32(i) || got.ErrorCode != 0 || got.BaseOffset != step.base {
				t.Fatalf("%s: batch %d: partition %d %v base %d, want partition %d base %d", step.name, i,
					got.Partition, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset, i, step.base)
			}
		}
	}
	for p := range int32(partitions) {
		if _, end := b.st.Bounds("wide", p); end != 4 {
			t.Fatalf("partition %d holds offsets [0, %d), want [0, 4)", p, end)
		}
	}
	// Partition 0 named again inside the second group, with its next
	// sequence: the group ends before it and it is checked against the
	// first, so both are stored in order.
	req := produceReq("wide", 0, -1, 10*time.Second, nil)
	rt := &req.Topics[0]
	rt.Partitions = rt.Partitions[:0]
	for i := range maxAppendGroup + 50 {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(i), rawBatch(pid, epoch, 4, "c", "d")
		if i == maxAppendGroup+40 {
			rp.Partition, rp.Records = 0, rawBatch(pid, epoch, 6, "e", "f")
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range resp.Topics[0].Partitions {
		want := int64(4)
		if i == maxAppendGroup+40 {
			want = 6
		}
		if got.ErrorCode != 0 || got.BaseOffset != want {
			t.Fatalf("partition named twice: batch %d (partition %d): %v base %d, want base %d", i, got.Partition, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset, want)
		}
	}
	if _, end := b.st.Bounds("wide", 0); end != 8 {
		t.Fatalf("partition 0 holds offsets [0, %d), want [0, 8)", end)
	}
}
