package broker

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/unilog/unilog/auth"
	"github.com/unilog/unilog/internal/tlsconf"
	"github.com/unilog/unilog/internal/tlsconf/tlstest"
)

// testPasswords are the users of secured test brokers.
var testPasswords = map[string]string{"alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw"}

func testCredentials(t testing.TB) *auth.Users {
	t.Helper()
	u := &auth.Users{}
	for user, pw := range testPasswords {
		for _, m := range []string{auth.ScramSHA256, auth.ScramSHA512} {
			c, err := auth.NewCredential(m, pw, auth.MinIterations)
			if err != nil {
				t.Fatal(err)
			}
			if err := u.Set(user, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	return u
}

// testPKI is a CA with a broker certificate for 127.0.0.1.
type testPKI struct {
	ca                    *tlstest.CA
	serverCert, serverKey string
}

func newTestPKI(t testing.TB) testPKI {
	ca := tlstest.NewCA(t, "unilog-test")
	cert, key := ca.Issue("broker")
	return testPKI{ca: ca, serverCert: cert, serverKey: key}
}

func (p testPKI) server(t testing.TB, mutual bool) *tls.Config {
	t.Helper()
	f := tlsconf.Files{Cert: p.serverCert, Key: p.serverKey}
	if mutual {
		f.ClientCA = p.ca.File
	}
	cfg, err := f.Server()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// client is a TLS client trusting the test CA, presenting a certificate
// for cn unless cn is empty.
func (p testPKI) client(t testing.TB, cn string) *tls.Config {
	t.Helper()
	f := tlsconf.Files{CA: p.ca.File}
	if cn != "" {
		f.Cert, f.Key = p.ca.Issue(cn)
	}
	cfg, err := f.Client(true)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func scramMech(m, user, pw string) sasl.Mechanism {
	a := scram.Auth{User: user, Pass: pw}
	if m == auth.ScramSHA512 {
		return a.AsSha512Mechanism()
	}
	return a.AsSha256Mechanism()
}

// quickClient gives up at once, so refused logins fail the test fast.
func quickClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, addr, append([]kgo.Opt{kgo.RequestRetries(0), kgo.RetryTimeout(5 * time.Second)}, opts...)...)
}

func roundTripRecords(t *testing.T, cl *kgo.Client, addr string, topic string, opts ...kgo.Opt) {
	t.Helper()
	createTopic(t, cl, topic, 1)
	produceSync(t, cl, topic, 0, "one", "two", "three")
	got := consumeN(t, addr, topic, 3, opts...)
	for i, want := range []string{"one", "two", "three"} {
		if string(got[i].Value) != want {
			t.Fatalf("record %d: %q, want %q", i, got[i].Value, want)
		}
	}
}

func TestTLSRoundTrip(t *testing.T) {
	pki := newTestPKI(t)
	for _, mutual := range []bool{false, true} {
		name := map[bool]string{false: "tls", true: "mutual-tls"}[mutual]
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			cfg.Security.TLS = pki.server(t, mutual)
			b := startBroker(t, cfg)
			opt := kgo.DialTLSConfig(pki.client(t, "alice"))
			roundTripRecords(t, newClient(t, b.Addr(), opt), b.Addr(), "secure", opt)

			plainCl := quickClient(t, b.Addr())
			if err := plainCl.Ping(testCtx(t)); err == nil {
				t.Fatal("plaintext client talked to the TLS listener")
			}
			if mutual {
				noCert := quickClient(t, b.Addr(), kgo.DialTLSConfig(pki.client(t, "")))
				if err := noCert.Ping(testCtx(t)); err == nil {
					t.Fatal("client without a certificate was let in")
				}
				other := tlstest.NewCA(t, "other")
				c, k := other.Issue("mallory")
				f := tlsconf.Files{CA: pki.ca.File, Cert: c, Key: k}
				ccfg, _ := f.Client(true)
				stranger := quickClient(t, b.Addr(), kgo.DialTLSConfig(ccfg))
				if err := stranger.Ping(testCtx(t)); err == nil {
					t.Fatal("client with a certificate from another CA was let in")
				}
			}
		})
	}
}

func TestAdminOverTLS(t *testing.T) {
	pki := newTestPKI(t)
	cfg := testConfig(t, t.TempDir())
	cfg.Security.AdminTLS = pki.server(t, false)
	b := startBroker(t, cfg)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: pki.client(t, "")}}
	resp, err := hc.Get("https://" + b.AdminAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz over TLS: %s", resp.Status)
	}
	if resp, err := http.Get("http://" + b.AdminAddr() + "/healthz"); err == nil && resp.StatusCode == http.StatusOK {
		t.Fatal("admin answered plain HTTP")
	}
}

