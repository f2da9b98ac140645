package broker

import (
	"crypto/tls"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
	"github.com/unilog/unilog/internal/tlsconf"
)

// Security configures who may connect and what they may do. The zero
// value is a plaintext, unauthenticated listener allowing everything.
type Security struct {
	// TLS, when set, serves the Kafka listener over TLS; with ClientCAs
	// and RequireAndVerifyClientCert it is mutual TLS (tlsconf builds it).
	TLS *tls.Config
	// AdminTLS, when set, serves the admin port over TLS. With ClientCAs
	// every endpoint but /healthz needs a client certificate verified
	// against them (admin.go); ClientAuth VerifyClientCertIfGiven lets
	// probes without one reach /healthz.
	AdminTLS *tls.Config
	// Credentials, when set, turns SASL on: every connection must log in
	// with one of SASLMechanisms before any request but ApiVersions,
	// SaslHandshake and SaslAuthenticate.
	Credentials auth.CredentialLookup
	// SASLMechanisms is what SaslHandshake offers; default auth.Mechanisms.
	SASLMechanisms []string
	// ACL, when set, authorizes every topic and group access of a
	// principal; anything it does not allow is denied.
	ACL Authorizer
	// InterBroker is how this node reaches the other nodes' listeners
	// (interbroker.go).
	InterBroker InterBroker

	// interBroker: the inter-broker user is among Credentials.
	interBroker bool
}

// Authorizer decides one access; *auth.ACL is the file-backed one.
type Authorizer interface {
	Allow(principal string, op auth.Operation, name string) bool
}

// anonymous is the principal of a connection that neither logged in nor
// presented a verified client certificate (Kafka's name for it).
const anonymous = "ANONYMOUS"

// withDefaults returns a copy with the defaults filled in, so the
// caller's value is never changed under it.
func (s *Security) withDefaults() *Security {
	out := &Security{}
	if s != nil {
		*out = *s
	}
	if out.Credentials != nil && len(out.SASLMechanisms) == 0 {
		out.SASLMechanisms = auth.Mechanisms
	}
	return out
}

// validateLimits refuses settings that could never serve a request.
func (c Config) validateLimits() error {
	if c.MaxInflightBytes < int64(c.MaxRequestBytes) {
		return fmt.Errorf("broker: MaxInflightBytes %d is below MaxRequestBytes %d: the largest request could never be read", c.MaxInflightBytes, c.MaxRequestBytes)
	}
	for _, m := range c.Security.SASLMechanisms {
		if !slices.Contains(auth.Mechanisms, m) {
			return fmt.Errorf("broker: SASL mechanism %q: want one of %v", m, auth.Mechanisms)
		}
	}
	return nil
}

// guards is the broker's state for security and limits.
type guards struct {
	secMetrics securityMetrics
	inflight   *byteBudget
	frames     *framePool  // request frames kept for reuse (frames.go)
	readOnly   atomic.Bool // the disk is full (readonly.go)
}

// connAuth is one connection's authentication state.
type connAuth struct {
	mechanism string       // chosen by SaslHandshake
	session   auth.Session // the exchange under way
	raw       bool         // v0 handshake: the next frames are bare SASL tokens
	user      string       // set once the exchange succeeded
	failed    bool         // one failed login per connection
}

// principal is who the connection acts as: its SASL user, else the common
// name of its verified client certificate, else ANONYMOUS.
func (c *conn) principal() string {
	if c.auth.user != "" {
		return c.auth.user
	}
	if tc, ok := c.nc.(*tls.Conn); ok {
		if n := tlsconf.PeerName(tc.ConnectionState()); n != "" {
			return n
		}
	}
	return anonymous
}

// admitted reports whether the connection may send a request with this
// API key: with SASL on, only the login APIs come before a login.
func (c *conn) admitted(key int16) bool {
	if c.b.cfg.Security.Credentials == nil || c.auth.user != "" {
		return true
	}
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return !c.auth.failed
	}
	return false
}

// securityMetrics are the counters of logins and denials.
type securityMetrics struct {
	logins  *prometheus.CounterVec
	denials *prometheus.CounterVec
}

func (b *Broker) initGuards() {
	b.inflight = newByteBudget(b.cfg.MaxInflightBytes)
	b.frames = newFramePool(min(maxKeptFrames, b.cfg.MaxInflightBytes/8))
	b.secMetrics = securityMetrics{
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "unilog", Name: "sasl_authentications_total", Help: "SASL logins, by mechanism and result (ok, failed).",
		}, []string{"mechanism", "result"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "unilog", Name: "authorization_denials_total", Help: "Topic and group accesses refused by the ACL, by operation.",
		}, []string{"operation"}),
	}
	b.metrics.reg.MustRegister(b.secMetrics.logins, b.secMetrics.denials, b.readOnlyGauge(),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "unilog", Name: "inflight_request_bytes", Help: "Request bytes reserved by connections (limit: max in-flight bytes).",
		}, func() float64 { return float64(b.cfg.MaxInflightBytes - b.inflight.available()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "unilog", Name: "requests_waiting_for_memory", Help: "Requests whose bytes wait for the in-flight budget.",
		}, func() float64 { return float64(b.inflight.waiting()) }),
	)
}
