package controlplane

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"
)

// Topic is the cluster metadata of one topic, metadata.topic.<name>.
type Topic struct {
	Name       string   `json:"name"`
	ID         [16]byte `json:"id"`
	Partitions int32    `json:"partitions"`
	CreatedMs  int64    `json:"created_ms"`
	// Groups[p] is the replica group that owns partition p.
	Groups []string `json:"groups"`
	// UntaggedRecords marks a topic imported from a data directory whose
	// records predate topic ids (broker.TopicMeta.UntaggedRecords).
	UntaggedRecords bool `json:"untagged_records,omitempty"`
	// Configs and LogStarts are broker.TopicMeta's: the topic's own
	// configs and the log starts DeleteRecords moved.
	Configs   map[string]string `json:"configs,omitempty"`
	LogStarts map[int32]int64   `json:"log_starts,omitempty"`
	// Moves are the partitions moving to another replica group (moves.go).
	Moves map[int32]Move `json:"moves,omitempty"`
	// Epochs are the leader epoch bases of the partitions that moved.
	Epochs map[int32]PartitionEpoch `json:"epochs,omitempty"`
}

// TopicEvent is one change seen on the metadata bucket.
type TopicEvent struct {
	Topic   Topic
	Deleted bool
	// Remote is true for a change another node made, seen on the watch.
	Remote bool
}

// Metadata errors.
var (
	ErrTopicExists  = errors.New("ha: topic already exists")
	ErrUnknownTopic = errors.New("ha: unknown topic")
)

// errNoPlacement refuses new partitions on a Metadata bound by a tool
// (BindMetadata), which knows no live members to place them on.
var errNoPlacement = errors.New("ha: metadata opened without placement")

// opTimeout bounds one metadata operation: the broker's interface has no
// context, and a control plane that cannot answer in this long is down.
const opTimeout = 10 * time.Second

const producerIDsKey = "producer_ids"

// producerIDsValue is the value of metadata.producer_ids.
type producerIDsValue struct {
	Next int64 `json:"next"`
}

// topicKey encodes the name: Kafka allows '.' anywhere in a topic name,
// but in a KV key it separates tokens and may not lead, trail or repeat.
func topicKey(name string) string {
	return "topic." + base64.RawURLEncoding.EncodeToString([]byte(name))
}

// Metadata is the cluster metadata kept in the metadata bucket, with a
// local copy maintained by a watch: reads never leave the process, and
// every node sees every change without polling.
type Metadata struct {
	kv  jetstream.KeyValue
	log logrus.FieldLogger
	// place picks the replica groups of a new topic's partitions.
	place func(partitions int32) []string

	mu     sync.RWMutex
	topics map[string]topicEntry
	// moving names the topics with a partition move in progress, so
	// Moves, which leaders poll, does not walk every topic.
	moving map[string]bool
	subs   []func(TopicEvent)
	// ownMu is held by each change this node makes from its write to the
	// bucket until it is applied to the copy, and taken by the watch
	// before it applies an entry: the watch can deliver the echo of a
	// change before the write returns, and the echo applied first was
	// reported to subscribers as another node's change (the broker then
	// logged its own deletes as another node's).
	ownMu sync.Mutex

	// applyMu serializes the watch's entries with those of CatchUp's
	// fresh read of the bucket, so subscribers see one change at a time.
	applyMu sync.Mutex
	watcher jetstream.KeyWatcher
	done    chan struct{}
	rev     *watchRevision
	// node is the node id the watch reports to its test hook.
	node int32
}

// topicEntry keeps deletions too, so a late watch event of an older
// revision cannot bring a deleted topic back.
type topicEntry struct {
	t       Topic
	rev     uint64
	deleted bool
}

// OpenMetadata loads the topics and keeps following the bucket. place
// assigns replica groups to new partitions.
func OpenMetadata(ctx context.Context, kv jetstream.KeyValue, place func(partitions int32) []string, log logrus.FieldLogger) (*Metadata, error) {
	return openMetadata(ctx, kv, place, log, -1)
}

