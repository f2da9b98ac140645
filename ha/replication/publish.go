package replication

import (
	"time"

	"github.com/sirupsen/logrus"
)

// Backoff between failed PublishInSync calls.
const (
	minPublishBackoff = 50 * time.Millisecond
	maxPublishBackoff = 2 * time.Second
)

// publish stores the current in-sync set after every change, outside the
// mutex (it waits on the control plane), until the Leader closes. Changes
// made while a call is in flight are coalesced into the next one, which
// always carries the set as it is then; a failed call is retried with
// backoff, the dropped followers holding the high watermark meanwhile.
func (l *Leader) publish() {
	defer l.wg.Done()
	if l.cfg.PublishInSync == nil {
		return
	}
	backoff := minPublishBackoff
	for {
		select {
		case <-l.stop:
			return
		case <-l.publishKick:
		}
		for {
			l.mu.Lock()
			gen, nodes := l.set.gen, l.set.members()
			done := gen == l.set.published
			l.mu.Unlock()
			if done {
				break
			}
			if err := l.cfg.PublishInSync(l.publishCtx, nodes); err != nil {
				l.log.WithError(err).WithFields(logrus.Fields{"in_sync": nodes, "retry_in": backoff}).Warn("in-sync set not published: dropped followers still hold the high watermark")
				select {
				case <-l.stop:
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, maxPublishBackoff)
				continue
			}
			backoff = minPublishBackoff
			l.mu.Lock()
			if l.set.markPublished(gen) {
				l.changedLocked()
			}
			l.mu.Unlock()
		}
	}
}
