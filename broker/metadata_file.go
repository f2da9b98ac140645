package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/framed"
)

// MetadataFileName is the metadata file inside the data directory.
const MetadataFileName = "metadata"

// metaFormat frames the metadata file's JSON body. Version 1 was written
// by builds whose commit-log records carried no topic id.
var metaFormat = framed.Format{Name: "metadata", Magic: "ULMD", Version: 2, Oldest: 1, Shape: framed.Prefixed}

// metaDoc is the JSON body of the metadata file.
type metaDoc struct {
	// Generation increases with every write, for inspection.
	Generation     uint64      `json:"generation"`
	NextProducerID int64       `json:"next_producer_id"`
	Topics         []TopicMeta `json:"topics"`
}

// fileMetadata is the MetadataStore kept in one file, rewritten whole and
// atomically (tmp, fsync, rename, fsync dir) on every change. Changes are
// rare (topic admin, one write per producer id block), so simplicity wins.
type fileMetadata struct {
	path string
	fs   fileops.Replacer

	mu     sync.RWMutex
	doc    metaDoc
	topics map[string]TopicMeta
	closed bool
}

// OpenFileMetadata opens (or creates) the metadata file <dir>/metadata.
func OpenFileMetadata(dir string) (MetadataStore, error) { return openFileMetadata(dir, nil) }

// openFileMetadata is OpenFileMetadata writing through fs (nil:
// fileops.OS).
func openFileMetadata(dir string, fs fileops.Replacer) (MetadataStore, error) {
	if fs == nil {
		fs = fileops.OS{}
	}
	m := &fileMetadata{path: filepath.Join(dir, MetadataFileName), fs: fs, topics: make(map[string]TopicMeta)}
	b, err := os.ReadFile(m.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return m, nil
	case err != nil:
		return nil, fmt.Errorf("broker: read metadata %s: %w", m.path, err)
	}
	doc, err := decodeMetadata(b)
	if err != nil {
		return nil, fmt.Errorf("broker: metadata %s: %w", m.path, err)
	}
	m.doc = doc
	for _, t := range doc.Topics {
		m.topics[t.Name] = t
	}
	return m, nil
}

// encodeMetadata frames the JSON body.
func encodeMetadata(doc metaDoc) ([]byte, error) {
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return metaFormat.Append(make([]byte, 0, metaFormat.Overhead()+len(body)), body), nil
}

func decodeMetadata(b []byte) (metaDoc, error) {
	var doc metaDoc
	v, body, err := metaFormat.Decode(b)
	if err != nil {
		return doc, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return doc, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if v == 1 {
		// Written by a build whose commit-log records carried no topic id.
		for i := range doc.Topics {
			doc.Topics[i].UntaggedRecords = true
		}
	}
	return doc, nil
}

// commit writes next durably and only then makes it current.
func (m *fileMetadata) commit(next metaDoc, topics map[string]TopicMeta) error {
	if m.closed {
		return ErrClosed
	}
	next.Generation = m.doc.Generation + 1
	next.Topics = make([]TopicMeta, 0, len(topics))
	for _, t := range topics {
		next.Topics = append(next.Topics, t)
	}
	sort.Slice(next.Topics, func(i, j int) bool { return next.Topics[i].Name < next.Topics[j].Name })
	b, err := encodeMetadata(next)
	if err != nil {
		return fmt.Errorf("broker: encode metadata: %w", err)
	}
	if err := fileops.ReplaceFile(m.fs, m.path, b, 0o644); err != nil {
		return fmt.Errorf("broker: write metadata: %w", err)
	}
	m.doc = next
	m.topics = topics
	return nil
}

func (m *fileMetadata) copyTopics() map[string]TopicMeta {
	c := make(map[string]TopicMeta, len(m.topics)+1)
	for k, v := range m.topics {
		c[k] = v
	}
	return c
}

func (m *fileMetadata) Topics() []TopicMeta {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]TopicMeta, 0, len(m.topics))
	for _, t := range m.topics {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (m *fileMetadata) Topic(name string) (TopicMeta, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t, ok := m.topics[name]
	return t, ok
}

func (m *fileMetadata) CreateTopic(t TopicMeta) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.topics[t.Name]; ok {
		return fmt.Errorf("%w: %s", ErrTopicExists, t.Name)
	}
	topics := m.copyTopics()
	topics[t.Name] = t
	return m.commit(m.doc, topics)
}

func (m *fileMetadata) DeleteTopic(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.topics[name]; !ok {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	topics := m.copyTopics()
	delete(topics, name)
	return m.commit(m.doc, topics)
}

func (m *fileMetadata) SetPartitions(name string, partitions int32) error {
	return m.UpdateTopic(name, func(t *TopicMeta) error {
		t.Partitions = partitions
		return nil
	})
}

func (m *fileMetadata) UpdateTopic(name string, update func(*TopicMeta) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.topics[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	t = t.Clone()
	if err := update(&t); err != nil {
		return err
	}
	topics := m.copyTopics()
	topics[name] = t
	return m.commit(m.doc, topics)
}

func (m *fileMetadata) ReserveProducerIDs(n int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := m.doc
	first := next.NextProducerID
	next.NextProducerID += n
	if err := m.commit(next, m.copyTopics()); err != nil {
		return 0, err
	}
	return first, nil
}

func (m *fileMetadata) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
