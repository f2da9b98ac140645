package broker

import "github.com/unilog/unilog/store"

// movedEpoch is the partition's MovedEpoch; zero without moves.
func (b *Broker) movedEpoch(topic string, partition int32) MovedEpoch {
	if b.cfg.Moves == nil {
		return MovedEpoch{}
	}
	return b.cfg.Moves.MovedEpoch(topic, partition)
}

// movedEpochEnd is epochEnd for a partition that may have moved: epochs
// before its move are the source's and ended where the move switched (the
// target holds the same records to there); the later ones are this
// group's, found in its epoch file once the base is taken off.
func (b *Broker) movedEpochEnd(t TopicMeta, partition int32, epochs []store.EpochStart, current, epoch int32, moved MovedEpoch) (int32, int64) {
	if epoch >= 0 && epoch < moved.First {
		_, hi, _ := b.visibleBounds(t, partition)
		return epoch, min(moved.Since, hi)
	}
	if epoch >= 0 {
		epoch -= moved.Base
	}
	found, end := b.epochEnd(t, partition, epochs, current-moved.Base, epoch)
	if found >= 0 {
		found += moved.Base
	}
	return found, end
}
