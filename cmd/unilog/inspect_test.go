package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/store"
)

func runInspectCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := &cli.App{Name: "unilog", Commands: []*cli.Command{inspectCommand()}, Writer: &out, ErrWriter: &out}
	err := app.Run(append([]string{"unilog", "inspect"}, args...))
	return out.String(), err
}

func TestInspectCommand(t *testing.T) {
	dir := t.TempDir()
	l := logrus.New()
	l.SetOutput(io.Discard)
	// Records with a key and headers, which only the commit log's own
	// Append writes; the store then indexes them as after a crash.
	logOpts := commitlog.Options{Dir: filepath.Join(dir, "commitlog"), FileSize: 64 << 10, RetentionAge: -1, Logger: l}
	log, err := commitlog.Open(logOpts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.Recover(0, nil); err != nil {
		t.Fatal(err)
	}
	first, err := log.Append(&commitlog.Message{Topic: "orders", Key: []byte("k1"),
		Headers: []commitlog.Header{{Key: "h", Value: []byte("v")}}, Body: []byte("hello")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(&commitlog.Message{Topic: "orders", Count: 3, Body: []byte{0, 1, 2, 0xff}}); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := store.Open(store.Options{Dir: dir, CommitLog: logOpts, Logger: l})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	out, err := runInspectCLI(t, "--data-dir", dir, "--verify")
	if err != nil {
		t.Fatalf("inspect --verify: %v\n%s", err, out)
	}
	for _, want := range []string{"stopped cleanly", "2 record(s)", "orders/0", "verify: OK", "verified 4 consume-queue entries"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}

	out, err = runInspectCLI(t, "--data-dir", dir, "--dump", "orders:0", "--from", "0", "--limit", "5")
	if err != nil {
		t.Fatalf("inspect --dump: %v\n%s", err, out)
	}
	for _, want := range []string{`key: "k1"`, `header "h": "v"`, `body (5 bytes): "hello"`, "offset 1..3", "key: null", "hex:000102ff"} {
		if !strings.Contains(out, want) {
			t.Errorf("dump output lacks %q:\n%s", want, out)
		}
	}

	// Flip the last byte of the first record's body.
	path := filepath.Join(dir, "commitlog", "00000000000000000000")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[first.End()-1] ^= 0x20
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runInspectCLI(t, "--data-dir", dir, "--verify")
	if err == nil || !strings.Contains(out, "problems:") || !strings.Contains(out, "crc") && !strings.Contains(out, "CRC") {
		t.Fatalf("inspect --verify of a damaged log: err %v\n%s", err, out)
	}
	if _, err := runInspectCLI(t, "--data-dir", dir, "--dump", "orders"); err == nil {
		t.Fatal("--dump without a partition accepted")
	}
}
