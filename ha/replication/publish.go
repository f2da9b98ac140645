package replication

import (
	"sort"
	"time"

	"github.com/sirupsen/logrus"
)

// Backoff between failed PublishInSync calls.
const (
	minPublishBackoff = 50 * time.Millisecond
	maxPublishBackoff = 2 * time.Second
)

// dropLocked takes p out of the in-sync set. It stops counting toward
// MinInSync now, but holds the high watermark at what it confirmed until
// a set without it is published: until then it may still be elected.
func (l *Leader) dropLocked(p *peer) {
	p.inSync, p.heldAt = false, l.confirmed(p)
	p.leftGen = l.inSyncChangedLocked()
}

// inSyncChangedLocked counts a change of the in-sync set and has it
// published; without PublishInSync it is in effect at once.
func (l *Leader) inSyncChangedLocked() uint64 {
	l.isrGen++
	if l.cfg.PublishInSync == nil {
		l.published = l.isrGen
		return l.isrGen
	}
	select {
	case l.publishKick <- struct{}{}:
	default:
	}
	return l.isrGen
}

// inSyncNodesLocked lists the in-sync followers, sorted.
func (l *Leader) inSyncNodesLocked() []string {
	out := []string{}
	for node, p := range l.peers {
		if p.inSync {
			out = append(out, node)
		}
	}
	sort.Strings(out)
	return out
}

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
			gen, nodes := l.isrGen, l.inSyncNodesLocked()
			done := gen == l.published
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
			if gen > l.published {
				l.published = gen
				l.updateLocked()
			}
			l.mu.Unlock()
		}
	}
}
