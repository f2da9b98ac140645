package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/unilog/unilog/producerstate"
)

// TestPromoteCatchesUpProducerState: a follower keeps the idempotent
// producers' state of the log it replicates, so Promote reads only what
// its catch-up had not reached, and a producer retrying against the new
// leader gets its original offsets for every batch the log still holds,
// never a second copy, while a batch a truncation took out of the log is
// stored anew rather than answered with the offsets of a record that is
// gone. The state comes from the follower's own catch-up, from its
// snapshot after a restart, or from a reload after a truncation below
// what it had applied, with the snapshot at or past the cut.
func TestPromoteCatchesUpProducerState(t *testing.T) {
	for _, tc := range []struct {
		name string
		// cut truncates the follower (a new leader without the tail) to
		// the end of the first batch, after the snapshot was written at
		// the end of the first batch (snapAtCut) or of the second.
		cut, snapAtCut bool
		restart        bool // the follower process restarts before promotion
	}{
		{name: "caught up while following"},
		{name: "follower restarted", restart: true},
		{name: "truncated, snapshot at the cut", cut: true, snapAtCut: true},
		{name: "truncated, snapshot past the cut", cut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaderDir, followerDir := t.TempDir(), t.TempDir()
			cfg := testConfig(t, leaderDir)
			so := testStore()
			so.CommitLog.FileSize = replicaFileSize
			b, cl, pid, epoch := startIdempotent(t, cfg, so)
			t.Cleanup(func() { b.Close() })
			shareMetadata(t, leaderDir, followerDir)
			log, hook := test.NewNullLogger()
			log.SetLevel(logrus.InfoLevel)
			fcfg := testConfig(t, followerDir)
			fcfg.Logger = log
			f := startBrokerWith(t, fcfg, so)
			f.Demote()

			batches := [][]byte{rawBatch(pid, epoch, 0, "a", "b"), rawBatch(pid, epoch, 2, "c")}
			for i, batch := range batches {
				if r := rawProduce(t, cl, "idem", 0, batch); r.ErrorCode != 0 || r.BaseOffset != int64(2*i) {
					t.Fatalf("batch %d: %v at %d", i, kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
				}
				replicate(t, b, f, int64(i+1))
				caughtUp(t, f)
				if i == 0 || !tc.snapAtCut {
					if err := f.snapshotProducers(); err != nil {
						t.Fatal(err)
					}
				}
			}
			end := f.st.WriteOffset()
			kept := 2 // batches the promoted follower's log holds
			if tc.cut {
				kept = 1
				to, ok := f.st.Partition("idem", 0).RecordEnd(1)
				if !ok {
					t.Fatal("no record at offset 1")
				}
				if err := f.TruncateLog(to); err != nil {
					t.Fatalf("TruncateLog(%d): %v", to, err)
				}
				end = to
			}
			if tc.restart {
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
				f = startBroker(t, fcfg)
				f.Demote()
			}
			hook.Reset()
			if err := f.Promote(testCtx(t)); err != nil {
				t.Fatalf("Promote: %v", err)
			}
			if tc.cut && !tc.snapAtCut {
				if _, err := os.Stat(filepath.Join(followerDir, producerstate.FileName)); err == nil {
					t.Fatal("a snapshot taken past the cut survived it")
				}
			}
			promoted := false
			for _, e := range hook.AllEntries() {
				if e.Message == "promoted: producer state caught up, group offsets rebuilt from the log" {
					promoted = true
					from, to := e.Data["producer_state_from"], e.Data["to"]
					if to != end || !tc.cut && from != end {
						t.Fatalf("Promote read the producer state from %v to %v; the follower had caught up to %d", from, to, end)
					}
				}
			}
			if !promoted {
				t.Fatal("Promote logged nothing")
			}

			fcl := newClient(t, f.Addr())
			for i, batch := range batches {
				r := rawProduce(t, fcl, "idem", 0, batch)
				if r.ErrorCode != 0 || r.BaseOffset != int64(2*i) {
					t.Fatalf("retry of batch %d on the promoted follower: %v at %d, want %d", i, kerr.ErrorForCode(r.ErrorCode), r.BaseOffset, 2*i)
				}
			}
			if r := rawProduce(t, fcl, "idem", 0, rawBatch(pid, epoch, 5, "gap")); r.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
				t.Fatalf("a sequence gap on the promoted follower: %v", kerr.ErrorForCode(r.ErrorCode))
			}
			if r := rawProduce(t, fcl, "idem", 0, rawBatch(pid, epoch, 3, "d")); r.ErrorCode != 0 || r.BaseOffset != 3 {
				t.Fatalf("the next batch on the promoted follower: %v at %d, want 3", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
			}
			if p := rawFetch(t, fcl, "idem", 0, 0, 0); p.HighWatermark != 4 {
				t.Fatalf("high watermark %d, want 4 (%d batches kept, the rest stored once)", p.HighWatermark, kept)
			}
		})
	}
}

// caughtUp waits until the follower's producer state covers its whole log.
func caughtUp(t *testing.T, f *Broker) {
	t.Helper()
	eventually(t, "the follower's producer state caught up", func() (bool, string) {
		f.replica.mu.Lock()
		defer f.replica.mu.Unlock()
		return f.replica.replayed == f.st.WriteOffset(), fmt.Sprint(f.replica.replayed, " of ", f.st.WriteOffset())
	})
}
