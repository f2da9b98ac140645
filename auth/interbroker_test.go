package auth

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestWithInterBroker: the inter-broker user logs in with the derived
// password by either SCRAM mechanism or PLAIN, shadows a file user of its
// name, and leaves the file's other users as they were.
func TestWithInterBroker(t *testing.T) {
	users := testUsers(t)
	shadowed, err := NewCredential(ScramSHA512, "chosen-by-a-person", MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	if err := users.Set(InterBrokerUser, shadowed); err != nil {
		t.Fatal(err)
	}
	creds, err := WithInterBroker(users, "derived-from-the-secret")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    sasl.Mechanism
		want error
	}{
		{"scram-512", scram.Auth{User: InterBrokerUser, Pass: "derived-from-the-secret"}.AsSha512Mechanism(), nil},
		{"scram-256", scram.Auth{User: InterBrokerUser, Pass: "derived-from-the-secret"}.AsSha256Mechanism(), nil},
		{"plain", plain.Auth{User: InterBrokerUser, Pass: "derived-from-the-secret"}.AsMechanism(), nil},
		{"the shadowed file password", scram.Auth{User: InterBrokerUser, Pass: "chosen-by-a-person"}.AsSha512Mechanism(), ErrAuthFailed},
		{"a file user", scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exchange(t, tc.m, creds); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}