// openMetadata is OpenMetadata for node.
func openMetadata(ctx context.Context, kv jetstream.KeyValue, place func(partitions int32) []string, log logrus.FieldLogger, node int32) (*Metadata, error) {
	// Every key, the producer id counter too: CatchUp waits for the
	// bucket's last revision, whichever key it was.
	w, err := kv.WatchAll(context.Background())
	if err != nil {
		return nil, fmt.Errorf("ha: watch metadata: %w", err)
	}
	m := &Metadata{kv: kv, log: log, place: place, topics: make(map[string]topicEntry), moving: make(map[string]bool), watcher: w, done: make(chan struct{}), rev: newWatchRevision(), node: node}
	if err := loadInitial(ctx, w, m.applyEntry); err != nil {
		w.Stop()
		return nil, fmt.Errorf("ha: watch metadata: %w", err)
	}
	go m.follow()
	return m, nil
}

func (m *Metadata) follow() {
	defer close(m.done)
	for e := range m.watcher.Updates() {
		if e != nil {
			m.atMetadataWatch()
			m.applyEntry(e)
		}
	}
}

func (m *Metadata) applyEntry(e jetstream.KeyValueEntry) {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	defer m.rev.note(e.Revision())
	if !strings.HasPrefix(e.Key(), "topic.") {
		return // the producer id counter: read from the bucket when used
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(e.Key(), "topic."))
	if err != nil {
		m.log.WithField("key", e.Key()).Warn("metadata bucket: key is not topic.<base64url name>")
		return
	}
	var t Topic
	deleted := e.Operation() != jetstream.KeyValuePut
	if deleted {
		t.Name = string(raw)
	} else if err := decodeValue(e.Value(), &t); err != nil {
		m.log.WithError(err).WithField("key", e.Key()).Error("metadata bucket: topic unreadable")
		return
	}
	// An entry received while this node's change is in flight may be its
	// echo: wait for the change to be applied, which makes it one.
	m.ownMu.Lock()
	m.ownMu.Unlock() // a barrier: subscribers run unlocked
	m.apply(t, e.Revision(), deleted, true)
}

// apply installs a revision newer than the one held and tells subscribers.
func (m *Metadata) apply(t Topic, rev uint64, deleted, remote bool) {
	m.mu.Lock()
	cur, ok := m.topics[t.Name]
	if ok && cur.rev >= rev {
		m.mu.Unlock()
		return
	}
	if ok && cur.deleted && deleted {
		// The watch echoing a delete this node already applied.
		m.topics[t.Name] = topicEntry{t: t, rev: rev, deleted: true}
		delete(m.moving, t.Name)
		m.mu.Unlock()
		return
	}
	m.topics[t.Name] = topicEntry{t: t, rev: rev, deleted: deleted}
	if !deleted && len(t.Moves) > 0 {
		m.moving[t.Name] = true
	} else {
		delete(m.moving, t.Name)
	}
	subs := m.subs
	m.mu.Unlock()
	for _, f := range subs {
		f(TopicEvent{Topic: t, Deleted: deleted, Remote: remote})
	}
}

// OnChange registers f for every later change, local or from another
// node, in revision order. f runs on the watch goroutine (Remote) or the
// mutating one; the next change waits for it, so f must not change the
// metadata itself.
func (m *Metadata) OnChange(f func(TopicEvent)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.subs = append(m.subs, f)
}

