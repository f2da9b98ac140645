package commitlog

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestAppendReadReopen(t *testing.T) {
	opts := testOptions(t, "", 64<<10)
	l := openLog(t, opts)
	var msgs []Message
	var pos []Position
	for i := 0; i < 500; i++ {
		m := testMessage(i, i%300)
		p, err := l.Append(&m)
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		msgs = append(msgs, m)
		pos = append(pos, p)
	}
	check := func(l *Log) {
		t.Helper()
		for i, p := range pos {
			v, err := l.Read(p.PhysOffset)
			if err != nil {
				t.Fatalf("Read %d at %d: %v", i, p.PhysOffset, err)
			}
			if d := sameMessage(v.Record(), &msgs[i]); d != "" {
				t.Fatalf("record %d: %s", i, d)
			}
			if v.Record().Position() != p {
				t.Fatalf("record %d: position %+v, want %+v", i, v.Record().Position(), p)
			}
			v.Release()
		}
	}
	check(l)
	end := l.WriteOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(&msgs[0]); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}

	l2, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	n := 0
	got, err := l2.Recover(0, func(r *Record) error {
		if d := sameMessage(r, &msgs[n]); d != "" {
			t.Fatalf("recovered record %d: %s", n, d)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != end || n != len(msgs) {
		t.Fatalf("Recover = %d with %d records, want %d with %d", got, n, end, len(msgs))
	}
	check(l2)
}

// scanAll reads every record from MinOffset to WriteOffset via View.Next.
func scanAll(t *testing.T, l *Log) []Position {
	t.Helper()
	var out []Position
	for phys := l.MinOffset(); phys < l.WriteOffset(); {
		v, err := l.Read(phys)
		if errors.Is(err, ErrOutOfRange) {
			break // only an end-of-file marker was left before WriteOffset
		}
		if err != nil {
			t.Fatalf("Read %d: %v", phys, err)
		}
		out = append(out, v.Record().Position())
		phys = v.Next()
		v.Release()
	}
	return out
}

func TestRollAtFileBoundary(t *testing.T) {
	const fileSize = 8192
	for _, tail := range []int64{0, 1, 7, 8, 9, 100} {
		t.Run(fmt.Sprintf("tail=%d", tail), func(t *testing.T) {
			opts := testOptions(t, "", fileSize)
			opts.MaxRecordSize = fileSize
			l := openLog(t, opts)
			defer l.Close()
			a := Message{Topic: "t", Body: make([]byte, fileSize-tail-(MinRecordSize+TopicIDSize+1))}
			b := Message{Topic: "t", Body: make([]byte, 200)}
			pa, err := l.Append(&a)
			if err != nil {
				t.Fatal(err)
			}
			pb, err := l.Append(&b)
			if err != nil {
				t.Fatal(err)
			}
			if pa.PhysOffset != 0 || pa.End() != fileSize-tail || pb.PhysOffset != fileSize {
				t.Fatalf("a at %d..%d, b at %d", pa.PhysOffset, pa.End(), pb.PhysOffset)
			}
			if files := l.Files(); len(files) != 2 || files[1].Name != "00000000000000008192" || files[1].Base != fileSize {
				t.Fatalf("files %+v", files)
			}
			tailBytes := l.chain()[0].ro[fileSize-tail:]
			switch {
			case tail >= BlankSize:
				if !isBlank(tailBytes, tail) {
					t.Fatalf("no end-of-file marker in a %d-byte tail: % x", tail, tailBytes[:BlankSize])
				}
				if !bytes.Equal(tailBytes[BlankSize:], make([]byte, tail-BlankSize)) {
					t.Fatal("bytes after the marker are not zero")
				}
			default:
				if !bytes.Equal(tailBytes, make([]byte, tail)) {
					t.Fatalf("short tail not zero: % x", tailBytes)
				}
			}
			v, err := l.Read(pa.End())
			if err != nil {
				t.Fatalf("Read at the tail: %v", err)
			}
			if v.Record().PhysOffset != pb.PhysOffset {
				t.Fatalf("Read at the tail gave the record at %d, want %d", v.Record().PhysOffset, pb.PhysOffset)
			}
			v.Release()
			if got := scanAll(t, l); len(got) != 2 || got[0] != pa || got[1] != pb {
				t.Fatalf("scan %+v", got)
			}
			l.Close()

			l2, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			var n int
			end, err := l2.Recover(0, func(*Record) error { n++; return nil })
			if err != nil || end != pb.End() || n != 2 {
				t.Fatalf("Recover = %d, %v with %d records; want %d with 2", end, err, n, pb.End())
			}
		})
	}
}

func TestBatchSpanningManyFiles(t *testing.T) {
	opts := testOptions(t, "", 4096)
	l := openLog(t, opts)
	defer l.Close()
	ms := make([]Message, 50)
	for i := range ms {
		ms[i] = testMessage(i, 1000)
	}
	pos, err := l.AppendBatch(ms)
	if err != nil {
		t.Fatal(err)
	}
	if len(pos) != len(ms) {
		t.Fatalf("%d positions for %d messages", len(pos), len(ms))
	}
	for i, p := range pos {
		if p.PhysOffset/4096 != (p.End()-1)/4096 {
			t.Fatalf("record %d spans files: %d..%d", i, p.PhysOffset, p.End())
		}
		v, err := l.Read(p.PhysOffset)
		if err != nil {
			t.Fatal(err)
		}
		if d := sameMessage(v.Record(), &ms[i]); d != "" {
			t.Fatalf("record %d: %s", i, d)
		}
		v.Release()
	}
	if got := len(scanAll(t, l)); got != len(ms) {
		t.Fatalf("scanned %d records, want %d", got, len(ms))
	}
	if s := l.Stats(); s.Rolls < 12 {
		t.Fatalf("%d rolls for 50 KiB in 4 KiB files", s.Rolls)
	}
}

func TestErrTooLargeWritesNothing(t *testing.T) {
	opts := testOptions(t, "", 64<<10)
	opts.MaxRecordSize = 1000
	l := openLog(t, opts)
	defer l.Close()
	ok := Message{Topic: "t", Body: make([]byte, 1000-(MinRecordSize+TopicIDSize+1))}
	if _, err := l.Append(&ok); err != nil {
		t.Fatalf("record of exactly MaxRecordSize: %v", err)
	}
	before := l.WriteOffset()
	tooBig := Message{Topic: "t", Body: make([]byte, 1000-64)}
	if _, err := l.Append(&tooBig); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Append: %v, want ErrTooLarge", err)
	}
	if _, err := l.AppendBatch([]Message{ok, tooBig, ok}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("AppendBatch: %v, want ErrTooLarge", err)
	}
	if _, err := l.AppendBatch([]Message{ok, {Partition: -1}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("AppendBatch: %v, want ErrInvalid", err)
	}
	if l.WriteOffset() != before {
		t.Fatalf("write offset moved from %d to %d", before, l.WriteOffset())
	}
	if got := len(scanAll(t, l)); got != 1 {
		t.Fatalf("%d records in the log, want 1", got)
	}
}

func TestReadErrors(t *testing.T) {
	l := openLog(t, testOptions(t, "", 64<<10))
	m := testMessage(1, 100)
	p, err := l.Append(&m)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		phys int64
		want error
	}{
		{-1, ErrOutOfRange},
		{p.End(), ErrOutOfRange},
		{1 << 40, ErrOutOfRange},
		{p.PhysOffset + 1, ErrCorrupt},
		{p.PhysOffset + 12, ErrCorrupt},
	}
	for _, tt := range tests {
		if _, err := l.Read(tt.phys); !errors.Is(err, tt.want) {
			t.Errorf("Read(%d) = %v, want %v", tt.phys, err, tt.want)
		}
	}
	l.Close()
	if _, err := l.Read(0); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close = %v, want ErrClosed", err)
	}
}

