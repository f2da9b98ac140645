package auth

// Seed corpora live in testdata/fuzz/<target>/: real exchanges from
// franz-go's client, the RFC 5802 example, escaped names, the doc's files.

import (
	"bytes"
	"testing"
)

// FuzzScramServer feeds arbitrary client-first and client-final messages
// to the server: it must never panic, and must never authenticate without
// a valid proof, which random bytes cannot carry.
func FuzzScramServer(f *testing.F) {
	users := testUsers(f)
	f.Fuzz(func(t *testing.T, first, final []byte) {
		for _, m := range []string{ScramSHA256, ScramSHA512} {
			s, _ := NewSession(m, users)
			if _, _, err := s.Step(first); err != nil {
				continue
			}
			if _, done, err := s.Step(final); done || err == nil {
				t.Fatalf("%s authenticated %q with %q", m, first, final)
			}
		}
	})
}

// FuzzPlain feeds arbitrary PLAIN messages: no panic, and success only for
// alice's or bob's real password.
func FuzzPlain(f *testing.F) {
	users := testUsers(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		s, _ := NewSession(Plain, users)
		_, done, err := s.Step(msg)
		if done != (err == nil) {
			t.Fatalf("done=%v with err %v", done, err)
		}
		if done && !bytes.HasSuffix(msg, []byte("\x00alice-secret")) && !bytes.HasSuffix(msg, []byte("\x00bob,=secret")) {
			t.Fatalf("authenticated %q", msg)
		}
	})
}

// FuzzParseUsers: any bytes either parse into a set that marshals back to
// a file that parses the same, or are refused with ErrFormat.
func FuzzParseUsers(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := ParseUsers(data)
		if err != nil {
			return
		}
		again, err := ParseUsers(u.Marshal())
		if err != nil || !bytes.Equal(again.Marshal(), u.Marshal()) {
			t.Fatalf("re-marshalled users file does not round trip: %v", err)
		}
	})
}

// FuzzParseACL: no panic on any input.
func FuzzParseACL(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if a, err := ParseACL(data); err == nil {
			a.Allow("alice", Produce, "orders-1")
		}
	})
}
