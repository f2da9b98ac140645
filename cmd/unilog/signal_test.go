package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unilog/unilog/internal/poll"
)

// These tests signal the test process itself. That is safe only while a
// command under test has the signal subscribed, so each sends it after the
// command has provably reached its waiting state.

func TestProduceStopsOnSIGINT(t *testing.T) {
	addr := startTestBroker(t)
	createTopic(t, addr, "sig", 2)

	// A pipe that never reaches EOF stands for a terminal on stdin.
	pr, pw := io.Pipe()
	defer pw.Close()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- testApp(pr, &stdout, &stderr).Run([]string{"unilog", "produce", "--brokers", addr, "--topic", "sig"})
	}()
	for i := range 25 {
		fmt.Fprintf(pw, "line-%d\n", i)
	}
	poll.True(t, "25 records to arrive", func() bool {
		return len(consumeJSON(t, addr, "--topic", "sig", "-q")) == 25
	})
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("interrupted produce: %v\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("produce did not stop on SIGINT")
	}
	if !strings.Contains(stderr.String(), "records=25 ") || !strings.Contains(stderr.String(), "errors=0 ") {
		t.Fatalf("summary after SIGINT:\n%s", stderr.String())
	}
}

func TestConsumeFollowStopsOnSIGINT(t *testing.T) {
	addr := startTestBroker(t)
	createTopic(t, addr, "sigc", 1)
	mustRun(t, "a\nb\n", "produce", "--brokers", addr, "--topic", "sigc")

	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- testApp(strings.NewReader(""), &stdout, &stderr).Run([]string{"unilog", "consume", "--brokers", addr, "--topic", "sigc", "--follow"})
	}()
	// Both records printed: the consumer is polling for more.
	poll.True(t, "the records to be printed", func() bool { return stdout.String() == "a\nb\n" })
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("interrupted consume: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("consume --follow did not stop on SIGINT")
	}
	if !strings.Contains(stderr.String(), "consumed topic=sigc records=2 partitions=1") {
		t.Fatalf("summary after SIGINT:\n%s", stderr.String())
	}
}

// TestBrokerCommandStopsOnSIGTERM: a lone leader has no follower to hand
// its lease to, so it stops at once instead of waiting for one up to its
// --lease-duration (5 minutes here, past the test's bound).
func TestBrokerCommandStopsOnSIGTERM(t *testing.T) {
	addr, done := runBrokerCommand(context.Background(), t, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--admin", "", "--file-size", "8MiB", "--lease-duration", "5m")
	createTopic(t, addr, "before-term", 1)
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("broker after SIGTERM: %v\n%s", r.err, r.stderr)
		}
		for _, want := range []string{"signal=terminated", "broker stopped cleanly"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("logs lack %q:\n%s", want, r.stderr)
			}
		}
		if !strings.Contains(r.stdout, "admin disabled") {
			t.Errorf("stdout %q", r.stdout)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("broker did not stop on SIGTERM")
	}
}
