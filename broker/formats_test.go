package broker

import (
	"reflect"
	"testing"

	"github.com/unilog/unilog/internal/framed/framedtest"
)

// TestFormatsAsOlderBuildsWrote: the metadata file is written byte for
// byte as before the framed codec, and that build's file
// (testdata/formats) still reads back.
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

}
