package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unilog/unilog/commitlog"
)

// TestBrokerRefusesDamagedLog stops a broker cleanly, cuts its commit-log
// file in the middle of its records (durable data: the clean stop flushed
// all of it), and checks that `unilog broker` refuses to start, saying
// where and how to proceed; that `inspect --verify` points at the same
// place; and that --recover-truncate starts, keeping the records before
// the cut and leaving a directory that verifies clean.
func TestBrokerRefusesDamagedLog(t *testing.T) {
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

	// Cut the file inside the third batch's record.
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
	if len(batches) != 5 {
		t.Fatalf("%d batches in the log, want 5", len(batches))
	}
	cutAt := batches[2]
	if err := os.Truncate(file.Path, cutAt.PhysOffset-file.Base+20); err != nil {
		t.Fatal(err)
	}

	r := runCLI(t, "", append([]string{"broker"}, args...)...)
	if r.err == nil {
		t.Fatal("broker started on a log cut before its flushed mark")
	}
	for _, want := range []string{file.Name, fmt.Sprintf("offset %d", cutAt.PhysOffset), "unilog inspect --verify", "--recover-truncate"} {
		if !strings.Contains(r.err.Error(), want) {
			t.Errorf("refusal %q lacks %q", r.err, want)
		}
	}
	if out, err := runInspectCLI(t, "--data-dir", dir, "--verify"); err == nil || !strings.Contains(out, file.Name) ||
		!strings.Contains(out, fmt.Sprintf("offset %d", cutAt.PhysOffset)) || !strings.Contains(out, "before the flushed mark") {
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
