package intern

import (
	"testing"
	"unsafe"
)

func TestStrings(t *testing.T) {
	s := New()
	a := s.Get([]byte("orders"))
	b := s.Get([]byte("orders"))
	if a != "orders" || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatalf("two gets of one name gave %q and %q, not one string", a, b)
	}
	if c := s.Get([]byte("payments")); c != "payments" || len(s) != 2 {
		t.Fatalf("got %q, %d names", c, len(s))
	}
	if e := s.Get(nil); e != "" {
		t.Fatalf("empty name: %q", e)
	}
}
