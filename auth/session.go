package auth

import (
	"bytes"
	"errors"
	"fmt"
)

// Sentinel errors; every error of this package wraps one of them.
var (
	// ErrAuthFailed is a wrong password, an unknown user or a refused
	// authorization id. Clients are told no more than that.
	ErrAuthFailed = errors.New("auth: authentication failed")
	// ErrMalformed is a SASL message that does not parse.
	ErrMalformed = errors.New("auth: malformed SASL message")
	// ErrUnsupportedMechanism names a mechanism this package does not serve.
	ErrUnsupportedMechanism = errors.New("auth: unsupported SASL mechanism")
	// ErrFormat is a users or ACL file that does not parse or fails its check.
	ErrFormat = errors.New("auth: bad file")
)

// Plain is the PLAIN mechanism name (RFC 4616).
const Plain = "PLAIN"

// Mechanisms lists every mechanism NewSession serves, strongest first.
var Mechanisms = []string{ScramSHA512, ScramSHA256, Plain}

// CredentialLookup finds a user's stored credential for one SCRAM
// mechanism. The users file implements it; the HA control plane will too.
type CredentialLookup interface {
	Credential(user, mechanism string) (Credential, bool)
}

// Session is the server side of one SASL exchange. Step takes each client
// message and returns the answer; done reports a successful end. Any error
// ends the exchange unauthenticated.
type Session interface {
	Step(msg []byte) (resp []byte, done bool, err error)
	// Principal is the authenticated user once done.
	Principal() string
}

// NewSession starts an exchange of mechanism against creds.
func NewSession(mechanism string, creds CredentialLookup) (Session, error) {
	switch mechanism {
	case Plain:
		return &plainServer{creds: creds}, nil
	case ScramSHA256, ScramSHA512:
		return &scramServer{mechanism: mechanism, creds: creds}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnsupportedMechanism, mechanism)
}

type plainServer struct {
	creds CredentialLookup
	user  string
	done  bool
}

func (s *plainServer) Principal() string { return s.user }

// Step checks the single PLAIN message against the user's SCRAM
// credential (SHA-512 if stored, else SHA-256): PLAIN needs no clear
// password on the server either.
func (s *plainServer) Step(msg []byte) ([]byte, bool, error) {
	if s.done {
		return nil, false, fmt.Errorf("%w: message after the exchange ended", ErrMalformed)
	}
	s.done = true
	authzid, user, pass, err := ParsePlain(msg)
	if err != nil {
		return nil, false, err
	}
	if authzid != "" && authzid != user {
		return nil, false, fmt.Errorf("%w: authorization id %q differs from user %q", ErrAuthFailed, authzid, user)
	}
	for _, m := range []string{ScramSHA512, ScramSHA256} {
		if c, ok := s.creds.Credential(user, m); ok {
			if !c.VerifyPassword(pass) {
				return nil, false, fmt.Errorf("%w: user %q", ErrAuthFailed, user)
			}
			s.user = user
			return nil, true, nil
		}
	}
	// An unknown user costs the same key derivation as a known one, so
	// timing does not tell which users exist.
	decoyCredential(ScramSHA256, user).VerifyPassword(pass)
	return nil, false, fmt.Errorf("%w: user %q", ErrAuthFailed, user)
}

// ParsePlain splits a PLAIN message, authzid NUL authcid NUL passwd.
func ParsePlain(msg []byte) (authzid, user, password string, err error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("%w: PLAIN message has %d NUL-separated fields, want 3", ErrMalformed, len(parts))
	}
	if len(parts[1]) == 0 || len(parts[2]) == 0 {
		return "", "", "", fmt.Errorf("%w: PLAIN user and password must not be empty", ErrMalformed)
	}
	return string(parts[0]), string(parts[1]), string(parts[2]), nil
}
