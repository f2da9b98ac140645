package replication

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/insync/*.txt scripts")

// TestInSyncScripts runs the in-sync and high-watermark rules (inSyncSet)
// through the scripts in testdata/insync. Each command is followed by the
// lines it is expected to print, prefixed "> ":
//
//	config max-lag=10s min-insync=2 [durable] [publish]   (a new set; first line)
//	connect F end=N flushed=N
//	ack F end=N flushed=N leader=N [at=5s]     (at: the time since the start; default the current one)
//	tick 5s                                   (time passes; the lag check runs)
//	disconnect F
//	publish                                   (the set as it is now is stored)
//	status leader=N                           (the leader's log ends at N)
//
// Every command prints what changed and the state: the high watermark for
// the leader's last end (its own end when no follower bounds it), the in-sync set, and whether a write may be taken.
// Run with -rewrite to regenerate the expected lines, then read them: they
// are the rules.
func TestInSyncScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/insync/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runInSyncScript(t, f) })
	}
}

type inSyncRunner struct {
	t         *testing.T
	s         *inSyncSet
	now       time.Time
	leaderEnd int64
}

func runInSyncScript(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &inSyncRunner{t: t, now: time.Unix(0, 0)}
	var out strings.Builder // the script as it should read
	var pending []string    // expected lines of the last command
	var got []string
	var cmd string
	flush := func() {
		if cmd == "" {
			return
		}
		if !*rewrite && strings.Join(got, "\n") != strings.Join(pending, "\n") {
			t.Errorf("%s: %s\n got:\n  %s\nwant:\n  %s", path, cmd, strings.Join(got, "\n  "), strings.Join(pending, "\n  "))
		}
		for _, l := range got {
			out.WriteString("> " + l + "\n")
		}
		cmd, pending, got = "", nil, nil
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "> "):
			pending = append(pending, strings.TrimPrefix(line, "> "))
			continue
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
			flush()
			out.WriteString(line + "\n")
			continue
		}
		flush()
		out.WriteString(line + "\n")
		cmd = line
		got = r.run(line)
	}
	flush()
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (r *inSyncRunner) run(line string) []string {
	fields := strings.Fields(line)
	args := map[string]string{}
	var flags []string
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			args[k] = v
		} else {
			flags = append(flags, f)
		}
	}
	num := func(k string) int64 {
		v, err := strconv.ParseInt(args[k], 10, 64)
		if err != nil {
			r.t.Fatalf("%q: %s=%q: %v", line, k, args[k], err)
		}
		return v
	}
	dur := func(s string) time.Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			r.t.Fatalf("%q: %v", line, err)
		}
		return d
	}
	var out []string
	switch fields[0] {
	case "config":
		has := func(f string) bool {
			for _, x := range flags {
				if x == f {
					return true
				}
			}
			return false
		}
		r.s = newInSyncSet(dur(args["max-lag"]), has("durable"), int(num("min-insync")), has("publish"))
	case "connect":
		r.s.connect(flags[0], num("end"), num("flushed"))
	case "ack":
		if at, ok := args["at"]; ok {
			r.now = time.Unix(0, 0).Add(dur(at))
		}
		r.leaderEnd = num("leader")
		if r.s.ack(flags[0], num("end"), num("flushed"), r.leaderEnd, r.now) {
			out = append(out, flags[0]+" joined")
		}
	case "tick":
		r.now = r.now.Add(dur(flags[0]))
		for _, n := range r.s.lag(r.now) {
			out = append(out, n+" fell out of sync")
		}
	case "disconnect":
		if r.s.disconnect(flags[0]) {
			out = append(out, flags[0]+" left")
		}
	case "publish":
		if r.s.markPublished(r.s.gen) {
			out = append(out, fmt.Sprintf("published %v", r.s.members()))
		}
	case "status":
		r.leaderEnd = num("leader")
	default:
		r.t.Fatalf("unknown command %q", line)
	}
	hw := strconv.FormatInt(r.s.highWatermark(r.leaderEnd), 10)
	if r.s.hw == math.MaxInt64 {
		hw += " (no follower bounds it)"
	}
	writes := "writes taken"
	if err := r.s.enough(); err != nil {
		writes = "writes refused"
	}
	pub := ""
	if r.s.unpublished() {
		pub = " (unpublished)"
	}
	return append(out, fmt.Sprintf("hw %s of leader %d, in sync %v%s, %s", hw, r.leaderEnd, r.s.members(), pub, writes))
}
