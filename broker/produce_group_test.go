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
}
