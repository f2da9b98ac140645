package broker

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/framed"
	"github.com/unilog/unilog/producerstate"
)

// checkSnapshotWarning fails unless the broker warned that it did not use
// the snapshot exactly when want.
func checkSnapshotWarning(t *testing.T, hook *test.Hook, want bool) {
	t.Helper()
	warned := false
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "producer-state snapshot not used") {
			warned = true
		}
	}
	if warned != want {
		t.Fatalf("warning about the snapshot logged: %v, want %v", warned, want)
	}
}

// TestIdempotenceAcrossRestart: a producer whose last batch is more than
// 256 batches back retries after a restart and is deduplicated, whether the
// state comes from the snapshot written at close, from an older snapshot
// plus the log after it, or, when the snapshot cannot be trusted, from the
// whole log (with a warning); an untrusted snapshot never makes new data a
// duplicate.
func TestIdempotenceAcrossRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		// tamper edits the snapshot of the stopped broker; old is the
		// snapshot written before the producer's batch.
		tamper func(t *testing.T, path string, old []byte, pid int64, epoch int16)
		warn   bool
	}{
		{name: "snapshot at close"},
		{name: "older snapshot plus the log", tamper: func(t *testing.T, path string, old []byte, _ int64, _ int16) {
			writeFile(t, path, old)
		}},
		{name: "corrupt snapshot", warn: true, tamper: func(t *testing.T, path string, _ []byte, _ int64, _ int16) {
			b := readFile(t, path)
			b[len(b)/2] ^= 0xff
			writeFile(t, path, b)
		}},
		{name: "missing snapshot", tamper: func(t *testing.T, path string, _ []byte, _ int64, _ int16) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "snapshot ahead of the log", warn: true, tamper: func(t *testing.T, path string, _ []byte, pid int64, epoch int16) {
			s, err := producerstate.Decode(readFile(t, path))
			if err != nil {
				t.Fatal(err)
			}
			// A batch with sequence 1 the log lost in a crash: trusting it
			// would swallow the producer's real next batch as a duplicate.
			for _, p := range s.Parts {
				if ps := p.State.Producer(pid); ps != nil {
					ps.Batches = append(ps.Batches, producerstate.Stored{FirstSeq: 1, LastSeq: 1, Base: 1000, End: s.LogOffset + 1<<20})
				}
			}
			writeFile(t, path, s.Encode())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			path := filepath.Join(cfg.DataDir, producerstate.FileName)
			b, cl, pid, epoch := startIdempotent(t, cfg, testStore())
			if err := b.snapshotProducers(); err != nil {
				t.Fatal(err)
			}
			old := readFile(t, path)
			first := rawBatch(pid, epoch, 0, "first")
			if r := rawProduce(t, cl, "idem", 0, first); r.ErrorCode != 0 || r.BaseOffset != 0 {
				t.Fatalf("first: %v base %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
			}
			const others = 300 // beyond the 256 batches the old rebuild read back
			for i := range others {
				if r := rawProduce(t, cl, "idem", 0, rawBatch(-1, -1, -1, "other")); r.ErrorCode != 0 || r.BaseOffset != int64(1+i) {
					t.Fatalf("other %d: %v base %d", i, kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
				}
			}
			cl.Close()
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.tamper != nil {
				tc.tamper(t, path, old, pid, epoch)
			}

			log, hook := test.NewNullLogger()
			cfg.Logger = log
			b = startBroker(t, cfg)
			cl = newClient(t, b.Addr())
			if r := rawProduce(t, cl, "idem", 0, first); r.ErrorCode != 0 || r.BaseOffset != 0 {
				t.Fatalf("retry of a batch %d batches back after restart: %v base %d, want the original offset 0", others, kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
			}
			if r := rawProduce(t, cl, "idem", 0, rawBatch(pid, epoch, 1, "second")); r.ErrorCode != 0 || r.BaseOffset != 1+others {
				t.Fatalf("next batch after restart: %v base %d, want %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset, 1+others)
			}
			if p := rawFetch(t, cl, "idem", 0, 0, 0); p.HighWatermark != 2+others {
				t.Fatalf("high watermark %d, want %d: the retry was stored again", p.HighWatermark, 2+others)
			}
			checkSnapshotWarning(t, hook, tc.warn)
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestProducerStateOfRecreatedTopic: a producer writes to a topic that is
// then deleted and created again. After a restart the new incarnation must
// hold no producer state, whether it comes from the snapshot at close, from
// a snapshot taken before the delete plus the log, from the whole log, or
// from a version 1 snapshot (which names no incarnation, so is not used):
// the same producer's first batch to the new topic is stored, not answered
// as a duplicate of the old incarnation's.
func TestProducerStateOfRecreatedTopic(t *testing.T) {
	for _, tc := range []struct {
		name string
		// tamper edits the stopped broker's snapshot; old is the one
		// written before the delete.
		tamper func(t *testing.T, path string, old []byte)
		warn   bool
	}{
		{name: "snapshot at close"},
		{name: "snapshot before the delete plus the log", tamper: func(t *testing.T, path string, old []byte) {
			writeFile(t, path, old)
		}},
		{name: "whole log", tamper: func(t *testing.T, path string, _ []byte) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "version 1 snapshot before the delete", warn: true, tamper: func(t *testing.T, path string, old []byte) {
			s, err := producerstate.Decode(old)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, encodeProducerSnapshotV1(s))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			path := filepath.Join(cfg.DataDir, producerstate.FileName)
			b, cl, pid, epoch := startIdempotent(t, cfg, testStore())
			for seq, v := range []string{"old-0", "old-1"} {
				if r := rawProduce(t, cl, "idem", 0, rawBatch(pid, epoch, int32(seq), v)); r.ErrorCode != 0 || r.BaseOffset != int64(seq) {
					t.Fatalf("%s: %v base %d", v, kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
				}
			}
			if err := b.snapshotProducers(); err != nil {
				t.Fatal(err)
			}
			old := readFile(t, path)
			del, err := kadm.NewClient(cl).DeleteTopics(testCtx(t), "idem")
			if err == nil {
				err = del.Error()
			}
			if err != nil {
				t.Fatal(err)
			}
			createTopic(t, cl, "idem", 1)
			cl.Close()
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.tamper != nil {
				tc.tamper(t, path, old)
			}

			log, hook := test.NewNullLogger()
			cfg.Logger = log
			b = startBroker(t, cfg)
			if ps := b.partition("idem", 0).Producers; len(ps) != 0 {
				t.Fatalf("the re-created topic starts with the old incarnation's producers: %v", ps)
			}
			cl = newClient(t, b.Addr())
			if r := rawProduce(t, cl, "idem", 0, rawBatch(pid, epoch, 0, "new-0")); r.ErrorCode != 0 || r.BaseOffset != 0 {
				t.Fatalf("first batch to the new incarnation: %v base %d, want 0", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
			}
			if p := rawFetch(t, cl, "idem", 0, 0, 0); p.HighWatermark != 1 {
				t.Fatalf("high watermark %d, want 1: the batch was taken for the old incarnation's", p.HighWatermark)
			}
			checkSnapshotWarning(t, hook, tc.warn)
		})
	}
}

// encodeProducerSnapshotV1 writes s as version 1 did: no topic ids.
// producerSnapshotHeader is where a snapshot's partitions start (magic,
// version, reserved, log offset, partition count).
func encodeProducerSnapshotV1(s producerstate.Snapshot) []byte {
	const producerSnapshotHeader = 20
	b := producerstate.Snapshot{LogOffset: s.LogOffset}.Encode()
	b = b[:len(b)-4]
	binary.BigEndian.PutUint16(b[4:], 1)
	binary.BigEndian.PutUint32(b[16:], uint32(len(s.Parts)))
	for _, p := range s.Parts {
		one := producerstate.Snapshot{Parts: []producerstate.PartitionSnapshot{p}}.Encode()
		entry := one[producerSnapshotHeader : len(one)-4]
		n := 2 + len(p.Topic)
		b = append(b, entry[:n]...)
		b = append(b, entry[n+commitlog.TopicIDSize:]...)
	}
	return binary.BigEndian.AppendUint32(b, framed.Checksum(b))
}
