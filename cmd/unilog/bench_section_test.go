package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// runSection runs `unilog bench section --markdown path` with stdin.
func runSection(stdin, path string) error {
	var out syncBuffer
	app := &cli.App{Name: "unilog", Commands: []*cli.Command{benchSectionCommand()}, Reader: strings.NewReader(stdin),
		Writer: &out, ErrWriter: &out, ExitErrHandler: func(*cli.Context, error) {}, HideHelp: true}
	hideHelp(app.Commands)
	return app.Run([]string{"unilog", "section", "--markdown", path})
}

// TestBenchSection: `unilog bench section` replaces only the section its
// input heads, keeping the hand-written ones around it, and refuses input
// that heads no section.
func TestBenchSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if err := os.WriteFile(path, []byte("# Kept\n\nby hand\n\n# Million\n\nold row\n\n# Also kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runSection("# Million\n\nnew row\n", path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Kept\n\nby hand\n\n# Million\n\nnew row\n\n# Also kept\n"; string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if err := runSection("new row\n", path); err == nil {
		t.Fatal("input without a heading accepted")
	}
}
