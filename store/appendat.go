package store

import (
	"errors"
	"fmt"
)

// ErrNotNext reports an AppendAt at an offset that is not the partition's
// next.
var ErrNotNext = errors.New("store: append at an offset that is not the partition's next")

// NextOffset is the offset the commit log gives the partition's next
// append.
func (s *Store) NextOffset(topic string, partition int32) int64 {
	id, _ := s.liveID(topic)
	return s.log.NextQueueOffset(topic, id, partition)
}

// AppendAt stores one batch at base, the offset another log gave it: a
// partition moved here from another replica group keeps its offsets. A
// partition that holds no record here, and has none on its way to its
// queue, is first moved to base; otherwise
// base must be its next offset (ErrNotNext). The caller excludes other
// appends to the partition (a partition being copied in takes no produce).
func (s *Store) AppendAt(dst []Appended, batch Batch, base int64) ([]Appended, error) {
	id, ok := s.liveID(batch.Topic)
	if !ok {
		return dst, fmt.Errorf("store: append to %s: %w", batch.Topic, ErrUnknownTopic)
	}
	if next := s.log.NextQueueOffset(batch.Topic, id, batch.Partition); next != base {
		// Empty means nothing indexed and nothing appended beyond it: the
		// queue lags the log's counter while a record is dispatched.
		if lo, hi := s.Bounds(batch.Topic, batch.Partition); lo != hi || hi != next || next > base {
			return dst, fmt.Errorf("store: append to %s/%d at %d, next is %d: %w", batch.Topic, batch.Partition, base, next, ErrNotNext)
		}
		s.log.SetQueueOffset(batch.Topic, id, batch.Partition, base)
	}
	return s.Append(dst, []Batch{batch})
}