func saslBroker(t *testing.T, mutate func(*Config)) *Broker {
	t.Helper()
	cfg := testConfig(t, t.TempDir())
	cfg.Security.Credentials = testCredentials(t)
	if mutate != nil {
		mutate(&cfg)
	}
	return startBroker(t, cfg)
}

func TestSASLLogins(t *testing.T) {
	pki := newTestPKI(t)
	b := saslBroker(t, nil)
	bTLS := saslBroker(t, func(c *Config) { c.Security.TLS = pki.server(t, false) })
	for _, tc := range []struct {
		name string
		mech sasl.Mechanism
		ok   bool
	}{
		{"scram-sha-256", scramMech(auth.ScramSHA256, "alice", "alice-pw"), true},
		{"scram-sha-512", scramMech(auth.ScramSHA512, "bob", "bob-pw"), true},
		{"plain", plain.Auth{User: "carol", Pass: "carol-pw"}.AsMechanism(), true},
		{"scram wrong password", scramMech(auth.ScramSHA256, "alice", "bob-pw"), false},
		{"scram unknown user", scramMech(auth.ScramSHA512, "mallory", "x"), false},
		{"plain wrong password", plain.Auth{User: "alice", Pass: "alice-PW"}.AsMechanism(), false},
		{"plain unknown user", plain.Auth{User: "mallory", Pass: "alice-pw"}.AsMechanism(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, srv := range []struct {
				b    *Broker
				opts []kgo.Opt
			}{{b, nil}, {bTLS, []kgo.Opt{kgo.DialTLSConfig(pki.client(t, ""))}}} {
				opts := append([]kgo.Opt{kgo.SASL(tc.mech)}, srv.opts...)
				cl := quickClient(t, srv.b.Addr(), opts...)
				err := cl.Ping(testCtx(t))
				if tc.ok != (err == nil) {
					t.Fatalf("ping: %v, want ok=%v", err, tc.ok)
				}
				if !tc.ok && !errors.Is(err, kerr.SaslAuthenticationFailed) {
					t.Fatalf("ping: %v, want SASL_AUTHENTICATION_FAILED", err)
				}
			}
		})
	}
	t.Run("records", func(t *testing.T) {
		opt := kgo.SASL(scramMech(auth.ScramSHA256, "alice", "alice-pw"))
		roundTripRecords(t, newClient(t, b.Addr(), opt), b.Addr(), "sasl", opt)
	})
}

func TestSASLRequiredBeforeRequests(t *testing.T) {
	b := saslBroker(t, nil)
	c := dialRaw(t, b.Addr())
	if _, ok := c.roundTrip(kmsg.NewPtrApiVersionsRequest()); !ok {
		t.Fatal("ApiVersions refused before login")
	}
	if _, ok := c.roundTrip(kmsg.NewPtrMetadataRequest()); ok {
		t.Fatal("Metadata answered before login")
	}

	// A failed login leaves the connection good for nothing else.
	c = dialRaw(t, b.Addr())
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = auth.Plain
	if resp, ok := c.roundTrip(hs); !ok || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		t.Fatalf("handshake: %+v %v", resp, ok)
	}
	sa := kmsg.NewPtrSASLAuthenticateRequest()
	sa.Version = 2
	sa.SASLAuthBytes = []byte("\x00alice\x00wrong")
	resp, ok := c.roundTrip(sa)
	if !ok || resp.(*kmsg.SASLAuthenticateResponse).ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("wrong password: %+v %v", resp, ok)
	}
	sa.SASLAuthBytes = []byte("\x00alice\x00alice-pw")
	if _, ok := c.roundTrip(sa); ok {
		t.Fatal("second password guess answered on the same connection")
	}

	hs = kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = "GSSAPI"
	c = dialRaw(t, b.Addr())
	resp, ok = c.roundTrip(hs)
	if hr := resp.(*kmsg.SASLHandshakeResponse); !ok || hr.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(hr.SupportedMechanisms) != 3 {
		t.Fatalf("GSSAPI handshake: %+v %v", resp, ok)
	}
}

// rawToken sends one bare SASL token (the v0 flow) and returns the
// broker's token, or false when it closed the connection.
func (c *rawConn) rawToken(tok []byte) ([]byte, bool) {
	c.t.Helper()
	if err := c.write(binary.BigEndian.AppendUint32(nil, uint32(len(tok)))); err != nil {
		return nil, false
	}
	if err := c.write(tok); err != nil {
		return nil, false
	}
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, false
	}
	out := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.nc, out); err != nil {
		c.t.Fatalf("read token: %v", err)
	}
	return out, true
}

