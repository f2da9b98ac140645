package producerstate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/framed"
	"github.com/unilog/unilog/internal/framed/framedtest"
)

func testSnapshot() Snapshot {
	return Snapshot{Version: Version, LogOffset: 4096, Parts: []PartitionSnapshot{{
		Topic: "orders", Partition: 3, ID: commitlog.TopicID{1, 2, 3},
		State: Partition{Producers: []Producer{{ID: 7, Epoch: 2, Batches: []Stored{{0, 4, 10, 900}, {5, 5, 15, 1000}}}},
			Open: map[int64]int64{8: 40}, Aborted: []AbortedTxn{{ProducerID: 9, FirstOffset: 20, LastOffset: 30}}},
	}}}
}

func TestSnapshotFormat(t *testing.T) {
	s := testSnapshot()
	good := s.Encode()
	got, err := Decode(good)
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, s)
	}
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
	}{
		{"empty", func([]byte) []byte { return nil }},
		{"truncated", func(b []byte) []byte { return b[:len(b)-9] }},
		{"bit flip", func(b []byte) []byte { b[30] ^= 1; return b }},
		{"bad magic", func(b []byte) []byte { b[0] = 'X'; return reCRC(b) }},
		{"newer version", func(b []byte) []byte { b[5] = Version + 1; return reCRC(b) }},
		{"version 0", func(b []byte) []byte { b[5] = 0; return reCRC(b) }},
		{"count beyond the data", func(b []byte) []byte { b[19] = 9; return reCRC(b) }},
		{"no batches", func(b []byte) []byte { b[62] = 0; return reCRC(b) }},
		{"trailing bytes", func(b []byte) []byte { return reCRC(append(b[:len(b)-4:len(b)-4], 0, 0, 0, 0, 0)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Decode(tc.edit(bytes.Clone(good))); !errors.Is(err, ErrSnapshot) {
				t.Fatalf("decode: %v, want ErrSnapshot", err)
			}
		})
	}
}

// reCRC recomputes the trailing CRC of an edited snapshot, so the check
// under test is the one after the CRC.
func reCRC(b []byte) []byte {
	b = b[:len(b)-4]
	return binary.BigEndian.AppendUint32(b, framed.Checksum(b))
}

// TestSnapshotVersion1 reads testdata/producer-state-v1, written by the
// version 1 encoder: its entries carry no topic id, and a version 1
// snapshot is trusted only while no live topic's records carry ids.
func TestSnapshotVersion1(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "producer-state-v1"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := testSnapshot()
	want.Version, want.Parts[0].ID = 1, commitlog.TopicID{}
	want.Parts[0].State.Open, want.Parts[0].State.Aborted = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
	if err := got.TellsIncarnations(func(string) bool { return false }); err != nil {
		t.Errorf("no topic with ids: %v", err)
	}
	if err := got.TellsIncarnations(func(topic string) bool { return topic == "orders" }); !errors.Is(err, ErrSnapshot) {
		t.Errorf("a live topic with ids: %v, want ErrSnapshot", err)
	}
}

