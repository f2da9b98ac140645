package broker

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/unilog/unilog/producerstate"
	"github.com/unilog/unilog/store"
)

// ProducerPreload is the producer-state snapshot of a data directory, read,
// decoded and filed by partition in the background while the store
// recovers. A start needs both, and at a million partitions each took
// over a second on one core; the broker only waits for the snapshot once
// the store is open, and checks it against the log then (through
// Snapshot.Reach: the check needs the log's end, which recovery decides).
type ProducerPreload struct {
	done  chan struct{}
	snap  producerstate.Snapshot
	reach int64 // snap.Reach() before Through trimmed it
	parts partitionStates
	// filed is the incarnation each topic in parts was filed under, for
	// wait to drop a topic deleted while the store opened.
	filed map[string]store.TopicID
	err   error
}

// PreloadProducers starts reading the producer-state snapshot in dataDir,
// keeping the entries of the incarnations meta holds. Pass it to Start in
// Config.Producers. meta must answer Topic concurrently with the store's
// Open, as it does for Options.Live.
func PreloadProducers(dataDir string, meta MetadataStore) *ProducerPreload {
	p := &ProducerPreload{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.load(filepath.Join(dataDir, producerstate.FileName), meta)
	}()
	return p
}

// Abandon waits for the background read to end, for a caller that will
// not pass the preload to Start (the store failed to open) before it
// closes meta, which the read uses. Start abandons it itself when it
// fails.
func (p *ProducerPreload) Abandon() { <-p.done }

// load is readProducerSnapshot's work that needs no log: decoding, the
// version check and filing the live incarnations' state.
func (p *ProducerPreload) load(path string, meta MetadataStore) {
	raw, err := os.ReadFile(path)
	if err != nil {
		p.err = err
		return
	}
	if p.snap, p.err = producerstate.Decode(raw); p.err != nil {
		return
	}
	p.err = p.snap.TellsIncarnations(func(topic string) bool {
		m, ok := meta.Topic(topic)
		return ok && !m.UntaggedRecords
	})
	if p.err != nil {
		return
	}
	p.reach = p.snap.Reach()
	p.parts = make(partitionStates)
	p.filed = make(map[string]store.TopicID)
	for _, s := range p.snap.Parts {
		if livePartition(meta, s.Topic, s.ID, s.Partition) && s.State.Through(p.snap.LogOffset) {
			p.parts.at(s.Topic, s.Partition).Partition = s.State
			p.filed[s.Topic] = s.ID
		}
	}
}

// livePartition reports whether partition is one of the live
// incarnation id of topic's: an entry naming another is not filed (its
// topic's table would be as long as the number it names).
func livePartition(meta MetadataStore, topic string, id store.TopicID, partition int32) bool {
	m, ok := meta.Topic(topic)
	return ok && m.RecordID() == id && partition >= 0 && partition < m.Partitions
}

// wait returns the state load filed and the log offset it is the state at,
// once the snapshot passes the check against the log's end (writeOffset:
// the reach load took before trimming is in [0, writeOffset]), without
// the topics whose filed incarnation meta no longer holds: a deletion
// since load read meta must not hand its producers to the topic created
// again under its name.
func (p *ProducerPreload) wait(meta MetadataStore, writeOffset int64) (partitionStates, int64, error) {
	<-p.done
	if p.err != nil {
		return nil, 0, p.err
	}
	if p.reach < 0 || p.reach > writeOffset {
		return nil, 0, fmt.Errorf("%w: it reaches log offset %d, the log ends at %d", producerstate.ErrSnapshot, p.reach, writeOffset)
	}
	for topic, id := range p.filed {
		if !liveIncarnation(meta, topic, id) {
			delete(p.parts, topic)
		}
	}
	return p.parts, p.snap.LogOffset, nil
}
