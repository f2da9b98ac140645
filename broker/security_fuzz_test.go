package broker

import (
	"testing"

	"github.com/unilog/unilog/auth"
)

// FuzzSecuredRequest runs the request path of FuzzRequest on a broker with
// SASL and an ACL: the login gate, both handshake flows, the bare-token
// frames and the authorization split see arbitrary input. Seeds in
// testdata/fuzz/FuzzSecuredRequest log in (v0 and v1) and then produce,
// fetch and ask for metadata, or send every group API with allowed and
// denied groups and topics.
func FuzzSecuredRequest(f *testing.F) {
	cfg := testConfig(f, f.TempDir())
	cfg.Security.Credentials = testCredentials(f)
	// alice also writes the fuzz broker's seed topic and uses the fuzz-*
	// groups.
	acl, err := auth.ParseACL([]byte(testACL + "alice produce fuzz\nalice group fuzz-*\n"))
	if err != nil {
		f.Fatal(err)
	}
	cfg.Security.ACL = acl
	fuzzRequestPath(f, cfg)
}
