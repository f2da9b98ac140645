package broker

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestProducerSnapshotFormat(t *testing.T) {
	s := producerSnapshot{logOffset: 4096, parts: []partitionSnapshot{{
		tp: topicPartition{"orders", 3},
		producers: map[int64]*producerSeq{
			7: {epoch: 2, batches: []seqBatch{{0, 4, 10, 900}, {5, 5, 15, 1000}}},
		},
	}}}
	good := encodeProducerSnapshot(s)
	got, err := decodeProducerSnapshot(good)
	if err != nil {
		t.Fatal(err)
	}
	if got.logOffset != 4096 || len(got.parts) != 1 || got.parts[0].tp != s.parts[0].tp {
		t.Fatalf("decoded %+v", got)
	}
	if ps := got.parts[0].producers[7]; ps == nil || ps.epoch != 2 || len(ps.batches) != 2 || ps.batches[1] != (seqBatch{5, 5, 15, 1000}) {
		t.Fatalf("decoded producer %+v", got.parts[0].producers[7])
	}
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
	}{
		{"empty", func([]byte) []byte { return nil }},
		{"truncated", func(b []byte) []byte { return b[:len(b)-9] }},
		{"bit flip", func(b []byte) []byte { b[30] ^= 1; return b }},
		{"bad magic", func(b []byte) []byte { b[0] = 'X'; return reCRC(b) }},
		{"newer version", func(b []byte) []byte { b[5] = 2; return reCRC(b) }},
		{"count beyond the data", func(b []byte) []byte { b[19] = 9; return reCRC(b) }},
		{"trailing bytes", func(b []byte) []byte { return reCRC(append(b[:len(b)-4:len(b)-4], 0, 0, 0, 0, 0)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeProducerSnapshot(tc.edit(bytes.Clone(good))); !errors.Is(err, errProducerSnapshot) {
				t.Fatalf("decode: %v, want errProducerSnapshot", err)
			}
		})
	}
}

// reCRC recomputes the trailing CRC of an edited snapshot, so the check
// under test is the one after the CRC.
func reCRC(b []byte) []byte { return appendCRC(b[:len(b)-4]) }

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
			s, err := decodeProducerSnapshot(readFile(t, path))
			if err != nil {
				t.Fatal(err)
			}
			// A batch with sequence 1 the log lost in a crash: trusting it
			// would swallow the producer's real next batch as a duplicate.
			for _, p := range s.parts {
				if ps := p.producers[pid]; ps != nil {
					ps.batches = append(ps.batches, seqBatch{firstSeq: 1, lastSeq: 1, baseOffset: 1000, end: s.logOffset + 1<<20})
				}
			}
			writeFile(t, path, encodeProducerSnapshot(s))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			path := filepath.Join(cfg.DataDir, producerSnapshotFile)
			b, cl, pid, epoch := startIdempotent(t, cfg)
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
			warned := false
			for _, e := range hook.AllEntries() {
				if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "producer-state snapshot not used") {
					warned = true
				}
			}
			if warned != tc.warn {
				t.Fatalf("warning about the snapshot logged: %v, want %v", warned, tc.warn)
			}
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
