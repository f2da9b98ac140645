package auth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/unilog/unilog/internal/poll"
)

// testUsers holds alice (both SCRAM mechanisms) and bob (SHA-256 only).
func testUsers(t testing.TB) *Users {
	t.Helper()
	u := &Users{}
	for _, c := range []struct{ user, mech, pass string }{
		{"alice", ScramSHA256, "alice-secret"},
		{"alice", ScramSHA512, "alice-secret"},
		{"bob", ScramSHA256, "bob,=secret"},
	} {
		cred, err := NewCredential(c.mech, c.pass, MinIterations)
		if err != nil {
			t.Fatal(err)
		}
		if err := u.Set(c.user, cred); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// exchange runs a franz-go client mechanism against a server session.
func exchange(t *testing.T, m sasl.Mechanism, creds CredentialLookup) (string, error) {
	t.Helper()
	srv, err := NewSession(m.Name(), creds)
	if err != nil {
		t.Fatal(err)
	}
	cs, msg, err := m.Authenticate(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		resp, done, err := srv.Step(msg)
		if err != nil {
			return "", err
		}
		cdone, next, err := cs.Challenge(resp)
		if err != nil {
			t.Fatalf("client rejected the server's answer: %v", err)
		}
		if done != cdone {
			t.Fatalf("server done=%v, client done=%v", done, cdone)
		}
		if done {
			return srv.Principal(), nil
		}
		msg = next
	}
	t.Fatal("exchange did not end")
	return "", nil
}

func TestExchangeWithFranzGoClients(t *testing.T) {
	users := testUsers(t)
	sha256 := func(user, pass string) sasl.Mechanism { return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism() }
	sha512 := func(user, pass string) sasl.Mechanism { return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism() }
	plainM := func(user, pass string) sasl.Mechanism { return plain.Auth{User: user, Pass: pass}.AsMechanism() }
	for _, tc := range []struct {
		name string
		m    sasl.Mechanism
		want error
	}{
		{"scram-256", sha256("alice", "alice-secret"), nil},
		{"scram-512", sha512("alice", "alice-secret"), nil},
		{"scram-256 escaped password", sha256("bob", "bob,=secret"), nil},
		{"plain", plainM("alice", "alice-secret"), nil},
		{"plain from sha-256 only", plainM("bob", "bob,=secret"), nil},
		{"scram-256 wrong password", sha256("alice", "nope"), ErrAuthFailed},
		{"scram-512 unknown user", sha512("carol", "x"), ErrAuthFailed},
		{"scram-512 user without that mechanism", sha512("bob", "bob,=secret"), ErrAuthFailed},
		{"plain wrong password", plainM("alice", "alice-secreT"), ErrAuthFailed},
		{"plain unknown user", plainM("carol", "x"), ErrAuthFailed},
		{"plain other authzid", plain.Auth{Zid: "bob", User: "alice", Pass: "alice-secret"}.AsMechanism(), ErrAuthFailed},
		{"scram token auth", scram.Auth{User: "alice", Pass: "alice-secret", IsToken: true}.AsSha256Mechanism(), ErrAuthFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			principal, err := exchange(t, tc.m, users)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if err == nil && principal == "" {
				t.Fatal("authenticated without a principal")
			}
		})
	}
}

func TestScramRejectsTamperedFinal(t *testing.T) {
	users := testUsers(t)
	for _, tc := range []struct {
		name   string
		mutate func(string) string
		want   error
	}{
		{"other nonce", func(s string) string { return "c=biws,r=xyz,p=" + s[len(s)-88:] }, ErrMalformed},
		{"other binding", func(s string) string { return "c=eSws" + s[6:] }, ErrMalformed},
		{"no proof", func(s string) string { return s[:len(s)-91] }, ErrMalformed},
		{"flipped proof", func(s string) string {
			// Another base64 letter, so the proof decodes and is wrong.
			b := []byte(s)
			if b[len(b)-5] == 'A' {
				b[len(b)-5] = 'B'
			} else {
				b[len(b)-5] = 'A'
			}
			return string(b)
		}, ErrAuthFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()
			srv, _ := NewSession(ScramSHA512, users)
			cs, first, _ := m.Authenticate(context.Background(), "test")
			sf, _, err := srv.Step(first)
			if err != nil {
				t.Fatal(err)
			}
			_, final, err := cs.Challenge(sf)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := srv.Step([]byte(tc.mutate(string(final)))); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

func TestUnknownUserSaltIsStable(t *testing.T) {
	first := func() string {
		s, _ := NewSession(ScramSHA256, &Users{})
		resp, _, err := s.Step([]byte("n,,n=ghost,r=abc"))
		if err != nil {
			t.Fatal(err)
		}
		return string(resp[len("r=abc")+24:])
	}
	if a, b := first(), first(); a != b {
		t.Fatalf("decoy salt changes between attempts: %q vs %q", a, b)
	}
}

func TestParseClientFirst(t *testing.T) {
	for _, tc := range []struct {
		in   string
		user string
		want error
	}{
		{"n,,n=alice,r=abc", "alice", nil},
		{"n,a=alice,n=alice,r=abc", "alice", nil},
		{"n,,n=a=2Cb=3Dc,r=abc", "a,b=c", nil},
		{"n,,n=alice,r=abc,tokenauth=true", "alice", nil},
		{"y,,n=alice,r=abc", "", ErrMalformed},
		{"p=tls-unique,,n=alice,r=abc", "", ErrMalformed},
		{"n,,n=,r=abc", "", ErrMalformed},
		{"n,,n=a=2Xb,r=abc", "", ErrMalformed},
		{"n,,r=abc,n=alice", "", ErrMalformed},
		{"n,,n=alice,r=", "", ErrMalformed},
		{"n,x,n=alice,r=abc", "", ErrMalformed},
		{"n,a=bob,n=alice,r=abc", "", ErrAuthFailed},
		{"n", "", ErrMalformed},
	} {
		cf, err := parseClientFirst([]byte(tc.in))
		if !errors.Is(err, tc.want) || err == nil && cf.user != tc.user {
			t.Errorf("%q: user %q err %v, want %q %v", tc.in, cf.user, err, tc.user, tc.want)
		}
	}
}

func TestParsePlain(t *testing.T) {
	for _, tc := range []struct {
		in, zid, user, pass string
		ok                  bool
	}{
		{"\x00alice\x00pw", "", "alice", "pw", true},
		{"alice\x00alice\x00pw", "alice", "alice", "pw", true},
		{"\x00alice\x00", "", "", "", false},
		{"\x00\x00pw", "", "", "", false},
		{"alice\x00pw", "", "", "", false},
		{"\x00a\x00b\x00c", "", "", "", false},
	} {
		zid, user, pass, err := ParsePlain([]byte(tc.in))
		if (err == nil) != tc.ok || zid != tc.zid || user != tc.user || pass != tc.pass {
			t.Errorf("%q: %q %q %q %v", tc.in, zid, user, pass, err)
		}
	}
}

func TestUsersFileRoundTripAndChecks(t *testing.T) {
	u := testUsers(t)
	data := u.Marshal()
	back, err := ParseUsers(data)
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Marshal()) != string(data) {
		t.Fatalf("round trip changed the file:\n%s\n%s", data, back.Marshal())
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"flipped byte", func() []byte { b := append([]byte(nil), data...); b[40] ^= 1; return b }()},
		{"truncated", data[:len(data)-20]},
		{"other version", []byte("unilog-users 2\ncrc32c 00000000\n")},
		{"empty", nil},
	} {
		if _, err := ParseUsers(tc.data); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", tc.name, err)
		}
	}
}

func TestUserFileRereadsOnChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users")
	if err := SaveUsers(path, &Users{}); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("users file mode %v, want 0600", st.Mode().Perm())
	}
	f, err := OpenUserFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Credential("alice", ScramSHA256); ok {
		t.Fatal("alice exists before she was added")
	}
	if err := SaveUsers(path, testUsers(t)); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Credential("alice", ScramSHA256); !ok {
		t.Fatal("added user not seen")
	}
	var reloadErr error
	reports := 0
	f.OnReloadError = func(err error) { reloadErr = err; reports++ }
	if err := os.WriteFile(path, []byte("garbage that is longer than before, and than the old file too .............................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Credential("alice", ScramSHA256); !ok {
		t.Fatal("a broken users file locked out a known user")
	}
	if !errors.Is(reloadErr, ErrFormat) {
		t.Fatalf("reload error %v, want ErrFormat", reloadErr)
	}
	// An unchanged broken file is not parsed, nor reported, at every login.
	for range 3 {
		f.Credential("alice", ScramSHA256)
	}
	if reports != 1 {
		t.Fatalf("one broken change reported %d times", reports)
	}
}