// TestSASLHandshakeV0 logs in the way pre-KIP-152 clients do: handshake
// v0, then bare tokens, driven by franz-go's own client mechanisms.
func TestSASLHandshakeV0(t *testing.T) {
	b := saslBroker(t, nil)
	for _, tc := range []struct {
		name string
		mech sasl.Mechanism
		ok   bool
	}{
		{"plain", plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism(), true},
		{"scram-sha-512", scramMech(auth.ScramSHA512, "bob", "bob-pw"), true},
		{"plain wrong password", plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(), false},
		{"scram wrong password", scramMech(auth.ScramSHA256, "bob", "nope"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, b.Addr())
			hs := kmsg.NewPtrSASLHandshakeRequest()
			hs.Mechanism = tc.mech.Name()
			if resp, ok := c.roundTrip(hs); !ok || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
				t.Fatalf("handshake v0: %+v %v", resp, ok)
			}
			session, msg, err := tc.mech.Authenticate(context.Background(), b.Addr())
			if err != nil {
				t.Fatal(err)
			}
			for done := false; !done; {
				out, ok := c.rawToken(msg)
				if !ok {
					if tc.ok {
						t.Fatal("broker closed the connection during a valid login")
					}
					return
				}
				if done, msg, err = session.Challenge(out); err != nil {
					t.Fatalf("client refused the broker's token: %v", err)
				}
			}
			if !tc.ok {
				t.Fatal("login with a wrong password succeeded")
			}
			if _, ok := c.roundTrip(kmsg.NewPtrMetadataRequest()); !ok {
				t.Fatal("Metadata refused after a v0 login")
			}
		})
	}
}

const testACL = `unilog-acl 1
alice produce orders
alice consume orders
alice admin   *
bob   consume orders
*     consume public-*
`

// saslACLBroker is a saslBroker enforcing the ACL file text.
func saslACLBroker(t *testing.T, text string, mutate func(*Config)) *Broker {
	t.Helper()
	acl, err := auth.ParseACL([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return saslBroker(t, func(c *Config) {
		c.Security.ACL = acl
		if mutate != nil {
			mutate(c)
		}
	})
}

func aclBroker(t *testing.T) *Broker {
	t.Helper()
	b := saslACLBroker(t, testACL, nil)
	admin := newClient(t, b.Addr(), kgo.SASL(scramMech(auth.ScramSHA256, "alice", "alice-pw")))
	for _, topic := range []string{"orders", "secret", "public-news"} {
		createTopic(t, admin, topic, 1)
	}
	produceSync(t, admin, "orders", 0, "o1")
	return b
}

func userClient(t *testing.T, b *Broker, user string) *kgo.Client {
	return newClient(t, b.Addr(), kgo.SASL(scramMech(auth.ScramSHA512, user, testPasswords[user])))
}

func TestACLProduceAndConsume(t *testing.T) {
	b := aclBroker(t)
	produce := func(user, topic string) int16 {
		return rawProduce(t, userClient(t, b, user), topic, 0, rawBatch(-1, -1, -1, "v")).ErrorCode
	}
	fetch := func(user, topic string) int16 {
		return rawFetch(t, userClient(t, b, user), topic, 0, 0, 0).ErrorCode
	}
	denied := kerr.TopicAuthorizationFailed.Code
	for _, tc := range []struct {
		user, topic   string
		produce, read int16
	}{
		{"alice", "orders", 0, 0},
		{"bob", "orders", denied, 0},
		{"carol", "orders", denied, denied},
		{"alice", "secret", denied, denied},
		{"carol", "public-news", denied, 0},
		{"bob", "no-such-topic", denied, denied},
	} {
		if got := produce(tc.user, tc.topic); got != tc.produce {
			t.Errorf("%s produce %s: %s, want %s", tc.user, tc.topic, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.produce))
		}
		if got := fetch(tc.user, tc.topic); got != tc.read {
			t.Errorf("%s fetch %s: %s, want %s", tc.user, tc.topic, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.read))
		}
	}

	// franz-go surfaces the denial to the application.
	cl := userClient(t, b, "bob")
	err := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob producing with franz-go: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}

