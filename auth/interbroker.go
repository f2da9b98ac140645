package auth

import "fmt"

// InterBrokerUser is the SASL user the nodes of a cluster log in to each
// other's Kafka listeners as (a partition move's copier, a transaction's
// markers for another replica group). No users file holds it: every node
// derives its password from what the cluster's nodes share, and
// WithInterBroker admits it beside the file's users, shadowing a user of
// the same name there, so nobody can add it with a password of their
// own. The broker grants it Kafka's CLUSTER_ACTION (see Cluster).
const InterBrokerUser = "unilog-broker"

// WithInterBroker is creds with InterBrokerUser added under password. The
// password is a derived 256-bit key, not something a person chose, so the
// fewest iterations SCRAM allows cost a guesser as much as any more would.
func WithInterBroker(creds CredentialLookup, password string) (CredentialLookup, error) {
	w := withUser{CredentialLookup: creds, user: InterBrokerUser, creds: map[string]Credential{}}
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		c, err := NewCredential(m, password, MinIterations)
		if err != nil {
			return nil, fmt.Errorf("auth: inter-broker user: %w", err)
		}
		w.creds[m] = c
	}
	return w, nil
}

// withUser is a credential lookup with one more user, found first.
type withUser struct {
	CredentialLookup
	user  string
	creds map[string]Credential
}

func (w withUser) Credential(user, mechanism string) (Credential, bool) {
	if user == w.user {
		c, ok := w.creds[mechanism]
		return c, ok
	}
	return w.CredentialLookup.Credential(user, mechanism)
}
