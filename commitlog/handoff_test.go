package commitlog

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// header is what a header cursor must return of a record: everything the
// mapping holds but the key, headers, body and CRC.
type header struct {
	handed
	Version uint8
}

func headerOf(r *Record) header {
	return header{handed{
		Position: r.Position(), ProducerTimestamp: r.ProducerTimestamp,
		Partition: r.Partition, Flags: r.Flags, Topic: r.Topic, TopicID: r.TopicID,
	}, r.Version}
}

// drain reads c up to the write offset, checking each record against the
// mapping (a plain Cursor at the same position).
func drain(t *testing.T, l *Log, c *Cursor) int {
	t.Helper()
	n := 0
	for {
		at := c.Offset()
		r, err := c.Next()
		if err != nil {
			t.Fatalf("header cursor at %d: %v", at, err)
		}
		if r == nil {
			return n
		}
		plain := l.Cursor(at)
		want, err := plain.Next()
		if err != nil || want == nil {
			t.Fatalf("plain cursor at %d: %v, %v", at, want, err)
		}
		if got, want := headerOf(r), headerOf(want); got != want {
			t.Fatalf("header cursor at %d returned\n%+v\nthe mapping holds\n%+v", at, got, want)
		}
		if c.Offset() != plain.Offset() {
			t.Fatalf("header cursor moved to %d, the mapping's next record is at %d", c.Offset(), plain.Offset())
		}
		plain.Close()
		n++
	}
}

// TestHeaderCursorMatchesMapping: a header cursor tailing the writer
// returns, record for record, the headers the files hold, across files
// (end-of-file markers and zero tails), records of every count and flag,
// a reader that falls past the hand-off's bound, and records appended
// before it existed; and it takes most of them from the hand-off.
func TestHeaderCursorMatchesMapping(t *testing.T) {
	l := openLog(t, testOptions(t, "", 64<<10))
	defer l.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	message := func(i int) Message {
		m := testMessage(i, 8+rng.IntN(3000))
		m.Count = int32(rng.IntN(4))
		m.Flags = uint16(rng.IntN(2))
		m.TopicID = TopicID{byte(i % 5)}
		return m
	}
	appendSome := func(n int) {
		for i := 0; i < n; {
			k := min(1+rng.IntN(8), n-i)
			ms := make([]Message, k)
			for j := range ms {
				ms[j] = message(i + j)
			}
			if _, err := l.AppendBatch(ms); err != nil {
				t.Fatal(err)
			}
			i += k
		}
	}
	appendSome(50) // before the header cursor: read from the mapping
	c := l.HeaderCursor(0)
	defer c.Close()
	total := 50
	for round := range 40 {
		n := 1 + rng.IntN(60)
		appendSome(n)
		total += n
		if round%3 != 2 { // and now and then let two rounds pile up
			if got := drain(t, l, c); got == 0 {
				t.Fatalf("round %d: nothing read", round)
			}
		}
	}
	appendSome(maxHandoff + 100) // the hand-off drops what is past its bound
	total += maxHandoff + 100
	appendSome(200)
	total += 200
	drain(t, l, c)
	if c.Offset() != l.WriteOffset() {
		t.Fatalf("header cursor stopped at %d, write offset %d", c.Offset(), l.WriteOffset())
	}
	handed := l.Stats().HandedOff
	if rolls := l.Stats().Rolls; rolls < 10 {
		t.Fatalf("%d files rolled: the test did not cross files", rolls)
	}
	if handed < int64(total-maxHandoff-100-50) || handed >= int64(total-50) {
		t.Fatalf("%d of %d records taken from the hand-off: want all but the 50 before the cursor and some past the bound", handed, total)
	}
	t.Logf("%d of %d records from the hand-off, %d files", handed, total, l.Stats().Rolls+1)
}

// TestHeaderCursorAfterTruncate: records the header cursor took from the
// hand-off and the log then cut away are not returned for the records
// written again at their positions, once the cursor is reset there as the
// dispatcher resets it.
func TestHeaderCursorAfterTruncate(t *testing.T) {
	l := openLog(t, testOptions(t, "", 1<<20))
	defer l.Close()
	c := l.HeaderCursor(0)
	defer c.Close()
	batch := func(topic string, n int) []Position {
		ms := make([]Message, n)
		for i := range ms {
			ms[i] = Message{Topic: topic, Partition: int32(i), Body: []byte(fmt.Sprint(topic, i))}
		}
		pos, err := l.AppendBatch(ms)
		if err != nil {
			t.Fatal(err)
		}
		return pos
	}
	old := batch("old", 10)
	if r, err := c.Next(); err != nil || r == nil || r.Topic != "old" {
		t.Fatalf("first record: %v, %v", r, err)
	}
	// The cursor now holds the hand-off's other nine records.
	to := old[5].PhysOffset
	if err := l.Truncate(to); err != nil {
		t.Fatal(err)
	}
	c.Reset(old[1].PhysOffset)
	batch("new", 10)
	var topics []string
	for {
		r, err := c.Next()
		if err != nil {
			t.Fatal(err)
		}
		if r == nil {
			break
		}
		topics = append(topics, fmt.Sprintf("%s/%d", r.Topic, r.Partition))
	}
	want := []string{"old/1", "old/2", "old/3", "old/4"}
	for i := range 10 {
		want = append(want, fmt.Sprintf("new/%d", i))
	}
	if fmt.Sprint(topics) != fmt.Sprint(want) {
		t.Fatalf("after the cut the cursor read %v, want %v", topics, want)
	}
	c.Reset(0)
	drain(t, l, c)
}

// TestHeaderCursorLeavesAFileItFilled: a record from the hand-off that
// ends exactly at its file's end, after the cursor read that file through
// the mapping, does not leave the cursor holding that file: at the next
// end-of-file marker it would roll from the old file's end, back over
// records already read.
func TestHeaderCursorLeavesAFileItFilled(t *testing.T) {
	const fileSize = 64 << 10
	l := openLog(t, testOptions(t, "", fileSize))
	defer l.Close()
	sized := func(n int) Message {
		m := Message{Topic: "t", Body: nil}
		m.Body = make([]byte, n-EncodedSize(&m))
		return m
	}
	appendOne := func(m Message) {
		if _, err := l.Append(&m); err != nil {
			t.Fatal(err)
		}
	}
	appendOne(sized(1000)) // before the cursor: read through the mapping
	c := l.HeaderCursor(0)
	defer c.Close()
	drain(t, l, c)
	appendOne(sized(fileSize / 2)) // these two fill the first file exactly
	appendOne(sized(fileSize/2 - 1000))
	for range 70 { // and these more than the second
		appendOne(sized(1000))
	}
	if n := drain(t, l, c); n != 72 {
		t.Fatalf("read %d records, want 72", n)
	}
}
