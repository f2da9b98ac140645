// Package scripttest runs the data-driven state-machine scripts of
// testdata/ directories (group, txn, ha/replication): a script is a
// sequence of commands, each followed by the lines it is expected to
// print, prefixed "> "; blank lines and lines starting with "#" are
// comments. Only tests import it.
package scripttest

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewrite is the test binary's -rewrite flag: write the scripts back with
// the output the code gives (regenerate, then read the diff, which is the
// change of rules).
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the testdata scripts")

// RunAll runs Run on every script the glob names, each as a subtest named
// for its file, with a runner made for it.
func RunAll(t *testing.T, glob string, newRunner func(t *testing.T) func(cmd string) []string) {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts %s: %v", glob, err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { Run(t, f, newRunner(t)) })
	}
}

// Run runs the script at path, each command through run, and reports
// every command whose output differs from the lines the script expects;
// with -rewrite it writes the script back with the output run gave.
func Run(t *testing.T, path string, run func(cmd string) []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder // the script as it should read
	var want []string       // expected lines of the pending command
	cmd := ""
	flush := func() {
		if cmd == "" {
			return
		}
		got := run(cmd)
		if !*rewrite && strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: %s\n got:\n  %s\nwant:\n  %s", path, cmd, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		for _, l := range got {
			out.WriteString("> " + l + "\n")
		}
		cmd, want = "", nil
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ">"):
			want = append(want, strings.TrimSpace(strings.TrimPrefix(line, ">")))
			continue
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
			flush()
		default:
			flush()
			cmd = line
		}
		out.WriteString(line + "\n")
	}
	flush()
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
