package broker

import (
	"reflect"
	"testing"

	"github.com/unilog/unilog/internal/framed/framedtest"
)

// TestFormatsAsOlderBuildsWrote: the metadata file and the producer-state
// snapshot are written byte for byte as before the framed codec, and that
// build's files (testdata/formats) still read back.
func TestFormatsAsOlderBuildsWrote(t *testing.T) {
	doc := metaDoc{Generation: 3, NextProducerID: 1000, Topics: []TopicMeta{
		{Name: "a", ID: [16]byte{1, 2, 3}, Partitions: 4, CreatedMs: 1700000000000},
		{Name: "b", ID: [16]byte{9}, Partitions: 1, CreatedMs: 1700000000001},
	}}
	enc, err := encodeMetadata(doc)
	if err != nil {
		t.Fatal(err)
	}
	b := framedtest.Golden(t, "metadata", enc)
	if got, err := decodeMetadata(b); err != nil || !reflect.DeepEqual(got, doc) {
		t.Errorf("metadata: %+v, %v; want %+v", got, err, doc)
	}

	snap := producerSnapshot{version: producerSnapshotVersion, logOffset: 1 << 30, parts: []partitionSnapshot{{
		tp: topicPartition{topic: "a", partition: 2}, id: [16]byte{1, 2, 3},
		producers: map[int64]*producerSeq{7: {epoch: 1, batches: []seqBatch{{firstSeq: 0, lastSeq: 9, baseOffset: 100, end: 5000}}}},
	}}}
	b = framedtest.Golden(t, "producer-state", encodeProducerSnapshot(snap))
	if got, err := decodeProducerSnapshot(b); err != nil || !reflect.DeepEqual(got, snap) {
		t.Errorf("producer snapshot: %+v, %v; want %+v", got, err, snap)
	}
}
