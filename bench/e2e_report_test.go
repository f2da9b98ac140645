package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteCompareMarkdownSections writes the end-to-end section and a
// second, titled one twice each after a storage report and between
// hand-written sections: every section stays, each generated one is there
// once and holds its second runs, and neither overwrites the other.
func TestWriteCompareMarkdownSections(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	head := "# Storage benchmark\n\n| table |\n"
	hand := "# Soak\n\nwritten by hand\n"
	tail := "# Failover\n\nalso by hand\n"
	if err := os.WriteFile(path, []byte(head+"\n"+hand+"\n"+tail), 0o644); err != nil {
		t.Fatal(err)
	}
	const wide = "End to end: 50,000 and 100,000 partitions"
	for _, pass := range []string{"first", "second"} {
		for _, section := range []string{"", wide} {
			runs := []CompareRun{{System: pass + "-" + section, Flush: "async", Partitions: 1000, Load: LoadPeak, Trial: 1}}
			if err := WriteCompareMarkdown(path, runs, CompareInfo{Section: section, Command: "unilog bench compare"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{head + "\n" + hand + "\n" + tail + "\n# " + DefaultCompareSection + "\n", "| second- | async | 1,000 | peak | 1 |",
		"\n# " + wide + "\n", "| second-" + wide + " | async | 1,000 |"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q", want)
		}
	}
	if strings.Count(s, "# "+DefaultCompareSection+"\n") != 1 || strings.Count(s, "# "+wide+"\n") != 1 || strings.Contains(s, "first-") {
		t.Errorf("markdown:\n%s", s)
	}
}
