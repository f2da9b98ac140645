package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// SCRAM mechanism names as negotiated in SaslHandshake.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// MinIterations is the smallest PBKDF2 iteration count accepted, Kafka's
// minimum (and the RFC 7677 recommendation).
const MinIterations = 4096

// maxIterations stops a hostile users file from making one login cost
// minutes of CPU.
const maxIterations = 1 << 20

// Credential is what the server keeps of a SCRAM password (RFC 5802 §3):
// enough to verify a client's proof and to prove itself, never enough to
// log in as the user.
type Credential struct {
	Mechanism  string
	Iterations int
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
}

func hashFor(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case ScramSHA256:
		return sha256.New, nil
	case ScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("%w: %q (want %s or %s)", ErrUnsupportedMechanism, mechanism, ScramSHA256, ScramSHA512)
}

// NewCredential derives the stored credential of password with a fresh
// random salt.
func NewCredential(mechanism, password string, iterations int) (Credential, error) {
	salt := make([]byte, 24)
	if _, err := rand.Read(salt); err != nil {
		return Credential{}, fmt.Errorf("auth: salt: %w", err)
	}
	return deriveCredential(mechanism, password, salt, iterations)
}

func deriveCredential(mechanism, password string, salt []byte, iterations int) (Credential, error) {
	h, err := hashFor(mechanism)
	if err != nil {
		return Credential{}, err
	}
	if iterations < MinIterations || iterations > maxIterations {
		return Credential{}, fmt.Errorf("auth: %d iterations: must be between %d and %d", iterations, MinIterations, maxIterations)
	}
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return Credential{}, fmt.Errorf("auth: derive key: %w", err)
	}
	clientKey := hmacSum(h, salted, "Client Key")
	stored := h()
	stored.Write(clientKey)
	return Credential{
		Mechanism:  mechanism,
		Iterations: iterations,
		Salt:       salt,
		StoredKey:  stored.Sum(nil),
		ServerKey:  hmacSum(h, salted, "Server Key"),
	}, nil
}

// VerifyPassword reports whether password is the one cred was derived
// from; PLAIN logins are checked this way, so clear passwords are never stored.
func (c Credential) VerifyPassword(password string) bool {
	d, err := deriveCredential(c.Mechanism, password, c.Salt, c.Iterations)
	return err == nil && hmac.Equal(d.StoredKey, c.StoredKey)
}

