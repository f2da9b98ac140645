package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestBenchMachine: `unilog bench machine` creates its directory, prints
// the Machine table with the kernel's unit costs, and leaves no scratch
// file behind.
func TestBenchMachine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bench-data")
	var out syncBuffer
	app := &cli.App{Name: "unilog", Commands: []*cli.Command{benchMachineCommand()}, Writer: &out, ErrWriter: &out,
		ExitErrHandler: func(*cli.Context, error) {}, HideHelp: true}
	hideHelp(app.Commands)
	if err := app.Run([]string{"unilog", "machine", "--dir", dir}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"| Kernel | Linux ", "| The kernel's unit costs", "a system call (getppid) ", "µs per 4 KiB page"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%d files left in %s, the first %s", len(left), dir, left[0].Name())
	}
}
