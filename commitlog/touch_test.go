package commitlog

import (
	"bytes"
	"slices"
	"testing"
)

// refsOf lists the reference count of every file of the log.
func refsOf(l *Log) []int32 {
	var refs []int32
	for _, s := range l.chain() {
		refs = append(refs, s.refs.Load())
	}
	return refs
}

// TestTouchAndPin: Touch reads through any offsets, held or not, across
// files, and leaves every file's references as it found them; a View's
// Pin holds exactly the View's reference until released, once.
func TestTouchAndPin(t *testing.T) {
	l := openLog(t, testOptions(t, "", 16<<10))
	var phys []int64
	var msgs []Message
	for i := range 60 {
		m := testMessage(i, 1000)
		p, err := l.Append(&m)
		if err != nil {
			t.Fatal(err)
		}
		phys = append(phys, p.PhysOffset)
		msgs = append(msgs, m)
	}
	if len(l.chain()) < 3 {
		t.Fatalf("%d files, want the records spread over at least 3", len(l.chain()))
	}
	before := refsOf(l)
	for _, run := range [][]int64{
		phys,
		{phys[50], phys[3], phys[40], phys[3]}, // out of order, files revisited
		{-1, phys[0], l.WriteOffset(), l.WriteOffset() + 1<<20, phys[59]},
		{phys[0] + 1}, // inside a record: loads, harmless
		nil,
	} {
		l.Touch(run)
		if got := refsOf(l); !slices.Equal(got, before) {
			t.Fatalf("Touch(%v) left references %v, want %v", run, got, before)
		}
	}

	var v View
	if err := l.ReadInto(phys[7], &v); err != nil {
		t.Fatal(err)
	}
	if d := sameMessage(v.Record(), &msgs[7]); d != "" {
		t.Fatalf("ReadInto: %s", d)
	}
	body := v.Record().Body
	p := v.Pin()
	v.Release() // the reference moved to the Pin: a no-op
	held := refsOf(l)
	diff := 0
	for i := range held {
		diff += int(held[i] - before[i])
	}
	if diff != 1 {
		t.Fatalf("a Pin holds %d references, want 1", diff)
	}
	if !bytes.Equal(body, msgs[7].Body) {
		t.Fatal("body under a Pin changed")
	}
	p.Release()
	p.Release()
	if got := refsOf(l); !slices.Equal(got, before) {
		t.Fatalf("after the Pin's release references %v, want %v", got, before)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.Touch(phys) // closed: nothing to touch, no fault
}