func TestACLMetadata(t *testing.T) {
	b := aclBroker(t)
	metadata := func(user string, topics ...string) map[string]int16 {
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		for _, topic := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
		}
		if topics == nil {
			req.Topics = nil
		}
		resp, err := req.RequestWith(testCtx(t), userClient(t, b, user))
		if err != nil {
			t.Fatal(err)
		}
		out := make(map[string]int16)
		for _, t := range resp.Topics {
			out[*t.Topic] = t.ErrorCode
		}
		return out
	}
	same := func(got, want map[string]int16) bool {
		if len(got) != len(want) {
			return false
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				return false
			}
		}
		return true
	}
	denied := kerr.TopicAuthorizationFailed.Code
	for _, tc := range []struct {
		user   string
		topics []string
		want   map[string]int16
	}{
		{"alice", nil, map[string]int16{"orders": 0, "secret": 0, "public-news": 0, offsetsTopic: 0, txnStateTopic: 0}},
		{"bob", nil, map[string]int16{"orders": 0, "public-news": 0}},
		{"bob", []string{"secret", "orders"}, map[string]int16{"secret": denied, "orders": 0}},
		{"carol", []string{"secret"}, map[string]int16{"secret": denied}},
		{"carol", []string{"invented"}, map[string]int16{"invented": denied}},
	} {
		if got := metadata(tc.user, tc.topics...); !same(got, tc.want) {
			t.Errorf("%s metadata %v: %v, want %v", tc.user, tc.topics, got, tc.want)
		}
	}
}

func TestACLAdmin(t *testing.T) {
	b := aclBroker(t)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = "bobs"
	rt.NumPartitions, rt.ReplicationFactor = 1, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), userClient(t, b, "bob"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob created a topic: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("orders")
	del.Topics = append(del.Topics, dt)
	dresp, err := del.RequestWith(testCtx(t), userClient(t, b, "bob"))
	if err != nil {
		t.Fatal(err)
	}
	if dresp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob deleted a topic: %v", kerr.ErrorForCode(dresp.Topics[0].ErrorCode))
	}
}

func TestAuthorizeGroup(t *testing.T) {
	acl, err := auth.ParseACL([]byte("unilog-acl 1\nbob group app-*\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, t.TempDir())
	cfg.Security.ACL = acl
	b := startBroker(t, cfg)
	for _, tc := range []struct {
		principal, group string
		want             bool
	}{{"bob", "app-1", true}, {"bob", "other", false}, {"alice", "app-1", false}} {
		if got := b.authorizeGroup(tc.principal, tc.group); got != tc.want {
			t.Errorf("%s %s: %v", tc.principal, tc.group, got)
		}
	}
	open := startBroker(t, testConfig(t, t.TempDir()))
	if !open.authorizeGroup("anyone", "any") {
		t.Fatal("without an ACL a group was denied")
	}
}

// TestEveryAPIHasAnAuthorizationRule: an API cannot be registered without
// a rule for ACLs (it would be open to every principal), nor twice; and
// every API in the table has its rule.
func TestEveryAPIHasAnAuthorizationRule(t *testing.T) {
	for _, a := range apis {
		if a.authorize == nil || a.handle == nil {
			t.Errorf("%s: handler %v, authorizer %v", kmsg.NameForKey(a.key), a.handle != nil, a.authorize != nil)
		}
	}
	saved := slices.Clone(apis)
	defer func() { apis = saved }()
	for _, tc := range []struct {
		name string
		key  kmsg.Key
		az   authorizer
	}{
		{"no authorization rule", kmsg.DescribeACLs, nil},
		{"registered twice", kmsg.Produce, authorizePublic},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: register did not refuse %s", tc.name, tc.key.Name())
				}
			}()
			register(tc.key, 0, 0, (*Broker).handleApiVersions, tc.az)
		}()
	}
}

// TestACLAutoCreate: Metadata auto-creates a missing topic only for a
// principal that may produce to or administer it.
func TestACLAutoCreate(t *testing.T) {
	b := saslACLBroker(t, testACL, func(c *Config) { c.AutoCreateTopics = true })
	for _, tc := range []struct {
		user, topic string
		want        int16
	}{
		{"carol", "public-new", kerr.UnknownTopicOrPartition.Code},
		{"alice", "alice-new", 0},
	} {
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(tc.topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t), userClient(t, b, tc.user))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Topics[0].ErrorCode; got != tc.want {
			t.Errorf("%s metadata %s: %v, want %v", tc.user, tc.topic, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
		if _, exists := b.meta.Topic(tc.topic); exists != (tc.want == 0) {
			t.Errorf("%s metadata %s: topic exists=%v", tc.user, tc.topic, exists)
		}
	}
}
