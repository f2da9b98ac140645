package store

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/unilog/unilog/internal/clock/clocktest"
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
	if cp.Dispatched > d.Dispatched() || cp.CommitLogFlushed > d.log.FlushedOffset() || cp.Dispatched > cp.CommitLogFlushed {
		t.Fatalf("checkpoint %+v claims more than is dispatched (%d) or flushed (%d)", cp, d.Dispatched(), d.log.FlushedOffset())
	}
	end := d.log.WriteOffset()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if cp, err = ReadCheckpoint(filepath.Join(dir, checkpointName)); err != nil || cp.Dispatched != end || cp.CommitLogFlushed != end {
		t.Fatalf("final checkpoint %+v, %v; want everything dispatched and flushed to %d", cp, err, end)
	}
}

// waitCheckpoint polls until the last checkpoint reaches at least
// dispatched; it is an "eventually" condition, the checkpointer runs on its
// own goroutine.
func waitCheckpoint(t *testing.T, d *Store, dispatched int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for d.Checkpoint().Dispatched < dispatched {
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint %+v never reached %d", d.Checkpoint(), dispatched)
		}
		runtime.Gosched()
	}
}

// TestCheckpointInterval drives the checkpointer's clock by hand: nothing
// is checkpointed before CheckpointInterval has passed, whatever was
// dispatched, and a checkpoint covering it is taken once it has, round
// after round. The interval is an hour, so a checkpointer on the wall
// clock cannot pass.
func TestCheckpointInterval(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	clk := clocktest.New()
	opts.Clock = clk
	opts.CheckpointInterval = time.Hour
	opts.CheckpointBytes = -1
	d := mustOpen(t, opts)
	defer d.Close()
	for round := range 3 {
		before := d.Checkpoint()
		appendN(t, d, 52, round*100, 100)
		waitDispatched(t, d)
		if err := d.log.Flush(); err != nil {
			t.Fatal(err)
		}
		end := d.log.WriteOffset()
		clk.Advance(time.Hour - time.Second)
		if cp := d.Checkpoint(); cp != before {
			t.Fatalf("round %d: checkpoint %+v taken before the interval passed", round, cp)
		}
		clk.Advance(time.Second)
		waitCheckpoint(t, d, end)
		cp, err := ReadCheckpoint(filepath.Join(dir, checkpointName))
		if err != nil || cp.Dispatched != end || cp.CommitLogFlushed < end {
			t.Fatalf("round %d: checkpoint file %+v, %v; want everything to %d", round, cp, err, end)
		}
	}
}

// TestCheckpointBytes checks that dispatching CheckpointBytes takes a
// checkpoint without waiting for the interval (the clock never moves), and
// that it covers what was dispatched: the checkpoint is held back until
// the log is flushed, so the one the kick asked for sees all of it.
func TestCheckpointBytes(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	opts.Clock = clocktest.New()
	opts.CheckpointInterval = time.Hour
	opts.CheckpointBytes = 16 << 10
	d := mustOpen(t, opts)
	defer d.Close()
	d.cpRun.Lock()
	recs := appendN(t, d, 53, 0, 200)
	waitDispatched(t, d)
	if err := d.log.Flush(); err != nil {
		t.Fatal(err)
	}
	end := d.log.WriteOffset()
	if end < opts.CheckpointBytes {
		t.Fatalf("appended %d bytes, fewer than CheckpointBytes %d", end, opts.CheckpointBytes)
	}
	d.cpRun.Unlock()
	waitCheckpoint(t, d, end)
	for _, a := range recs {
		checkReadable(t, d, a)
	}
}
