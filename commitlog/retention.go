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

// SetRetentionFloor makes retention keep every file that ends after
// floor(): a file is deleted, by age or by size, only if all of it lies
// before the floor. The dispatcher passes its dispatched offset, so records
// it has not indexed yet are never deleted under it; the log then exceeds
// RetentionBytes for as long as the dispatcher is behind. floor runs on the
// retention goroutine, once per check, and must not block. A nil floor
// removes the limit. Set it before Recover to cover the first check.
func (l *Log) SetRetentionFloor(floor func() int64) {
	if floor == nil {
		l.floor.Store(nil)
		return
	}
	l.floor.Store(&floor)
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
// RetentionAge or the log is larger than RetentionBytes, and ends at or
// before the retention floor. The last file of the chain is the one being
// written and is never deleted. A deleted file
// stays mapped until the last View on it is released. It returns the
// number of files deleted.
func (l *Log) retain(now time.Time) int {
	floor := int64(math.MaxInt64)
	if fn := l.floor.Load(); fn != nil {
		floor = (*fn)()
	}
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
		if !old && !big || s.end() > floor {
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
	if err := syncDir(l.opts.Dir); err != nil {
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
