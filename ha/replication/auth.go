package replication

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// ErrUnauthenticated is returned when the other end of a stream cannot
// prove it holds the replication key: a leader refuses such a follower
// before it reads a byte of the log or learns an epoch from it, and a
// follower refuses such a leader before it cuts or writes its log.
var ErrUnauthenticated = errors.New("replication: peer does not hold the replication key")

const (
	nonceSize = 32
	proofSize = sha256.Size
)

type nonce [nonceSize]byte

func newNonce() (nonce, error) {
	var n nonce
	if _, err := rand.Read(n[:]); err != nil {
		return n, fmt.Errorf("replication: nonce: %w", err)
	}
	return n, nil
}

// Each side proves itself over the other's fresh nonce, so a proof is
// never valid twice; the role label keeps one side's proof from serving
// as the other's.
const (
	proofLeader   = "unilog replication leader v1"
	proofFollower = "unilog replication follower v1"
)

// leaderProof binds the leader's answer to the address the follower
// dialed: a process that relays a real leader's proofs from another
// address (having made a follower dial it) is refused.
func leaderProof(key []byte, follower, leader nonce, addr string) []byte {
	return prove(key, proofLeader, follower[:], leader[:], []byte(addr))
}

// followerProof binds the follower's answer to the node name its Hello
// gave, so one member cannot be passed off as another.
func followerProof(key []byte, leader, follower nonce, node string) []byte {
	return prove(key, proofFollower, leader[:], follower[:], []byte(node))
}

func prove(key []byte, label string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	for _, p := range parts {
		// Length-prefixed: no two part lists hash alike.
		m.Write(be.AppendUint32(nil, uint32(len(p))))
		m.Write(p)
	}
	return m.Sum(nil)
}

// The leader's Auth frame carries its nonce then its proof; the
// follower's, its proof alone.
func encodeLeaderAuth(epoch int64, n nonce, proof []byte) []byte {
	return appendFrame(nil, frameAuth, epoch, n[:], proof)
}

func decodeLeaderAuth(f frame) (nonce, []byte, error) {
	var n nonce
	if f.typ != frameAuth || len(f.payload) != nonceSize+proofSize {
		return n, nil, fmt.Errorf("%w: frame of type %d and %d bytes instead of the leader's auth", ErrProtocol, f.typ, len(f.payload))
	}
	copy(n[:], f.payload)
	return n, f.payload[nonceSize:], nil
}

func decodeFollowerAuth(f frame) ([]byte, error) {
	if f.typ != frameAuth || len(f.payload) != proofSize {
		return nil, fmt.Errorf("%w: frame of type %d and %d bytes instead of the follower's auth", ErrProtocol, f.typ, len(f.payload))
	}
	return f.payload, nil
}
