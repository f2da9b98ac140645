package store

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
)

// TestRebuildConsumeQueues deletes the consume queues and checks that a
// restart rebuilds every queue file byte for byte and the small queues of
// the journal with the same entries (the journal's bytes depend on when
// flushes and promotions happened).
func TestRebuildConsumeQueues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(cqDir string) error
	}{
		{"whole directory", os.RemoveAll},
		{"every partition directory", func(cqDir string) error {
			dirs, err := filepath.Glob(filepath.Join(cqDir, "*", "*"))
			for _, d := range dirs {
				if err == nil {
					err = os.RemoveAll(d)
				}
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := mustOpen(t, testOptions(dir))
			recs := appendN(t, d, 21, 0, 600)
			for p := range int32(5) { // quiet partitions stay in the journal
				if _, err := d.log.Append(&commitlog.Message{Topic: "quiet", Partition: p, Body: []byte("q")}); err != nil {
					t.Fatal(err)
				}
			}
			// Close drops the promotions not started yet.
			waitPromoted(t, d)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			cqDir := filepath.Join(dir, "consumequeue")
			want := queueState(t, cqDir)
			if files := len(readDir(t, cqDir)); files < 20 || len(want) < 6 {
				t.Fatalf("%d consume-queue files, %d queues; the test wants several files per partition and the quiet ones", files, len(want))
			}
			if err := tc.remove(cqDir); err != nil {
				t.Fatal(err)
			}
			d = mustOpen(t, testOptions(dir))
			for _, a := range recs {
				checkReadable(t, d, a)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if got := queueState(t, cqDir); !reflect.DeepEqual(got, want) {
				t.Fatalf("rebuilt consume queues differ:\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// queueState reads every queue of a consume-queue directory, wherever it
// lives: in the journal or in files of its own. Which of the two holds a
// queue depends on whether the promoter reached it before Close (queues
// still waiting stay in the journal, whole), so the test compares entries,
// not files.
func queueState(t *testing.T, cqDir string) map[consumequeue.ID]consumequeue.QueueContents {
	t.Helper()
	out := map[consumequeue.ID]consumequeue.QueueContents{}
	small, err := consumequeue.ReadJournalQueues(cqDir)
	if err != nil {
		t.Fatal(err)
	}
	for id, q := range small {
		out[id] = *q
	}
	ids, err := consumequeue.ListQueues(cqDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, ok := small[id]; ok {
			continue
		}
		q, err := consumequeue.ReadQueue(cqDir, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(q.Damage) > 0 {
			t.Fatalf("queue %v: %v", id, q.Damage)
		}
		out[id] = consumequeue.QueueContents{ID: id, Entries: q.Entries, Min: q.Min, Max: q.Max}
	}
	return out
}
