package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteCompareMarkdownReplacesSection writes the end-to-end section
// twice after a storage report and a hand-written section: both stay, the
// section is there once and holds the second runs.
func TestWriteCompareMarkdownReplacesSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	head := "# Storage benchmark\n\n| table |\n"
	hand := "# Soak\n\nwritten by hand\n"
	if err := os.WriteFile(path, []byte(head+"\n"+hand), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, system := range []string{"first-system", "second-system"} {
		runs := []CompareRun{{System: system, Flush: "async", Partitions: 1000, Load: LoadPeak}}
		if err := WriteCompareMarkdown(path, runs, CompareInfo{Command: "unilog bench compare"}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, head+"\n"+hand+"\n"+e2eHeading+"\n") || strings.Count(s, e2eHeading) != 1 ||
		strings.Contains(s, "first-system") || !strings.Contains(s, "| second-system | async | 1,000 |") {
		t.Errorf("markdown:\n%s", s)
	}
}
