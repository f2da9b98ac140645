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

// TestWriteCompareMarkdownWarm: the section says what warm-up went before
// the measured runs, and says nothing of one when there was none.
func TestWriteCompareMarkdownWarm(t *testing.T) {
	runs := []CompareRun{{System: SystemUnilog, Flush: "async", Partitions: 10, Load: LoadPeak, Trial: 1}}
	for _, c := range []struct {
		name string
		warm bool
		n    int64
		want string
	}{
		{"none", false, 0, ""},
		{"records", false, 300000, "an unreported warm-up of 300000 records at full speed"},
		{"one per partition", true, 0, "an unreported warm-up of one record per partition at full speed"},
		{"both", true, 5, "an unreported warm-up of max(5 records, one per partition) at full speed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
			if err := WriteCompareMarkdown(path, runs, CompareInfo{Config: CompareConfig{Warm: c.warm, WarmRecords: c.n}}); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s := string(b)
			if c.want == "" {
				if strings.Contains(s, "unreported warm-up of") {
					t.Errorf("a warm-up is described where none ran:\n%s", s)
				}
			} else if !strings.Contains(s, c.want) {
				t.Errorf("missing %q in:\n%s", c.want, s)
			}
		})
	}
}
