package broker

import "fmt"

// NextOffset is the offset the commit log gives the partition's next
// append.
func (s *dispatcherStorage) NextOffset(topic string, partition int32) int64 {
	id, _ := s.live(topic)
	return s.log.NextQueueOffset(topic, id, partition)
}

// AppendAt moves a partition that holds no record here to base first, so
// the log stamps the batch with the offsets the source gave it. The
// caller excludes other appends to the partition (a partition being
// copied here takes no produce).
func (s *dispatcherStorage) AppendAt(dst []Appended, batch StorageBatch, base int64) ([]Appended, error) {
	id, ok := s.live(batch.Topic)
	if !ok {
		return dst, fmt.Errorf("broker: append to %s: %w", batch.Topic, ErrUnknownTopic)
	}
	if next := s.log.NextQueueOffset(batch.Topic, id, batch.Partition); next != base {
		if lo, hi := s.Bounds(batch.Topic, batch.Partition); lo != hi || next > base {
			return dst, fmt.Errorf("broker: append to %s/%d at %d, next is %d: %w", batch.Topic, batch.Partition, base, next, ErrStorageOffset)
		}
		s.log.SetQueueOffset(batch.Topic, id, batch.Partition, base)
	}
	return s.Append(dst, []StorageBatch{batch})
}
