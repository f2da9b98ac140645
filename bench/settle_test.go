package bench

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestWaitQuiet: the wait ends at the first interval in which the
// server's CPU grew by less than settleShare of it, or at the limit.
func TestWaitQuiet(t *testing.T) {
	const interval = 5 * time.Millisecond
	busy := interval // a whole core over every interval
	for _, c := range []struct {
		name      string
		growth    []time.Duration // CPU added before each read after the first; the last repeats
		limit     time.Duration
		wantQuiet bool
		minWait   time.Duration
	}{
		{"quiet at once", []time.Duration{0}, time.Second, true, interval},
		{"busy, then quiet", []time.Duration{busy, busy, busy, interval / 20}, time.Second, true, 4 * interval},
		{"busy throughout", []time.Duration{busy}, 50 * time.Millisecond, false, 50 * time.Millisecond},
		{"just above the share", []time.Duration{interval / 5}, 40 * time.Millisecond, false, 40 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			var total time.Duration
			reads := 0
			cpu := func() (time.Duration, error) {
				if reads > 0 {
					total += c.growth[min(reads-1, len(c.growth)-1)]
				}
				reads++
				return total, nil
			}
			waited, quiet, err := waitQuiet(cpu, interval, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			if quiet != c.wantQuiet || waited < c.minWait {
				t.Fatalf("waited %v, quiet %v; want quiet %v after at least %v", waited, quiet, c.wantQuiet, c.minWait)
			}
			if quiet && waited >= c.limit {
				t.Fatalf("quiet only at the limit (%v)", waited)
			}
		})
	}
	t.Run("error", func(t *testing.T) {
		boom := errors.New("boom")
		reads := 0
		cpu := func() (time.Duration, error) {
			reads++
			if reads > 1 {
				return 0, boom
			}
			return 0, nil
		}
		if _, _, err := waitQuiet(cpu, interval, time.Second); !errors.Is(err, boom) {
			t.Fatalf("err %v, want %v", err, boom)
		}
	})
}

// TestSummaryGivesSettle: a run's summary says how long it waited for the
// server after its warm-up, or that the server was still busy.
func TestSummaryGivesSettle(t *testing.T) {
	for _, c := range []struct {
		name string
		r    CompareRun
		want string
	}{
		{"quiet", CompareRun{WarmRecords: 10, SettleS: 1.25, Settled: true}, "after 10 warm-up records and 1.25 s for the server to go quiet"},
		{"still busy", CompareRun{WarmRecords: 10, SettleS: 5}, "after 10 warm-up records (the server still busy 5.00 s later)"},
		{"in process", CompareRun{WarmRecords: 10}, "after 10 warm-up records:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if s := c.r.summary(); !strings.Contains(s, c.want) {
				t.Fatalf("summary %q lacks %q", s, c.want)
			}
		})
	}
}
