package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestProducerPreloadDropsDeletedTopic: the snapshot is filed while the
// store opens, so a topic deleted between the filing and the broker's
// wait (by the control plane, say) must not keep its producers, and a
// topic still there keeps them.
func TestProducerPreloadDropsDeletedTopic(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	b, cl, pid, epoch := startIdempotent(t, cfg, testStore())
	createTopic(t, cl, "kept", 1)
	for _, topic := range []string{"idem", "kept"} {
		if r := rawProduce(t, cl, topic, 0, rawBatch(pid, epoch, 0, "v")); r.ErrorCode != 0 {
			t.Fatalf("%s: %v", topic, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	meta, err := openFileMetadata(cfg.DataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	pre := PreloadProducers(cfg.DataDir, meta)
	<-pre.done
	if len(pre.parts) != 2 {
		t.Fatalf("filed %d partitions, want 2", len(pre.parts))
	}
	if err := meta.DeleteTopic("idem"); err != nil {
		t.Fatal(err)
	}
	parts, _, err := pre.wait(meta, 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := parts[topicPartition{"idem", 0}]; ok {
		t.Fatal("the deleted topic kept its producers")
	}
	if p := parts[topicPartition{"kept", 0}]; p == nil || len(p.Producers) != 1 || p.Producers[0].ID != pid {
		t.Fatalf("the remaining topic's state: %+v", p)
	}
}
