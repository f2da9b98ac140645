package broker

import (
	"bytes"
	"strings"
	"testing"
)

// TestFetchSendfile: a response whose large batches go by sendfile,
// between small batches of the same partition and another partition's,
// reads exactly as stored.
func TestFetchSendfile(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "s", 2)
	big := strings.Repeat("b", sendfileMin/2+100)
	want := make(map[int32]int64) // records per partition
	produce := func(p int32, values ...string) {
		if rp := rawProduce(t, cl, "s", p, rawBatch(-1, -1, -1, values...)); rp.ErrorCode != 0 {
			t.Fatalf("produce to %d: error %d", p, rp.ErrorCode)
		}
		want[p] += int64(len(values))
	}
	for range 3 {
		produce(0, big, big)
		produce(0, "small", "small")
		produce(1, "other")
	}
	produce(0, big, big)

	h := holdFetch(t, b, fetchReq("s", 0, 0, 0, 1))
	if !h.c.fetch.sendfiles() {
		t.Fatal("no batch of the response goes by sendfile")
	}
	resp := h.response(t)
	for _, rp := range resp.Topics[0].Partitions {
		if rp.ErrorCode != 0 {
			t.Fatalf("partition %d: error %d", rp.Partition, rp.ErrorCode)
		}
		if stored := storedPartition(t, b, "s", rp.Partition, 0, want[rp.Partition]); !bytes.Equal(rp.RecordBatches, stored) {
			t.Fatalf("partition %d: read %d bytes, stored %d, not the same", rp.Partition, len(rp.RecordBatches), len(stored))
		}
	}
	if len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("%d partitions in the response", len(resp.Topics[0].Partitions))
	}
}
