package commitlog

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// v1Message is message i of testdata/v1, a log of two 4 KiB files that a
// build writing version 1 records produced (an end-of-file marker ends the
// first file). It appended these 80 messages in order to an empty log.
func v1Message(i int) Message {
	m := Message{
		Topic:             fmt.Sprintf("v1-%d", i%3),
		Partition:         int32(i % 2),
		Count:             int32(1 + i%4),
		ProducerTimestamp: int64(1000 + i),
		Body:              []byte(fmt.Sprintf("XXXXXXXXbody-%d", i)),
	}
	if i%2 == 0 {
		m.Flags = FlagStampOffset
	}
	if i%5 == 0 {
		m.Key = []byte(fmt.Sprintf("key-%d", i))
		m.Headers = []Header{{Key: "h", Value: []byte("v")}, {Key: "nil"}}
	}
	return m
}

const v1Messages = 80

// copyV1Log copies testdata/v1 into a fresh directory, since recovery
// writes to the files it opens.
func copyV1Log(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ents, err := os.ReadDir(filepath.Join("testdata", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("testdata", "v1", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkV1Record checks that r is message i of testdata/v1 at its queue
// offset, decoded as version 1 with the zero TopicID.
func checkV1Record(t *testing.T, r *Record, i int, queue int64) {
	t.Helper()
	m := v1Message(i)
	if m.Flags&FlagStampOffset != 0 {
		m.Body = be.AppendUint64(nil, uint64(queue))
		m.Body = append(m.Body, fmt.Sprintf("body-%d", i)...)
	}
	if d := sameMessage(r, &m); d != "" {
		t.Fatalf("v1 record %d: %s", i, d)
	}
	if r.Version != 1 || !r.TopicID.IsZero() || r.QueueOffset != queue {
		t.Fatalf("v1 record %d: version %d topic id %s queue offset %d, want 1, zero, %d", i, r.Version, r.TopicID, r.QueueOffset, queue)
	}
}

// TestReadsVersion1Log recovers a log written by an older build, reads
// every record back through Recover, Read and a Cursor, then appends
// version 2 records behind them and recovers the mixed log again.
func TestReadsVersion1Log(t *testing.T) {
	dir := copyV1Log(t)
	opts := testOptions(t, dir, 4096)
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		topic     string
		partition int32
	}
	next := map[key]int64{}
	var phys []int64
	end, err := l.Recover(0, func(r *Record) error {
		i := len(phys)
		k := key{r.Topic, r.Partition}
		checkV1Record(t, r, i, next[k])
		next[k] += int64(r.Count)
		phys = append(phys, r.PhysOffset)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(phys) != v1Messages || len(l.Files()) != 2 {
		t.Fatalf("recovered %d records in %d files, want %d in 2", len(phys), len(l.Files()), v1Messages)
	}
	v, err := l.Read(phys[7])
	if err != nil {
		t.Fatal(err)
	}
	if v.Record().Version != 1 || v.Record().Topic != "v1-1" {
		t.Fatalf("Read of a v1 record: version %d topic %q", v.Record().Version, v.Record().Topic)
	}
	v.Release()

	// The caller restores the counters (the dispatcher from its queues).
	l.SetQueueOffset("v1-0", TopicID{}, 0, next[key{"v1-0", 0}])
	id := TopicID{0: 1, 15: 2}
	added := []Message{
		{Topic: "v1-0", Partition: 0, Body: []byte("v2 beside the v1 incarnation")},
		{Topic: "v1-0", TopicID: id, Partition: 0, Body: []byte("v2 of a new incarnation")},
	}
	pos, err := l.AppendBatch(added)
	if err != nil {
		t.Fatal(err)
	}
	if want := next[key{"v1-0", 0}]; pos[0].QueueOffset != want || pos[1].QueueOffset != 0 {
		t.Fatalf("queue offsets %d and %d, want %d and 0", pos[0].QueueOffset, pos[1].QueueOffset, want)
	}
	if pos[0].PhysOffset != end {
		t.Fatalf("appended at %d, the v1 log ended at %d", pos[0].PhysOffset, end)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var got []*Record
	if _, err := l.Recover(0, func(r *Record) error {
		c := *r
		c.Topic, c.Body = r.Topic, append([]byte(nil), r.Body...)
		got = append(got, &c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != v1Messages+len(added) {
		t.Fatalf("mixed log: %d records, want %d", len(got), v1Messages+len(added))
	}
	for j, r := range got[v1Messages:] {
		if r.Version != Version || r.TopicID != added[j].TopicID || string(r.Body) != string(added[j].Body) {
			t.Fatalf("v2 record %d: version %d id %s body %q", j, r.Version, r.TopicID, r.Body)
		}
	}
	c := l.Cursor(0)
	defer c.Close()
	for i := range got {
		r, err := c.Next()
		if err != nil || r == nil {
			t.Fatalf("cursor at record %d: %v %v", i, r, err)
		}
		if r.PhysOffset != got[i].PhysOffset || r.Version != got[i].Version || r.TopicID != got[i].TopicID {
			t.Fatalf("cursor record %d: at %d version %d id %s", i, r.PhysOffset, r.Version, r.TopicID)
		}
	}
}
