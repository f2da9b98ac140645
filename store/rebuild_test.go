package store

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
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
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			cqDir := filepath.Join(dir, "consumequeue")
			want, wantSmall := queueState(t, cqDir)
			if len(want) < 20 || len(wantSmall) == 0 {
				t.Fatalf("only %d consume-queue files; the test wants several per partition", len(want))
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
			got, gotSmall := queueState(t, cqDir)
			if err := equalFiles(want, got); err != nil {
				t.Fatalf("rebuilt consume queues differ: %v", err)
			}
			if !reflect.DeepEqual(gotSmall, wantSmall) {
				t.Fatalf("rebuilt small queues differ:\n%+v\nwant\n%+v", gotSmall, wantSmall)
			}
		})
	}
}

// queueState reads the queue files of a consume-queue directory and the
// small queues of its journal.
func queueState(t *testing.T, cqDir string) (map[string][]byte, []consumequeue.JournalQueue) {
	t.Helper()
	files := readDir(t, cqDir)
	for name := range files {
		if strings.HasPrefix(name, "@journal") {
			delete(files, name)
		}
	}
	small, err := consumequeue.ReadJournal(cqDir)
	if err != nil {
		t.Fatal(err)
	}
	return files, small
}
