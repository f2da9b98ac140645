package broker

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/unilog/unilog/producerstate"
)

// TestProducerPreloadDropsDeletedTopic: the snapshot is filed while the
// store opens, so a topic deleted between the filing and the broker's
// wait (by the control plane, say) must not keep its producers, and a
// topic still there keeps them.
func TestProducerPreloadDropsDeletedTopic(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	pid := producersIn(t, cfg, "idem", "kept")
	meta, err := openFileMetadata(cfg.DataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	pre := PreloadProducers(cfg.DataDir, meta)
	<-pre.done
	if pre.parts.get("idem", 0) == nil || pre.parts.get("kept", 0) == nil {
		t.Fatalf("filed %v, want idem/0 and kept/0", pre.parts)
	}
	if err := meta.DeleteTopic("idem"); err != nil {
		t.Fatal(err)
	}
	parts, _, err := pre.wait(meta, 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	if parts.get("idem", 0) != nil {
		t.Fatal("the deleted topic kept its producers")
	}
	if p := parts.get("kept", 0); p == nil || len(p.Producers) != 1 || p.Producers[0].ID != pid {
		t.Fatalf("the remaining topic's state: %+v", p)
	}
}

// closeWatch is a MetadataStore that tells whether Topic was called after
// Close. Its Topic waits for the test to let it go (or a while, so a
// broker waiting for it ends): the preload is still reading when the
// store fails to open.
type closeWatch struct {
	MetadataStore
	closed  atomic.Bool
	release chan struct{}
	late    atomic.Bool
	read    chan struct{} // a Topic call returned
}

func (m *closeWatch) Topic(name string) (TopicMeta, bool) {
	select {
	case <-m.release:
	case <-time.After(2 * time.Second):
	}
	if m.closed.Load() {
		m.late.Store(true)
	}
	defer func() {
		select {
		case m.read <- struct{}{}:
		default:
		}
	}()
	return m.MetadataStore.Topic(name)
}

func (m *closeWatch) Close() error {
	m.closed.Store(true)
	return m.MetadataStore.Close()
}

// TestProducerPreloadEndsBeforeMetadataCloses: when the store fails to
// open, the preload reading the snapshot is waited for before the
// metadata it reads is closed. Before, open closed the metadata at once
// and the preload read it afterwards.
func TestProducerPreloadEndsBeforeMetadataCloses(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	producersIn(t, cfg, "idem")
	meta, err := openFileMetadata(cfg.DataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	watch := &closeWatch{MetadataStore: meta, release: make(chan struct{}), read: make(chan struct{}, 1)}
	cfg.Metadata = watch
	bad := testStore()
	bad.CommitLog.FileSize = 1000 // no page multiple: the store refuses to open
	if _, err := open(cfg, bad, nil); err == nil {
		t.Fatal("the store opened with a file size of 1000 bytes")
	}
	close(watch.release)
	if !watch.closed.Load() {
		t.Fatal("the metadata was not closed after the store failed")
	}
	select {
	case <-watch.read:
	case <-time.After(time.Minute):
		t.Fatal("the preload never read the metadata")
	}
	if watch.late.Load() {
		t.Error("the preload read the metadata after it was closed")
	}
}

// producersIn leaves in cfg's data directory a producer-state snapshot
// of one idempotent producer, which stored a record in partition 0 of
// each topic ("idem" is created with the producer, the others are
// created here); it returns the producer's id.
func producersIn(t *testing.T, cfg Config, topics ...string) int64 {
	t.Helper()
	b, cl, pid, epoch := startIdempotent(t, cfg, testStore())
	for _, topic := range topics {
		if topic != "idem" {
			createTopic(t, cl, topic, 1)
		}
		if r := rawProduce(t, cl, topic, 0, rawBatch(pid, epoch, 0, "v")); r.ErrorCode != 0 {
			t.Fatalf("%s: %v", topic, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestProducerPreloadFilesOnlyTopicPartitions: a snapshot entry naming a
// partition the topic does not have (a negative one, or one past its
// count) is not filed, and the topic's table stays the topic's length.
func TestProducerPreloadFilesOnlyTopicPartitions(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	pid := producersIn(t, cfg, "idem", "kept")
	path := filepath.Join(cfg.DataDir, producerstate.FileName)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := producerstate.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	var kept producerstate.PartitionSnapshot
	for _, p := range s.Parts {
		if p.Topic == "kept" {
			kept = p
		}
	}
	for _, partition := range []int32{-1, 1, 1 << 30} {
		bogus := kept
		bogus.Partition = partition
		bogus.State = kept.State.Clone()
		s.Parts = append(s.Parts, bogus)
	}
	if err := os.WriteFile(path, s.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	meta, err := openFileMetadata(cfg.DataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	parts, _, err := PreloadProducers(cfg.DataDir, meta).wait(meta, 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	if p := parts.get("kept", 0); p == nil || p.Producer(pid) == nil {
		t.Fatalf("kept/0 not filed: %+v", p)
	}
	if n := len(parts["kept"]); n != 1 {
		t.Fatalf("kept's table has %d slots, want 1", n)
	}
}
