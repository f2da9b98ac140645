package broker

import (
	"math"
	"time"
)

// topicRetentionInterval is how often topics' retention.ms and
// retention.bytes move their partitions' log starts (Kafka checks every 5
// minutes by default).
const topicRetentionInterval = time.Minute

// applyTopicRetention moves the log start of each partition this node
// leads, of every topic with its own retention.ms or retention.bytes, past
// the records those configs no longer keep (see "Retention" in the package
// doc). The starts are stored as DeleteRecords stores them.
func (b *Broker) applyTopicRetention() {
	if b.notLeading() {
		return // the leader moves them, in the shared metadata
	}
	now := b.now().UnixMilli()
	for _, t := range b.meta.Topics() {
		_, byTime := t.Configs[cfgRetentionMs]
		_, bySize := t.Configs[cfgRetentionBytes]
		limit := b.configInt(t, cfgRetentionBytes)
		bySize = bySize && limit >= 0
		if !byTime && !bySize || isInternalTopic(t.Name) {
			continue
		}
		cutoff := now - b.configInt(t, cfgRetentionMs)
		moves := make(map[int32]int64)
		for p := int32(0); p < t.Partitions; p++ {
			if !b.leads(t.Name, p) {
				continue
			}
			lo, hi, _ := b.visibleBounds(t, p)
			start := lo
			if byTime {
				off, _, ok := b.st.OffsetForTime(t.Name, p, cutoff)
				if !ok {
					off = hi // every record is older
				}
				start = max(start, off)
			}
			if bySize {
				start = max(start, b.st.OffsetKeepingBytes(t.Name, p, lo, hi, limit))
			}
			// Never past what consumers may read: the rest is not yet
			// on the followers.
			if start = min(start, hi); start > lo {
				moves[p] = start
			}
		}
		if len(moves) > 0 {
			// Logged by moveLogStarts; the next check tries again.
			b.moveLogStarts(t, moves, "retention")
		}
	}
}

// liveStart is the physical offset of the oldest record a partition still
// serves: commit-log files wholly before it hold only records behind their
// partitions' log starts, or of deleted topics, and retention deletes them
// at once (commitlog.Log.SetLiveStart), not when they are old. The internal
// topic is left to the group coordinator's retention floor, which keeps
// every group's last commit, and records not yet indexed to the
// dispatcher's floor. A follower's files go by age and size only: its
// leader decides what is dead. A partition written to whose queue or
// entry cannot be read keeps everything.
func (b *Broker) liveStart() int64 {
	if b.following.Load() {
		return math.MinInt64
	}
	live := int64(math.MaxInt64)
	for _, t := range b.meta.Topics() {
		if isInternalTopic(t.Name) {
			continue
		}
		for p := int32(0); p < t.Partitions; p++ {
			lo, _ := b.logBounds(t, p)
			if live = min(live, b.st.FirstLive(t.Name, p, lo)); live == math.MinInt64 {
				return live
			}
		}
	}
	return live
}
