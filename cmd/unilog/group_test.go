package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/unilog/unilog/internal/poll"
)

func lines(s string) []string {
	out := strings.Fields(s)
	sort.Strings(out)
	return out
}

// TestGroupCommands walks the consumer-group workflow: consume --group in
// two runs that together read every record once, describe and list the
// group, reset it (refused while a member is active), shift it, delete it.
func TestGroupCommands(t *testing.T) {
	addr := startTestBroker(t)
	createTopic(t, addr, "gt", 2)
	var all []string
	for i := range 10 {
		all = append(all, fmt.Sprintf("r%02d", i))
	}
	sort.Strings(all)
	mustRun(t, strings.Join(all, "\n")+"\n", "produce", "--brokers", addr, "--topic", "gt")
	consume := func(n int) []string {
		t.Helper()
		r := mustRun(t, "", "consume", "--brokers", addr, "--topic", "gt", "--group", "g1", "--count", fmt.Sprint(n))
		if want := fmt.Sprintf("group=g1 records=%d ", n); !strings.Contains(r.stderr, want) {
			t.Fatalf("consume summary %q lacks %q", r.stderr, want)
		}
		return lines(r.stdout)
	}

	first, second := consume(6), consume(4)
	if got := lines(strings.Join(append(first, second...), " ")); strings.Join(got, ",") != strings.Join(all, ",") {
		t.Fatalf("two runs of the group read %v and %v", first, second)
	}
	d := mustRun(t, "", "group", "describe", "--brokers", addr, "--group", "g1").stdout
	for _, want := range []string{"group g1 state=Empty", "members=0 lag=0", "gt     0          5          5    0    -"} {
		if !strings.Contains(d, want) {
			t.Fatalf("describe lacks %q:\n%s", want, d)
		}
	}
	if l := mustRun(t, "", "group", "list", "--brokers", addr).stdout; !strings.Contains(l, "g1     Empty  consumer") {
		t.Fatalf("group list:\n%s", l)
	}

	mustRun(t, "", "group", "reset", "--brokers", addr, "--group", "g1", "--topic", "gt", "--to", "earliest")
	if got := consume(10); strings.Join(got, ",") != strings.Join(all, ",") {
		t.Fatalf("after reset to earliest: %v", got)
	}

	// A live member: reset is refused, describe shows it with its partitions.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan cliResult, 1)
	go func() {
		done <- runCLIContext(ctx, t, "", "consume", "--brokers", addr, "--topic", "gt", "--group", "g1", "-q")
	}()
	var desc string
	poll.True(t, "the consumer to join", func() bool {
		desc = runCLI(t, "", "group", "describe", "--brokers", addr, "--group", "g1").stdout
		return strings.Contains(desc, "state=Stable") && strings.Contains(desc, "gt[0 1]")
	})
	if !strings.Contains(desc, "unilog-cli") || !strings.Contains(desc, "/127.0.0.1") {
		t.Fatalf("describe of a live group:\n%s", desc)
	}
	r := runCLI(t, "", "group", "reset", "--brokers", addr, "--group", "g1", "--topic", "gt", "--to", "earliest")
	if r.err == nil || !strings.Contains(r.err.Error(), "1 active members") {
		t.Fatalf("reset of a live group: %v", r.err)
	}
	cancel()
	if r := <-done; r.err != nil {
		t.Fatalf("consume --group: %v", r.err)
	}

	out := mustRun(t, "", "group", "reset", "--brokers", addr, "--group", "g1", "--topic", "gt", "--shift", "-2").stdout
	if !strings.Contains(out, "gt     0          5    3") {
		t.Fatalf("reset --shift -2:\n%s", out)
	}
	if got := consume(4); len(got) != 4 {
		t.Fatalf("after shift: %v", got)
	}
	mustRun(t, "", "group", "delete", "--brokers", addr, "--group", "g1")
	if l := mustRun(t, "", "group", "list", "--brokers", addr).stdout; strings.Contains(l, "g1") {
		t.Fatalf("group list after delete:\n%s", l)
	}
}

func TestResetTarget(t *testing.T) {
	for _, tc := range []struct {
		to        string
		shift     int64
		useShift  bool
		committed int64
		want      int64
	}{
		{to: "earliest", want: 10},
		{to: "latest", want: 50},
		{to: "30", want: 30},
		{to: "5", want: 10},
		{to: "99", want: 50},
		{to: "@123", want: 42},
		{useShift: true, shift: -5, committed: 20, want: 15},
		{useShift: true, shift: -50, committed: 20, want: 10},
		{useShift: true, shift: 100, committed: 20, want: 50},
		{useShift: true, shift: 3, committed: -1, want: 10},
	} {
		if got := resetTarget(tc.to, tc.shift, tc.useShift, tc.committed, 10, 50, 42); got != tc.want {
			t.Errorf("%+v: %d", tc, got)
		}
	}
	for _, bad := range []string{"soon", "@x", "2026-13-01"} {
		if _, _, err := parseResetTo(bad); err == nil {
			t.Errorf("--to %q accepted", bad)
		}
	}
}