func hmacSum(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// scramServer is the server side of one SCRAM exchange: client-first,
// server-first, client-final, server-final (RFC 5802 §5).
type scramServer struct {
	mechanism string
	creds     CredentialLookup
	step      int

	user        string
	cred        Credential
	known       bool
	clientFirst string // client-first-message-bare
	gs2Header   string // "n,," or "n,a=authzid,": what c= must encode
	serverFirst string
	nonce       string
}

func (s *scramServer) Step(msg []byte) ([]byte, bool, error) {
	s.step++
	switch s.step {
	case 1:
		return s.first(msg)
	case 2:
		return s.final(msg)
	}
	return nil, false, fmt.Errorf("%w: message after the exchange ended", ErrMalformed)
}

func (s *scramServer) Principal() string { return s.user }

func (s *scramServer) first(msg []byte) ([]byte, bool, error) {
	cf, err := parseClientFirst(msg)
	if err != nil {
		return nil, false, err
	}
	if cf.token {
		return nil, false, fmt.Errorf("%w: delegation tokens are not supported", ErrAuthFailed)
	}
	s.user = cf.user
	s.clientFirst = cf.bare
	s.gs2Header = string(msg[:len(msg)-len(cf.bare)])
	s.cred, s.known = s.creds.Credential(cf.user, s.mechanism)
	if !s.known {
		// Answer as for a real user so the reply does not tell which
		// users exist; the proof can never match.
		s.cred = decoyCredential(s.mechanism, cf.user)
	}
	var sn [18]byte
	if _, err := rand.Read(sn[:]); err != nil {
		return nil, false, fmt.Errorf("auth: nonce: %w", err)
	}
	s.nonce = cf.nonce + base64.RawStdEncoding.EncodeToString(sn[:])
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(s.cred.Iterations)
	return []byte(s.serverFirst), false, nil
}

func (s *scramServer) final(msg []byte) ([]byte, bool, error) {
	cf, err := parseClientFinal(msg)
	if err != nil {
		return nil, false, err
	}
	if cf.binding != s.gs2Header {
		return nil, false, fmt.Errorf("%w: channel binding %q differs from the gs2 header %q", ErrMalformed, cf.binding, s.gs2Header)
	}
	// RFC 5802 wants the nonce echoed exactly; librdkafka sends its own
	// nonce again in front of it. Kafka accepts any nonce ending with the
	// server's, and so do we: the server's random part still makes the
	// exchange fresh, and the proof covers the message as sent.
	if !strings.HasSuffix(cf.nonce, s.nonce) {
		return nil, false, fmt.Errorf("%w: client-final nonce does not end with the server nonce", ErrMalformed)
	}
	h, err := hashFor(s.mechanism)
	if err != nil {
		return nil, false, err
	}
	authMessage := s.clientFirst + "," + s.serverFirst + "," + cf.withoutProof
	clientSig := hmacSum(h, s.cred.StoredKey, authMessage)
	if len(cf.proof) != len(clientSig) {
		return nil, false, fmt.Errorf("%w: user %q", ErrAuthFailed, s.user)
	}
	clientKey := make([]byte, len(clientSig))
	for i := range clientKey {
		clientKey[i] = cf.proof[i] ^ clientSig[i]
	}
	stored := h()
	stored.Write(clientKey)
	if !s.known || !hmac.Equal(stored.Sum(nil), s.cred.StoredKey) {
		return nil, false, fmt.Errorf("%w: user %q", ErrAuthFailed, s.user)
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(hmacSum(h, s.cred.ServerKey, authMessage))), true, nil
}

// decoyKey makes the decoy salt of an unknown user stable across attempts
// within one process, so probing twice does not reveal it as random.
var decoyKey = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

func decoyCredential(mechanism, user string) Credential {
	h, _ := hashFor(mechanism)
	return Credential{Mechanism: mechanism, Iterations: MinIterations, Salt: hmacSum(h, decoyKey, user)[:24]}
}

type clientFirst struct {
	bare  string // without the GS2 header: what the AuthMessage holds
	user  string
	nonce string
	token bool // Kafka's tokenauth=true extension
}

// parseClientFirst reads "n,[a=authzid],n=user,r=nonce[,ext...]". Channel
// binding is refused ("y" and "p" flags): Kafka has none to offer.
func parseClientFirst(msg []byte) (clientFirst, error) {
	var cf clientFirst
	s := string(msg)
	gs2, rest, ok := strings.Cut(s, ",")
	if !ok || gs2 != "n" {
		return cf, fmt.Errorf("%w: client-first must start with the gs2 flag n (no channel binding)", ErrMalformed)
	}
	authzid, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return cf, fmt.Errorf("%w: client-first has no gs2 authzid field", ErrMalformed)
	}
	if authzid != "" && !strings.HasPrefix(authzid, "a=") {
		return cf, fmt.Errorf("%w: bad gs2 authzid %q", ErrMalformed, authzid)
	}
	cf.bare = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return cf, fmt.Errorf("%w: client-first wants n=user,r=nonce", ErrMalformed)
	}
	user, err := unescapeSaslName(attrs[0][2:])
	if err != nil {
		return cf, err
	}
	if authzid != "" && authzid[2:] != attrs[0][2:] {
		return cf, fmt.Errorf("%w: authorization id %q differs from user %q", ErrAuthFailed, authzid[2:], user)
	}
	cf.user = user
	cf.nonce = attrs[1][2:]
	if cf.nonce == "" || !printable(cf.nonce) {
		return cf, fmt.Errorf("%w: empty or non-printable client nonce", ErrMalformed)
	}
	for _, ext := range attrs[2:] {
		if ext == "tokenauth=true" {
			cf.token = true
		}
	}
	return cf, nil
}

// unescapeSaslName undoes RFC 5802's "=2C" and "=3D" escapes and refuses
// any other use of '=' or an empty name.
func unescapeSaslName(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: empty user name", ErrMalformed)
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("%w: bad escape in user name %q", ErrMalformed, s)
		}
		i += 2
	}
	return b.String(), nil
}

// printable is RFC 5802's "printable": %x21-2B / %x2D-7E (no comma).
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

type clientFinal struct {
	withoutProof string
	binding      string
	nonce        string
	proof        []byte
}

// parseClientFinal reads "c=biws,r=nonce[,ext...],p=proof"; c= holds the
// base64 of the gs2 header the client sent first ("n,," is "biws").
func parseClientFinal(msg []byte) (clientFinal, error) {
	var cf clientFinal
	s := string(msg)
	i := strings.LastIndex(s, ",p=")
	if i < 0 {
		return cf, fmt.Errorf("%w: client-final has no proof", ErrMalformed)
	}
	cf.withoutProof = s[:i]
	proof, err := base64.StdEncoding.DecodeString(s[i+3:])
	if err != nil {
		return cf, fmt.Errorf("%w: client proof: %v", ErrMalformed, err)
	}
	cf.proof = proof
	attrs := strings.Split(cf.withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return cf, fmt.Errorf("%w: client-final wants c=binding,r=nonce,...,p=proof", ErrMalformed)
	}
	binding, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil {
		return cf, fmt.Errorf("%w: channel binding %q: %v", ErrMalformed, attrs[0][2:], err)
	}
	cf.binding = string(binding)
	cf.nonce = attrs[1][2:]
	return cf, nil
}
