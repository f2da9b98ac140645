package main

import (
	"net"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestBenchServing: `unilog bench serving` returns once a record of the
// partition is read, fails when the partition holds none within
// --timeout, and waits for a listener that is not up yet.
func TestBenchServing(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, "", "topic", "create", "-b", addr, "-t", "s", "-p", "3")
	mustRun(t, "one\n", "produce", "-b", addr, "-t", "s", "-p", "1")
	if out, err := serving(addr, "-t", "s", "-p", "1", "--timeout", "30s"); err != nil || !strings.HasPrefix(out, "serving s/1 after ") {
		t.Errorf("stdout %q, %v", out, err)
	}
	if _, err := serving(addr, "-t", "s", "-p", "2", "--timeout", "1s"); err == nil || !strings.Contains(err.Error(), "no record of s/2") {
		t.Errorf("an empty partition: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	if _, err := serving(closed, "-t", "s", "--timeout", "300ms"); err == nil || !strings.Contains(err.Error(), "not accepting connections") {
		t.Errorf("no listener: %v", err)
	}
}

// serving runs `unilog bench serving -b addr args...`.
func serving(addr string, args ...string) (string, error) {
	var out syncBuffer
	app := &cli.App{Name: "unilog", Commands: []*cli.Command{benchCommand()}, Writer: &out, ErrWriter: &out}
	err := app.Run(append([]string{"unilog", "bench", "serving", "-b", addr}, args...))
	return out.String(), err
}