func TestACL(t *testing.T) {
	a, err := ParseACL([]byte(`unilog-acl 1
# comment
alice produce orders payments-*   # trailing comment
alice consume orders
*     consume public-*
ops   admin   *
app   group   app-?
node-1 cluster *
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		principal string
		op        Operation
		name      string
		want      bool
	}{
		{"alice", Produce, "orders", true},
		{"alice", Produce, "payments-eu", true},
		{"alice", Produce, "payments", false},
		{"alice", Consume, "payments-eu", false},
		{"bob", Produce, "orders", false},
		{"bob", Consume, "public-news", true},
		{"ANONYMOUS", Consume, "public-news", true},
		{"ops", Admin, "anything", true},
		{"alice", Admin, "orders", false},
		{"app", Group, "app-1", true},
		{"app", Group, "app-12", false},
		{"node-1", Cluster, "*", true},
		{"ops", Cluster, "*", false},
	} {
		if got := a.Allow(tc.principal, tc.op, tc.name); got != tc.want {
			t.Errorf("%s %v %s: %v, want %v", tc.principal, tc.op, tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{
		"",
		"alice produce x\n",
		"unilog-acl 2\n",
		"unilog-acl 1\nalice write x\n",
		"unilog-acl 1\nalice produce\n",
		"unilog-acl 1\nalice produce [x\n",
	} {
		if _, err := ParseACL([]byte(bad)); !errors.Is(err, ErrFormat) {
			t.Errorf("%q: %v, want ErrFormat", bad, err)
		}
	}
}

func TestACLFileRereadsOnChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acl")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte("unilog-acl 1\n"+body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("alice produce orders\n")
	f, err := OpenACLFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Allow("alice", Produce, "orders") || f.Allow("alice", Produce, "payments") {
		t.Fatal("rules of the file as opened not applied")
	}
	write("alice produce orders payments\n")
	poll.True(t, "the grant to take effect", func() bool { return f.Allow("alice", Produce, "payments") })

	reloadErr := make(chan error, 1)
	f.OnReloadError = func(err error) {
		select {
		case reloadErr <- err:
		default:
		}
	}
	write("alice produce\n")
	poll.True(t, "the broken file to be seen", func() bool { f.Allow("alice", Produce, "orders"); return len(reloadErr) > 0 })
	if err := <-reloadErr; err == nil {
		t.Fatal("a broken ACL file reported no error")
	}
	if !f.Allow("alice", Produce, "payments") {
		t.Fatal("a broken ACL file dropped the last good rules")
	}

	write("bob produce orders\n")
	poll.True(t, "the revocation to take effect", func() bool { return !f.Allow("alice", Produce, "orders") })
	if !f.Allow("bob", Produce, "orders") {
		t.Fatal("new rule not applied")
	}
}
