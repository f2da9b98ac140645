package broker

// partitionStates is the produce state of partitions (Broker.parts, a
// follower's replica.parts, a preloaded snapshot's), filed per topic in a
// table indexed by partition. A produce to 10,000 partitions carries
// thousands of one-record batches of one topic per request: a map keyed
// by (topic, partition), looked up under the broker's lock for each of
// them, was 4% of the broker's samples, half of it hashing and comparing
// the topic name. Now a request looks its topic up once and each batch
// indexes the table (resolveStates).
//
// A table is as long as the highest partition given a state (at least as
// the topic's partition count when a produce made it); a slot is nil until
// its partition is first produced to, replayed or copied, so a topic of
// 100,000 partitions costs a pointer per partition, not a state.
type partitionStates map[string][]*partitionState

// get returns the state of the partition, nil if it has none.
func (s partitionStates) get(topic string, partition int32) *partitionState {
	if t := s[topic]; partition >= 0 && int(partition) < len(t) {
		return t[partition]
	}
	return nil
}

// at returns the state of the partition, made if it has none.
func (s partitionStates) at(topic string, partition int32) *partitionState {
	return stateIn(s.table(topic, partition+1), partition)
}

// table returns the topic's table, grown to at least n partitions.
func (s partitionStates) table(topic string, n int32) []*partitionState {
	t := s[topic]
	if int(n) > len(t) {
		// Amortized: a replay or a snapshot's load fills a table in
		// ascending partitions.
		t = append(t, make([]*partitionState, int(n)-len(t))...)
		s[topic] = t
	}
	return t
}

// stateIn returns the state in a table's slot, made if it has none.
func stateIn(t []*partitionState, partition int32) *partitionState {
	p := t[partition]
	if p == nil {
		p = &partitionState{}
		t[partition] = p
	}
	return p
}

// clone copies the tables (not the states), for reading them without the
// lock that guards their growth.
func (s partitionStates) clone() partitionStates {
	c := make(partitionStates, len(s))
	for topic, t := range s {
		c[topic] = append([]*partitionState(nil), t...)
	}
	return c
}

// partition returns the partition's produce state, made if it has none.
func (b *Broker) partition(topic string, partition int32) *partitionState {
	b.partsMu.Lock()
	defer b.partsMu.Unlock()
	return b.parts.at(topic, partition)
}

// knownPartition is the partition's produce state, nil if nothing was
// produced to it: unlike partition, it makes none, so fetches of
// partitions never written add nothing.
func (b *Broker) knownPartition(topic string, partition int32) *partitionState {
	b.partsMu.Lock()
	defer b.partsMu.Unlock()
	return b.parts.get(topic, partition)
}

// resolveStates sets the produce state of a request's pending batches of
// one topic, which has partitions partitions, looking the topic up once.
func (b *Broker) resolveStates(topic string, partitions int32, pending []pendingBatch) {
	if len(pending) == 0 {
		return
	}
	n := partitions
	for i := range pending {
		n = max(n, pending[i].sb.Partition+1)
	}
	b.partsMu.Lock()
	defer b.partsMu.Unlock()
	t := b.parts.table(topic, n)
	for i := range pending {
		pending[i].p = stateIn(t, pending[i].sb.Partition)
	}
}
