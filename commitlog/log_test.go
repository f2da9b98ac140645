package commitlog

import (
	"errors"
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
