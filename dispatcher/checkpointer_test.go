package dispatcher

import (
	"path/filepath"
	"testing"
)

// TestCheckpointDoesNotHoldBackDispatch keeps a checkpoint from finishing
// (it waits for cpRun, as one stuck in a slow syncfs would) and checks that
// appends are still dispatched, which is what produce acks wait for; then
// lets it finish and checks the checkpoint it writes.
func TestCheckpointDoesNotHoldBackDispatch(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, testOptions(dir))
	d.cpRun.Lock()
	recs := appendN(t, d, 51, 0, 200)
	waitDispatched(t, d)
	for _, a := range recs {
		checkReadable(t, d, a)
	}
	d.cpRun.Unlock()
	if err := d.checkpoint(); err != nil {
		t.Fatal(err)
	}
	cp, err := ReadCheckpoint(filepath.Join(dir, checkpointName))
	if err != nil {
		t.Fatal(err)
	}
	if cp.Dispatched > d.Dispatched() || cp.CommitLogFlushed > d.Log().FlushedOffset() || cp.Dispatched > cp.CommitLogFlushed {
		t.Fatalf("checkpoint %+v claims more than is dispatched (%d) or flushed (%d)", cp, d.Dispatched(), d.Log().FlushedOffset())
	}
	end := d.Log().WriteOffset()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if cp, err = ReadCheckpoint(filepath.Join(dir, checkpointName)); err != nil || cp.Dispatched != end || cp.CommitLogFlushed != end {
		t.Fatalf("final checkpoint %+v, %v; want everything dispatched and flushed to %d", cp, err, end)
	}
}
