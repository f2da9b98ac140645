package commitlog

import (
	"testing"
	"unsafe"
)

// TestReadIntoExpect: a record read into a View told to expect its topic
// carries the caller's string; told another topic, it carries its own.
func TestReadIntoExpect(t *testing.T) {
	l := openLog(t, testOptions(t, "", 0))
	defer l.Close()
	m := testMessage(1, 100) // topic-1
	p, err := l.Append(&m)
	if err != nil {
		t.Fatal(err)
	}
	same := string([]byte("topic-1")) // not the interner's string
	for _, tc := range []struct {
		expect string
		shared bool
	}{
		{same, true},
		{"topic-0", false},
		{"", false},
		{"topic-10", false},
	} {
		var v View
		v.Expect(tc.expect)
		if err := l.ReadInto(p.PhysOffset, &v); err != nil {
			t.Fatal(err)
		}
		got := v.Record().Topic
		if got != m.Topic {
			t.Fatalf("expecting %q: read topic %q, want %q", tc.expect, got, m.Topic)
		}
		if kept := unsafe.StringData(got) == unsafe.StringData(tc.expect); kept != tc.shared {
			t.Errorf("expecting %q: caller's string kept %v, want %v", tc.expect, kept, tc.shared)
		}
		v.Release()
	}
}
