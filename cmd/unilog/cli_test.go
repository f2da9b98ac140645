package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/urfave/cli/v2"
)

// testApp builds the CLI the way main.go does, minus the commands other
// engineers own, with stdin/stdout/stderr redirected to buffers.
func testApp(stdin io.Reader, stdout, stderr *syncBuffer) *cli.App {
	app := &cli.App{
		Name: "unilog",
		Commands: []*cli.Command{
			brokerCommand(),
			topicCommand(),
			produceCommand(),
			consumeCommand(),
			groupCommand(),
			clusterCommand(),
			userCommand(),
		},
		Reader:         stdin,
		Writer:         stdout,
		ErrWriter:      stderr,
		ExitErrHandler: func(*cli.Context, error) {},
		HideHelp:       true,
	}
	hideHelp(app.Commands)
	return app
}

// hideHelp drops the --help flag: urfave/cli shares one global HelpFlag
// value that every run writes to, a data race when tests run commands
// concurrently (a following consumer while a producer runs).
func hideHelp(cmds []*cli.Command) {
	for _, c := range cmds {
		c.HideHelp = true
		hideHelp(c.Subcommands)
	}
}

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads (the broker command prints its addresses and keeps running).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type cliResult struct {
	stdout, stderr string
	err            error
}

// runCLI runs `unilog args...` in-process with stdin as input.
func runCLI(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	return runCLIContext(context.Background(), t, stdin, args...)
}

func runCLIContext(ctx context.Context, t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	var stdout, stderr syncBuffer
	err := testApp(strings.NewReader(stdin), &stdout, &stderr).RunContext(ctx, append([]string{"unilog"}, args...))
	return cliResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// mustRun runs the command and fails the test if it fails.
func mustRun(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	r := runCLI(t, stdin, args...)
	if r.err != nil {
		t.Fatalf("unilog %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r
}
