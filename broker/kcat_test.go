package broker

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestKcat round-trips lines with kcat (librdkafka), a client that
// negotiates its own versions: kcat -P, kcat -C -e returns every line in
// order per partition, kcat -L lists the topic.
func TestKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed (make test-deps installs it)")
	}
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "kcat", 3)

	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(testCtx(t), kcat, append([]string{"-b", b.Addr()}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kcat %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	want := make(map[int][]string)
	for p := 0; p < 3; p++ {
		var lines []string
		for i := 0; i < 50; i++ {
			lines = append(lines, fmt.Sprintf("p%d-line%d", p, i))
		}
		want[p] = lines
		run(strings.Join(lines, "\n")+"\n", "-P", "-t", "kcat", "-p", fmt.Sprint(p))
	}
	got := make(map[int][]string)
	for _, line := range strings.Split(strings.TrimSpace(run("", "-C", "-t", "kcat", "-o", "beginning", "-e", "-q", "-f", "%p %o %s\n")), "\n") {
		var p int
		var off int64
		var v string
		if _, err := fmt.Sscanf(line, "%d %d %s", &p, &off, &v); err != nil {
			t.Fatalf("kcat output %q: %v", line, err)
		}
		if off != int64(len(got[p])) {
			t.Fatalf("partition %d offset %d, want %d", p, off, len(got[p]))
		}
		got[p] = append(got[p], v)
	}
	for p := 0; p < 3; p++ {
		if strings.Join(got[p], ",") != strings.Join(want[p], ",") {
			t.Fatalf("partition %d: got %v", p, got[p])
		}
	}
	if l := run("", "-L"); !strings.Contains(l, `topic "kcat" with 3 partitions`) {
		t.Fatalf("kcat -L:\n%s", l)
	}
}
