package controlplane

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nkeys"

	"github.com/unilog/unilog/internal/fileops"
)

// SecretFileName is the cluster secret's file in a data directory, used
// when no other file is named.
const SecretFileName = "cluster.secret"

// minSecretLen is the shortest secret accepted: 32 characters of a
// generated file's 64 hex digits still hold 128 bits.
const minSecretLen = 32

// ErrSecretFile reports a cluster secret file that cannot be trusted
// (too short, or readable by other users).
var ErrSecretFile = errors.New("ha: unusable cluster secret file")

// Secret is the key the nodes of one cluster share. Nothing sends it: each
// use derives its own key from it (HMAC-SHA256 of a label), so the NATS
// client nkey, the route password and the replication key say nothing of
// each other or of the secret.
type Secret struct {
	key []byte
}

// Labels of the derived keys; a new use takes a new label.
const (
	labelNATSClient  = "unilog nats client nkey v1"
	labelNATSRoute   = "unilog nats route password v1"
	labelReplication = "unilog replication v1"
	labelInterBroker = "unilog inter-broker sasl password v1"
)

// LoadSecret reads the cluster secret at path, creating it (64 random hex
// digits and a newline, mode 0600) when it does not exist. Nodes given the
// same path may start together: the file appears whole or not at all (it
// is written under another name and linked in, which fails if another
// node was first), so every node reads the same secret.
func LoadSecret(path string) (*Secret, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if err := createSecret(path); err != nil {
			return nil, err
		}
	}
	return ReadSecret(path)
}

// ReadSecret reads the cluster secret at path, for tools that must not
// create one. The file is refused if group or others may read or write
// it, as ssh refuses a key.
func ReadSecret(path string) (*Secret, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ha: cluster secret: %w", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("ha: cluster secret: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %v; want it private to its owner (chmod 600)", ErrSecretFile, path, st.Mode().Perm())
	}
	key := bytes.TrimSpace(b)
	if len(key) < minSecretLen {
		return nil, fmt.Errorf("%w: %s holds %d characters, want at least %d (e.g. openssl rand -hex 32)", ErrSecretFile, path, len(key), minSecretLen)
	}
	return &Secret{key: key}, nil
}

// createSecret writes a new secret at path unless a file appeared there
// meanwhile (another node sharing the path won the race). The temporary
// file has a name of its own even for nodes of one process (tests).
func createSecret(path string) error {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("ha: cluster secret: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("ha: cluster secret: %w", err)
	}
	var ops fileops.OS
	f, err := os.CreateTemp(dir, filepath.Base(path)+".*"+fileops.TmpSuffix)
	if err != nil {
		return fmt.Errorf("ha: cluster secret: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(hex.EncodeToString(raw) + "\n")
	if err == nil {
		err = ops.Fdatasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// CreateTemp made it 0600 already; the link keeps that mode.
		err = os.Link(f.Name(), path)
		if errors.Is(err, fs.ErrExist) {
			err = nil
		}
	}
	if err == nil {
		err = ops.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("ha: cluster secret: %w", err)
	}
	return nil
}

// NewSecret is a secret from key, for tests and tools that hold one.
func NewSecret(key []byte) *Secret { return &Secret{key: bytes.Clone(key)} }

func (s *Secret) derive(label string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// ReplicationKey is the key both ends of a replication stream prove they
// hold (replication.LeaderConfig.Key, FollowerConfig.Key).
func (s *Secret) ReplicationKey() []byte { return s.derive(labelReplication) }

// InterBrokerPassword is the password of the SASL user the nodes log in
// to each other's Kafka listeners as (auth.InterBrokerUser): every node
// of the cluster derives the same one, so nobody configures or rotates
// it apart from the secret.
func (s *Secret) InterBrokerPassword() string { return hex.EncodeToString(s.derive(labelInterBroker)) }

// natsUser is the nkey every node connects to the embedded NATS with,
// and its public key. An nkey, not a password: the server only ever sees
// a signature of its own nonce, so not even a server run by someone else
// learns anything.
func (s *Secret) natsUser() (nkeys.KeyPair, string, error) {
	kp, err := nkeys.FromRawSeed(nkeys.PrefixByteUser, s.derive(labelNATSClient))
	if err != nil {
		return nil, "", fmt.Errorf("ha: nats nkey: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, "", fmt.Errorf("ha: nats nkey: %w", err)
	}
	return kp, pub, nil
}

// routeUser is the user and password the embedded servers' routes
// present to each other.
func (s *Secret) routeUser() (user, password string) {
	return "unilog-route", hex.EncodeToString(s.derive(labelNATSRoute))
}
