package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unilog/unilog/commitlog"
)

// TestBrokerRefusesDamagedLog stops a broker cleanly, damages its third
// batch's record in the commit log (durable data: the clean stop flushed
// all of it), and checks that `unilog broker` refuses to start, saying
// where and how to proceed; that `inspect --verify` points at the same
// place; and that --recover-truncate starts, keeping the records before
// the damage and leaving a directory that verifies clean. The damage is a
// cut file, or a record claiming far more offsets than its bytes could
// hold (issue 15: what an older build stored for a lying compressed batch)
// in a directory whose broker died before dispatching it, which recovery
// would otherwise index without end.
func TestBrokerRefusesDamagedLog(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string, file commitlog.FileInfo, at commitlog.Position)
		says   string
		// indexed: the damage lies below the checkpoint, so a plain start
		// does not scan it (fetches of it fail); --recover-truncate must
		// still find and cut it.
		indexed bool
	}{
		{"cut", func(t *testing.T, _ string, file commitlog.FileInfo, at commitlog.Position) {
			if err := os.Truncate(file.Path, at.PhysOffset-file.Base+20); err != nil {
				t.Fatal(err)
			}
		}, "", false},
		{"count of 2^31-1", func(t *testing.T, dir string, file commitlog.FileInfo, at commitlog.Position) {
			setCount(t, file, at, 0x7fffffff)
			undispatch(t, dir)
		}, "count 2147483647", false},
		{"count of a million", func(t *testing.T, dir string, file commitlog.FileInfo, at commitlog.Position) {
			setCount(t, file, at, 1<<20)
			undispatch(t, dir)
		}, "count 1048576", false},
		{"count of a million, indexed before a clean stop", func(t *testing.T, _ string, file commitlog.FileInfo, at commitlog.Position) {
			setCount(t, file, at, 1<<20)
		}, "count 1048576", true},
	} {
		t.Run(tc.name, func(t *testing.T) { testBrokerRefusesDamage(t, tc.damage, tc.says, tc.indexed) })
	}
}

// setCount rewrites the count of the record at at, with a valid CRC.
func setCount(t *testing.T, file commitlog.FileInfo, at commitlog.Position, count uint32) {
	t.Helper()
	f, err := os.OpenFile(file.Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec := make([]byte, at.Size)
	if _, err := f.ReadAt(rec, at.PhysOffset-file.Base); err != nil {
		t.Fatal(err)
	}
	// The record layout of the commitlog package doc: Count at 28, the CRC
	// at 8 covering every other byte.
	binary.BigEndian.PutUint32(rec[28:], count)
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	binary.BigEndian.PutUint32(rec[8:], crc32.Update(crc32.Checksum(rec[:8], castagnoli), castagnoli, rec[12:]))
	if _, err := f.WriteAt(rec, at.PhysOffset-file.Base); err != nil {
		t.Fatal(err)
	}
}

// undispatch makes dir look like its broker died before dispatching
// anything: no checkpoint, and the abort file a running broker holds.
func undispatch(t *testing.T, dir string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, "checkpoint")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func testBrokerRefusesDamage(t *testing.T, damage func(*testing.T, string, commitlog.FileInfo, commitlog.Position), says string, indexed bool) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--admin", "", "--file-size", "8MiB", "--nats-listen", "127.0.0.1:0"}
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := runBrokerCommand(ctx, t, args...)
	createTopic(t, addr, "cut", 1)
	for i := range 5 {
		mustRun(t, fmt.Sprintf("batch-%d-a\nbatch-%d-b\n", i, i), "produce", "--brokers", addr, "--topic", "cut", "--partition", "0")
	}
	cancel()
	if r := <-done; r.err != nil {
		t.Fatalf("first run: %v\n%s", r.err, r.stderr)
	}

	// Damage the record of the third produce.
	lr, err := commitlog.OpenReader(filepath.Join(dir, "commitlog"))
	if err != nil {
		t.Fatal(err)
	}
	var batches []commitlog.Position
	if _, err := lr.ScanFile(0, func(r *commitlog.Record) error {
		if r.Topic == "cut" {
			batches = append(batches, r.Position())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	file := lr.Files()[0]
	lr.Close()
	// Each produce is a request of its own, but the client may send its
	// two lines as one batch or two: damage the batch starting at offset
	// 4, the third call's first record, whatever came before.
	var cutAt commitlog.Position
	for _, b := range batches {
		if b.QueueOffset == 4 {
			cutAt = b
		}
	}
	if len(batches) < 5 || cutAt.Size == 0 {
		t.Fatalf("%d batches in the log, none at offset 4: %+v", len(batches), batches)
	}
	damage(t, dir, file, cutAt)

	if !indexed {
		r := runCLI(t, "", append([]string{"broker"}, args...)...)
		if r.err == nil {
			t.Fatal("broker started on a log damaged before its flushed mark")
		}
		t.Logf("refused: %v", r.err)
		for _, want := range []string{file.Name, fmt.Sprintf("offset %d", cutAt.PhysOffset), "unilog inspect --verify", "--recover-truncate", says} {
			if !strings.Contains(r.err.Error(), want) {
				t.Errorf("refusal %q lacks %q", r.err, want)
			}
		}
	}
	if out, err := runInspectCLI(t, "--data-dir", dir, "--verify"); err == nil || !strings.Contains(out, file.Name) ||
		!strings.Contains(out, fmt.Sprintf("offset %d", cutAt.PhysOffset)) || !strings.Contains(out, "before the flushed mark") || !strings.Contains(out, says) {
		t.Fatalf("inspect --verify of the cut log: %v\n%s", err, out)
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	addr, done = runBrokerCommand(ctx, t, append(args, "--recover-truncate")...)
	out := mustRun(t, "", "consume", "--brokers", addr, "--topic", "cut").stdout
	if got := strings.Fields(out); len(got) != 4 || got[0] != "batch-0-a" || got[3] != "batch-1-b" {
		t.Errorf("after --recover-truncate consumed %q, want the two batches before the cut", got)
	}
	cancel()
	if r := <-done; r.err != nil || !strings.Contains(r.stderr, "RecoverTruncate") {
		t.Fatalf("run with --recover-truncate: %v\n%s", r.err, r.stderr)
	}
	if out, err := runInspectCLI(t, "--data-dir", dir, "--verify"); err != nil {
		t.Fatalf("inspect --verify after --recover-truncate: %v\n%s", err, out)
	}
}
