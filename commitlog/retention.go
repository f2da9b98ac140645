package commitlog

import (
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
// RetentionAge or the log is larger than RetentionBytes. The last file of
// the chain is the one being written and is never deleted. A deleted file
// stays mapped until the last View on it is released. It returns the
// number of files deleted.
func (l *Log) retain(now time.Time) int {
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
		if !old && !big {
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
