package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleLoadAtScale measures the console against a broker in a child
// process holding one topic of UNILOG_CONSOLE_BENCH partitions (e.g.
// 50000) with records and a group: how long each page takes in Chromium
// from navigation to drawn, and the broker's CPU while a page stays open
// and redraws itself. `make bench-console` runs it; docs/BENCHMARKS.md has
// the figures. It times, so it only runs when asked.
func TestConsoleLoadAtScale(t *testing.T) {
	partitions, _ := strconv.Atoi(os.Getenv("UNILOG_CONSOLE_BENCH"))
	if partitions <= 0 {
		t.Skip("a measurement: UNILOG_CONSOLE_BENCH=50000 runs it at 50,000 partitions (make bench-console)")
	}
	ctx := newBrowser(t)
	cmd := exec.Command(os.Args[0], "broker", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0",
		"--nats-listen", "127.0.0.1:0", "--file-size", "256MiB", "--log-level", "warn")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	var m []string
	for sc := bufio.NewScanner(out); m == nil && sc.Scan(); {
		m = listeningLine.FindStringSubmatch(sc.Text())
	}
	if m == nil {
		t.Fatal("the broker printed no listening line")
	}
	kafka, admin := m[1], strings.TrimSuffix(m[2], "/metrics")

	start := time.Now()
	createTopic(t, kafka, "wide", partitions)
	var in strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&in, "{\"n\":%d}\n", i)
	}
	mustRun(t, in.String(), "produce", "--brokers", kafka, "--topic", "wide")
	mustRun(t, "", "consume", "--brokers", kafka, "--topic", "wide", "--group", "readers", "--count", "20000", "-q")
	t.Logf("set up %d partitions, 100,000 records, a group: %s", partitions, time.Since(start).Round(time.Second))

	t.Logf("| page | median | slowest of 5 |")
	t.Logf("| --- | --- | --- |")
	for _, hash := range []string{"#/cluster", "#/topics", "#/topic/wide", fmt.Sprintf("#/topic/wide?q=&offset=%d", partitions-50),
		"#/topic/wide/0", "#/groups", "#/group/readers", "#/metrics"} {
		var took []time.Duration
		for range 5 {
			begin := time.Now()
			page(t, ctx, admin, hash)
			took = append(took, time.Since(begin))
			if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(took)
		t.Logf("| `%s` | %d ms | %d ms |", hash, took[2].Milliseconds(), took[4].Milliseconds())
	}

	const window = 30 * time.Second
	t.Logf("| broker CPU over %s | of one core |", window)
	t.Logf("| --- | --- |")
	for _, hash := range []string{"", "#/topics", "#/topic/wide", "#/group/readers", "#/metrics"} {
		name := "no console open"
		if hash != "" {
			name = "`" + hash + "` open"
			page(t, ctx, admin, hash)
		}
		before := cpuTicks(t, cmd.Process.Pid)
		time.Sleep(window)
		used := time.Duration(cpuTicks(t, cmd.Process.Pid)-before) * 10 * time.Millisecond
		t.Logf("| %s | %.1f%% |", name, 100*used.Seconds()/window.Seconds())
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
	}
}

// cpuTicks is the user and system time of a process in clock ticks
// (USER_HZ, 100 a second on Linux), from /proc.
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name may hold spaces: the fields start after its ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return utime + stime
}