// Topics lists every topic, sorted by name.
func (m *Metadata) Topics() []Topic {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Topic, 0, len(m.topics))
	for _, e := range m.topics {
		if !e.deleted {
			out = append(out, e.t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Topic returns one topic.
func (m *Metadata) Topic(name string) (Topic, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	e, ok := m.topics[name]
	return e.t, ok && !e.deleted
}

// CreateTopic adds a topic, placing its partitions when t.Groups is
// empty; ErrTopicExists if the name is taken.
func (m *Metadata) CreateTopic(t Topic) error {
	if len(t.Groups) == 0 {
		if m.place == nil {
			return fmt.Errorf("ha: create topic %s: %w", t.Name, errNoPlacement)
		}
		t.Groups = m.place(t.Partitions)
	}
	if int32(len(t.Groups)) != t.Partitions {
		return fmt.Errorf("ha: create topic %s: %d replica groups for %d partitions", t.Name, len(t.Groups), t.Partitions)
	}
	val, err := encodeValue(t)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	m.ownMu.Lock()
	defer m.ownMu.Unlock()
	rev, err := m.kv.Create(ctx, topicKey(t.Name), val)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("%w: %s", ErrTopicExists, t.Name)
	}
	if err != nil {
		return fmt.Errorf("ha: create topic %s: %w", t.Name, err)
	}
	m.apply(t, rev, false, false)
	return nil
}

// getTopic reads a topic's current entry from the bucket, not the copy.
func (m *Metadata) getTopic(ctx context.Context, name string) (jetstream.KeyValueEntry, error) {
	e, err := m.kv.Get(ctx, topicKey(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return e, nil
}

// DeleteTopic removes a topic; ErrUnknownTopic if it does not exist.
func (m *Metadata) DeleteTopic(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	m.ownMu.Lock()
	defer m.ownMu.Unlock()
	for {
		e, err := m.getTopic(ctx, name)
		if err != nil {
			return fmt.Errorf("ha: delete topic: %w", err)
		}
		err = m.kv.Delete(ctx, topicKey(name), jetstream.LastRevision(e.Revision()))
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		if err != nil {
			return fmt.Errorf("ha: delete topic %s: %w", name, err)
		}
		// The delete marker's revision is not returned; any revision above
		// the deleted one orders it after every earlier event.
		m.apply(Topic{Name: name}, e.Revision()+1, true, false)
		return nil
	}
}

// SetPartitions changes a topic's partition count, placing added
// partitions.
func (m *Metadata) SetPartitions(name string, partitions int32) error {
	return m.UpdateTopic(name, func(t *Topic) error {
		switch {
		case partitions < t.Partitions:
			t.Groups = t.Groups[:partitions]
		case m.place == nil:
			return fmt.Errorf("ha: add partitions to %s: %w", name, errNoPlacement)
		default:
			t.Groups = append(t.Groups, m.place(partitions-t.Partitions)...)
		}
		t.Partitions = partitions
		return nil
	})
}

// UpdateTopic applies update to the topic as the bucket holds it and
// stores the result with a compare-and-set, again on a fresh read when
// another node changed the topic meanwhile, so no concurrent change is
// lost; update's error aborts the change and is returned.
func (m *Metadata) UpdateTopic(name string, update func(*Topic) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	m.ownMu.Lock()
	defer m.ownMu.Unlock()
	for {
		e, err := m.getTopic(ctx, name)
		if err != nil {
			return fmt.Errorf("ha: update topic: %w", err)
		}
		var t Topic
		if err := decodeValue(e.Value(), &t); err != nil {
			return fmt.Errorf("ha: update topic %s: %w", name, err)
		}
		if err := update(&t); err != nil {
			return err
		}
		val, err := encodeValue(t)
		if err != nil {
			return err
		}
		rev, err := m.kv.Update(ctx, topicKey(name), val, e.Revision())
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		if err != nil {
			return fmt.Errorf("ha: update topic %s: %w", name, err)
		}
		m.apply(t, rev, false, false)
		return nil
	}
}

// reserveTryTimeout bounds one try of a producer id reservation. A write
// whose stream leader dies (with its broker, when NATS is embedded) is
// never answered: bounded only by opTimeout, it held every idempotent
// producer starting then for 10 s, where the stream had a new leader
// within about a second.
const reserveTryTimeout = time.Second

// ReserveProducerIDs reserves n producer ids with a compare-and-set on
// the counter, so two nodes never hand out the same id. A try that times
// out is retried from a fresh read until opTimeout: if its write was
// applied after all, the ids it reserved are skipped, never handed out.
func (m *Metadata) ReserveProducerIDs(n int64) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	for {
		first, err := m.reserveProducerIDs(ctx, n)
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) ||
			(errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("ha: reserve producer ids: %w", err)
		}
		return first, nil
	}
}

// reserveProducerIDs is one try of ReserveProducerIDs.
func (m *Metadata) reserveProducerIDs(ctx context.Context, n int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, reserveTryTimeout)
	defer cancel()
	e, err := m.kv.Get(ctx, producerIDsKey)
	var cur producerIDsValue
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return 0, err
	default:
		if err := decodeValue(e.Value(), &cur); err != nil {
			return 0, err
		}
	}
	val, err := encodeValue(producerIDsValue{Next: cur.Next + n})
	if err != nil {
		return 0, err
	}
	if e == nil {
		_, err = m.kv.Create(ctx, producerIDsKey, val)
	} else {
		_, err = m.kv.Update(ctx, producerIDsKey, val, e.Revision())
	}
	return cur.Next, err
}

// Close stops the watch.
func (m *Metadata) Close() error {
	m.watcher.Stop()
	<-m.done
	return nil
}
