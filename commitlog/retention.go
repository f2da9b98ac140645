package commitlog

import (
	"math"
	"os"
	"time"

	"github.com/sirupsen/logrus"
)

// OnRetention registers fn to be called, after whole oldest files were
// deleted, with the new MinOffset (the dispatcher then drops consume-queue
// files wholly before it). fn runs on the retention goroutine.
func (l *Log) OnRetention(fn func(newMin int64)) {
	l.retMu.Lock()
	l.retFns = append(l.retFns, fn)
	l.retMu.Unlock()
}

// AddRetentionFloor makes retention keep every file that ends after
// floor(): a file is deleted, by age or by size, only if all of it lies
// before every registered floor. The dispatcher registers its dispatched
// offset, so records it has not indexed yet are never deleted under it; a
// replication leader registers the position of its slowest in-sync
// follower. The log then exceeds RetentionBytes for as long as the slowest
// of them is behind. floor runs on the retention goroutine, once per check,
// and must not block. remove unregisters it. Add floors before Recover to
// cover the first check.
func (l *Log) AddRetentionFloor(floor func() int64) (remove func()) {
	f := &floor
	l.retMu.Lock()
	l.floors = append(l.floors, f)
	l.retMu.Unlock()
	return func() {
		l.retMu.Lock()
		defer l.retMu.Unlock()
		for i, g := range l.floors {
			if g == f {
				l.floors = append(l.floors[:i:i], l.floors[i+1:]...)
				return
			}
		}
	}
}

// SetLiveStart gives retention the physical offset of the oldest record
// still live (liveStart()), computed by the log's owner: every whole file
// ending at or before it holds only records nobody will read again, and is
// deleted at the next check however young or small the log is, still
// never past a floor (AddRetentionFloor). The broker's per-partition log
// starts are what make records dead before the files are old. liveStart
// runs on the retention goroutine, once per check, and must not block.
func (l *Log) SetLiveStart(liveStart func() int64) {
	l.retMu.Lock()
	l.liveStart = liveStart
	l.retMu.Unlock()
}

// deadBefore is SetLiveStart's offset, MinInt64 (nothing dead) if unset.
func (l *Log) deadBefore() int64 {
	l.retMu.Lock()
	f := l.liveStart
	l.retMu.Unlock()
	if f == nil {
		return math.MinInt64
	}
	return f()
}

// retentionFloor is the lowest of the registered floors (MaxInt64 if none).
func (l *Log) retentionFloor() int64 {
	l.retMu.Lock()
	floors := l.floors
	l.retMu.Unlock()
	low := int64(math.MaxInt64)
	for _, f := range floors {
		low = min(low, (*f)())
	}
	return low
}

func (l *Log) retainer() {
	defer l.wg.Done()
	t := time.NewTicker(l.opts.RetentionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			l.retain(now)
		}
	}
}

// retain deletes the oldest files while the oldest is older than
// RetentionAge, the log is larger than RetentionBytes or the oldest holds
// no live record (SetLiveStart), and ends at or before the retention
// floor. The last file of the chain is the one being
// written and is never deleted. A deleted file
// stays mapped until the last View on it is released. It returns the
// number of files deleted.
func (l *Log) retain(now time.Time) int {
	floor := l.retentionFloor()
	dead := l.deadBefore()
	l.segMu.Lock()
	segs := l.chain()
	var total int64
	for _, s := range segs {
		total += s.size
	}
	n := 0
	for ; n < len(segs)-1; n++ {
		s := segs[n]
		old := l.opts.RetentionAge > 0 && now.Sub(time.UnixMilli(s.sealedAt.Load())) > l.opts.RetentionAge
		big := l.opts.RetentionBytes > 0 && total > l.opts.RetentionBytes
		if !old && !big && s.end() > dead || s.end() > floor {
			break
		}
		total -= s.size
	}
	if n == 0 {
		l.segMu.Unlock()
		return 0
	}
	victims := segs[:n]
	l.setChain(append([]*segment(nil), segs[n:]...))
	newMin := segs[n].base
	l.segMu.Unlock()

	for _, s := range victims {
		if err := os.Remove(s.path); err != nil {
			l.log.WithError(err).WithField("file", s.path).Error("retention: removing file failed")
		}
		s.release()
	}
	if err := l.opts.FS.SyncDir(l.opts.Dir); err != nil {
		l.log.WithError(err).Warn("retention: syncing directory failed")
	}
	l.log.WithFields(logrus.Fields{"files": n, "min_offset": newMin}).Info("retention deleted oldest files")

	l.retMu.Lock()
	fns := append([]func(int64){}, l.retFns...)
	l.retMu.Unlock()
	for _, fn := range fns {
		fn(newMin)
	}
	return n
}