func TestNotRecovered(t *testing.T) {
	l, err := Open(testOptions(t, "", 64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(&Message{}); !errors.Is(err, ErrNotRecovered) {
		t.Fatalf("Append before Recover = %v", err)
	}
	if _, err := l.Recover(0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Recover(0, nil); err == nil {
		t.Fatal("second Recover succeeded")
	}
}

func TestQueueOffsetsAndStamp(t *testing.T) {
	l := openLog(t, testOptions(t, "", 64<<10))
	defer l.Close()
	// Topic "a" re-created: its new incarnation counts from 0 beside the old.
	a2 := TopicID{0xA2}
	l.SetQueueOffset("a", TopicID{}, 1, 100)
	body := []byte("XXXXXXXXpayload")
	ms := []Message{
		{Topic: "a", Partition: 0, Body: body, Flags: FlagStampOffset, Count: 5},
		{Topic: "a", Partition: 1, Body: body, Flags: FlagStampOffset, Count: 3},
		{Topic: "a", Partition: 0, Body: body, Flags: FlagStampOffset},
		{Topic: "b", Partition: 0, Body: body},
		{Topic: "a", TopicID: a2, Partition: 1, Body: body, Flags: FlagStampOffset, Count: 4},
		{Topic: "a", Partition: 1, Body: body, Flags: FlagStampOffset, Count: 2},
	}
	pos, err := l.AppendBatch(ms)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{0, 100, 5, 0, 0, 103}
	for i, p := range pos {
		if p.QueueOffset != want[i] {
			t.Errorf("message %d: queue offset %d, want %d", i, p.QueueOffset, want[i])
		}
		v, err := l.Read(p.PhysOffset)
		if err != nil {
			t.Fatal(err)
		}
		b := v.Record().Body
		if ms[i].Flags&FlagStampOffset != 0 && int64(be.Uint64(b)) != want[i] {
			t.Errorf("message %d: stamped %d, want %d", i, int64(be.Uint64(b)), want[i])
		}
		if ms[i].Flags&FlagStampOffset == 0 && string(b) != string(body) {
			t.Errorf("message %d: unstamped body changed to %q", i, b)
		}
		v.Release()
	}
	if string(body) != "XXXXXXXXpayload" {
		t.Fatalf("caller's body modified: %q", body)
	}
	if got := l.NextQueueOffset("a", TopicID{}, 1); got != 105 {
		t.Fatalf("NextQueueOffset(a,1) = %d, want 105", got)
	}
	if got := l.NextQueueOffset("a", a2, 1); got != 4 {
		t.Fatalf("NextQueueOffset of a's second incarnation = %d, want 4", got)
	}
	l.DeleteQueue("a", TopicID{})
	if got := l.NextQueueOffset("a", TopicID{}, 1); got != 0 {
		t.Fatalf("after DeleteQueue: %d, want 0", got)
	}
	if got := l.NextQueueOffset("b", TopicID{}, 0); got != 1 {
		t.Fatalf("DeleteQueue(a) touched b: %d", got)
	}
	if got := l.NextQueueOffset("a", a2, 1); got != 4 {
		t.Fatalf("DeleteQueue(a) touched a's other incarnation: %d", got)
	}
	p, err := l.Append(&Message{Topic: "a", Partition: 1})
	if err != nil || p.QueueOffset != 0 {
		t.Fatalf("after DeleteQueue: offset %d, %v", p.QueueOffset, err)
	}
}

func TestAppendedNotification(t *testing.T) {
	l := openLog(t, testOptions(t, "", 64<<10))
	ch := l.Appended()
	select {
	case <-ch:
		t.Fatal("closed before any append")
	default:
	}
	done := make(chan int64)
	seen := l.WriteOffset()
	go func() {
		for {
			c := l.Appended()
			if w := l.WriteOffset(); w > seen {
				done <- w
				return
			}
			<-c
		}
	}()
	if _, err := l.Append(&Message{Topic: "t"}); err != nil {
		t.Fatal(err)
	}
	<-ch
	if w := <-done; w != l.WriteOffset() {
		t.Fatalf("waiter saw %d, write offset %d", w, l.WriteOffset())
	}
	last := l.Appended()
	l.Close()
	<-last // Close wakes waiters
	<-l.Appended()
}

func TestAppendBatchAllocations(t *testing.T) {
	l := openLog(t, testOptions(t, "", 1<<20))
	defer l.Close()
	ms := benchMessages(64, 100)
	pos := make([]Position, 0, len(ms))
	n := testing.AllocsPerRun(50, func() {
		var err error
		if pos, err = l.AppendBatchTo(pos[:0], ms); err != nil {
			t.Fatal(err)
		}
	})
	// The first rounds insert the 16 partitions' counters; the average over
	// the runs must stay below one allocation per batch.
	if n >= 1 {
		t.Fatalf("AppendBatchTo allocates %v times per batch of %d", n, len(ms))
	}
}
