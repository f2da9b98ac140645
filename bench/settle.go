package bench

import "time"

// After a warm-up a broker may still be working through what the warm-up
// started: at 10,000 partitions unilog's consume-queue promoter was still
// creating files a second or more after a 700,000-record warm-up ended,
// and that work, paid once per partition, fell into the measured run
// (promotion was 17% of the broker's samples over it). A measured run
// after a warm-up therefore starts once the server has gone quiet.

const (
	// settleInterval is how often the server's CPU is read while waiting.
	settleInterval = 250 * time.Millisecond
	// settleShare is the share of one core under which the server counts
	// as quiet over an interval: its timers and heartbeats, not a backlog.
	settleShare = 0.1
	// settleLimit bounds the wait when the load has no duration.
	settleLimit = 30 * time.Second
)

// waitQuiet reads the server's CPU time through cpu every interval until
// it grows by less than settleShare of the interval, or until limit has
// passed. It returns how long it waited and whether the server went
// quiet.
func waitQuiet(cpu func() (time.Duration, error), interval, limit time.Duration) (time.Duration, bool, error) {
	start := time.Now()
	last, err := cpu()
	if err != nil {
		return 0, false, err
	}
	for time.Since(start) < limit {
		time.Sleep(interval)
		now, err := cpu()
		if err != nil {
			return time.Since(start), false, err
		}
		if float64(now-last) < settleShare*float64(interval) {
			return time.Since(start), true, nil
		}
		last = now
	}
	return time.Since(start), false, nil
}
