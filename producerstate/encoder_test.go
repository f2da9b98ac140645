package producerstate

import (
	"bytes"
	"testing"

	"github.com/unilog/unilog/commitlog"
)

// TestEncoderFollowsChanges: an Encoder adding a live partition writes
// what Snapshot.Encode writes of a copy of it, byte for byte, after each
// kind of change, each snapshot re-encoding only the partition changed
// since the last (a change that kept the old bytes would be written
// stale, and differ).
func TestEncoderFollowsChanges(t *testing.T) {
	id := commitlog.TopicID{7}
	var parts [3]Partition
	for i := range parts {
		parts[i].Record(Batch{ProducerID: 1, Records: 2}, 0, 10)
		parts[i].Record(Batch{ProducerID: 2, Records: 1}, 2, 20)
		parts[i].BeginTxn(2, 2)
	}
	for _, tc := range []struct {
		name   string
		change func(p *Partition)
	}{
		{"nothing", func(*Partition) {}},
		{"Record", func(p *Partition) { p.Record(Batch{ProducerID: 1, FirstSeq: 2, Records: 1}, 3, 30) }},
		{"RecordChecked", func(p *Partition) {
			b := Batch{ProducerID: 3, Records: 1}
			c, err := p.Check(b)
			if err != nil {
				t.Fatal(err)
			}
			p.RecordChecked(c, b, 4, 40)
		}},
		{"Replay", func(p *Partition) { p.Replay(Batch{ProducerID: 1, FirstSeq: 3, Records: 1}, 5, 50) }},
		{"Replay of a batch held", func(p *Partition) { p.Replay(Batch{ProducerID: 1, FirstSeq: 3, Records: 1}, 5, 50) }},
		{"BeginTxn", func(p *Partition) { p.BeginTxn(1, 6) }},
		{"EndTxn commit", func(p *Partition) { p.EndTxn(1, 0, true, 7) }},
		{"EndTxn abort", func(p *Partition) { p.EndTxn(2, 0, false, 8) }},
		{"EndTxn fencing an epoch", func(p *Partition) { p.EndTxn(3, 4, true, 9) }},
		{"DropAbortedBefore", func(p *Partition) { p.DropAbortedBefore(100) }},
		{"Through", func(p *Partition) { p.Through(35) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.change(&parts[1])
			encoded := parts[1].enc != nil
			e := NewEncoder(1000, nil)
			want := Snapshot{LogOffset: 1000}
			for i := range parts {
				e.Add("t", id, int32(i), &parts[i])
				want.Parts = append(want.Parts, PartitionSnapshot{Topic: "t", ID: id, Partition: int32(i), State: parts[i].Clone()})
			}
			if got := e.Finish(); !bytes.Equal(got, want.Encode()) {
				t.Fatalf("the encoder wrote %x, Encode %x", got, want.Encode())
			}
			if d, err := Decode(want.Encode()); err != nil || len(d.Parts) != len(parts) {
				t.Fatalf("decode: %d partitions, %v", len(d.Parts), err)
			}
			if tc.name != "nothing" && tc.name != "Replay of a batch held" && encoded {
				t.Fatalf("%s kept the partition's old encoding", tc.name)
			}
		})
	}
}

// TestEncoderRoom: a snapshot laid out in a room holding an earlier,
// longer snapshot's bytes is the same as one laid out fresh, in the room's
// storage when it fits and in new storage when it does not.
func TestEncoderRoom(t *testing.T) {
	parts := make([]Partition, 50)
	for i := range parts {
		parts[i].Record(Batch{ProducerID: int64(i), Records: 3}, int64(i), int64(i)*10)
	}
	encode := func(n int, room []byte) []byte {
		e := NewEncoder(int64(n), room)
		for i := range parts[:n] {
			e.Add("t", commitlog.TopicID{1}, int32(i), &parts[i])
		}
		return e.Finish()
	}
	big := encode(50, nil)
	stale := bytes.Clone(big)
	for _, tc := range []struct {
		name    string
		room    []byte
		n       int
		inPlace bool
	}{
		{"shorter than the room", stale, 10, true},
		{"as long as the room", stale, 50, true},
		{"longer than the room", stale[: 0 : len(stale)/3], 50, false},
		{"no room", nil, 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := encode(tc.n, tc.room)
			if want := encode(tc.n, nil); !bytes.Equal(got, want) {
				t.Fatalf("laid out in a used room: %x\nfresh: %x", got, want)
			}
			if d, err := Decode(got); err != nil || len(d.Parts) != tc.n {
				t.Fatalf("decode: %d partitions, %v", len(d.Parts), err)
			}
			if inPlace := cap(tc.room) > 0 && &got[0] == &tc.room[:1][0]; inPlace != tc.inPlace {
				t.Fatalf("laid out in the room's storage: %v, want %v", inPlace, tc.inPlace)
			}
		})
	}
}