// TestSnapshotReach: the furthest log offset a snapshot names is its
// LogOffset, or a batch's end past it; a negative end makes it -1, a
// snapshot no log holds.
func TestSnapshotReach(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(s *Snapshot)
		want int64
	}{
		{"log offset", func(*Snapshot) {}, 4096},
		{"a batch past it", func(s *Snapshot) { s.Parts[0].State.Producer(7).Batches[1].End = 5000 }, 5000},
		{"a negative end", func(s *Snapshot) { s.Parts[0].State.Producer(7).Batches[1].End = -1 }, -1},
	} {
		s := testSnapshot()
		tc.edit(&s)
		if got := s.Reach(); got != tc.want {
			t.Errorf("%s: reach %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestFormatsAsOlderBuildsWrote: the snapshot is written byte for byte as
// the build that introduced version 3 wrote it (testdata/formats/
// producer-state-v3), and the version 2 file of the build before the
// framed codec (testdata/formats/producer-state) still reads back, as a
// partition without transactions.
func TestFormatsAsOlderBuildsWrote(t *testing.T) {
	want := Snapshot{Version: Version, LogOffset: 1 << 30, Parts: []PartitionSnapshot{{
		Topic: "a", Partition: 2, ID: commitlog.TopicID{1, 2, 3},
		State: Partition{Producers: []Producer{{ID: 7, Epoch: 1, Batches: []Stored{{FirstSeq: 0, LastSeq: 9, Base: 100, End: 5000}}}},
			Open: map[int64]int64{8: 120}, Aborted: []AbortedTxn{{ProducerID: 9, FirstOffset: 90, LastOffset: 95}}},
	}}}
	b := framedtest.Golden(t, "producer-state-v3", want.Encode())
	if got, err := Decode(b); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("producer snapshot: %+v, %v; want %+v", got, err, want)
	}
	v2, err := os.ReadFile(filepath.Join("testdata", "formats", "producer-state"))
	if err != nil {
		t.Fatal(err)
	}
	want.Version, want.Parts[0].State.Open, want.Parts[0].State.Aborted = 2, nil, nil
	if got, err := Decode(v2); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("version 2 snapshot: %+v, %v; want %+v", got, err, want)
	}
}

// TestSnapshotProducerOrder: a partition's producers decode sorted by id
// whatever order the file lists them in (builds before the sorted list
// wrote a map's order), and a producer listed twice makes the snapshot
// unusable.
func TestSnapshotProducerOrder(t *testing.T) {
	batch := []Stored{{FirstSeq: 0, LastSeq: 0, Base: 1, End: 100}}
	s := testSnapshot()
	s.Parts[0].State.Producers = []Producer{{ID: 9, Batches: batch}, {ID: -3, Batches: batch}, {ID: 7, Batches: batch}}
	got, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, ps := range got.Parts[0].State.Producers {
		ids = append(ids, ps.ID)
	}
	if !reflect.DeepEqual(ids, []int64{-3, 7, 9}) {
		t.Fatalf("decoded producers %v, want sorted", ids)
	}
	if ps := got.Parts[0].State.Producer(7); ps == nil || ps.ID != 7 {
		t.Fatalf("Producer(7) = %+v", ps)
	}
	s.Parts[0].State.Producers = []Producer{{ID: 7, Batches: batch}, {ID: 7, Batches: batch}}
	if _, err := Decode(s.Encode()); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("a producer listed twice: %v, want ErrSnapshot", err)
	}
}

// TestDecodeAllocs: a decoded partition's producers and batches come from
// shared chunks; they were two allocations per partition, 2,000,000 at a
// million partitions (issue 19).
func TestDecodeAllocs(t *testing.T) {
	const parts = 1000
	s := Snapshot{Version: Version, LogOffset: parts * 100}
	for i := range parts {
		s.Parts = append(s.Parts, PartitionSnapshot{Topic: "m0", Partition: int32(i), State: Partition{
			Producers: []Producer{{ID: 7, Batches: []Stored{{0, 1, int64(i) * 100, int64(i)*100 + 50}, {2, 3, int64(i)*100 + 50, int64(i)*100 + 100}}}},
		}})
	}
	raw := s.Encode()
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := Decode(raw); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 20 {
		t.Fatalf("%.0f allocations decoding %d partitions, want at most 20", allocs, parts)
	}
}

// TestDecodedStatesStayApart: partitions decoded into one chunk each own
// their values: a batch recorded in one, which appends to its producer's
// batches and may move them, leaves its neighbour's as they were.
func TestDecodedStatesStayApart(t *testing.T) {
	s := Snapshot{Version: Version, LogOffset: 1000}
	for i := range 3 {
		s.Parts = append(s.Parts, PartitionSnapshot{Topic: "m0", Partition: int32(i), State: Partition{
			Producers: []Producer{{ID: 7, Batches: []Stored{{0, 0, int64(i) * 10, int64(i)*10 + 5}}}},
		}})
	}
	d, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	want := func() [][]Stored {
		var out [][]Stored
		for _, p := range d.Parts {
			out = append(out, slices.Clone(p.State.Producers[0].Batches))
		}
		return out
	}
	before := want()
	for n := range DedupWindow + 1 {
		d.Parts[0].State.Record(Batch{ProducerID: 7, FirstSeq: int32(n + 1), Records: 1}, 100+int64(n), 101+int64(n))
	}
	d.Parts[1].State.Record(Batch{ProducerID: 8, Records: 1}, 200, 201)
	after := want()
	if !reflect.DeepEqual(after[2], before[2]) {
		t.Fatalf("partition 2's batches %v, were %v", after[2], before[2])
	}
	if !reflect.DeepEqual(after[1], before[1]) {
		t.Fatalf("partition 1's first producer's batches %v, were %v", after[1], before[1])
	}
	if got := d.Parts[0].State.Producers[0].Batches; len(got) != DedupWindow || got[len(got)-1].Base != 100+DedupWindow {
		t.Fatalf("partition 0's batches %v", got)
	}
}
