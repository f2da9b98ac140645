package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
)

// SASL on the Kafka listener (KIP-43, KIP-152):
//
//   - SaslHandshake v1 names the mechanism; SaslAuthenticate requests then
//     carry each client message and answer with the server's.
//   - SaslHandshake v0 names the mechanism, and the following frames are
//     bare SASL tokens (a 4-byte size and the token, no request header),
//     answered the same way, as older librdkafka and Java clients send them.
//
// A failed login is answered (SASL_AUTHENTICATION_FAILED, or a closed
// connection in the v0 flow) and leaves the connection good for nothing
// but closing: one password guess per TCP and TLS handshake.

func init() {
	register(kmsg.SASLHandshake, 0, 1, (*Broker).handleSaslHandshake, authorizePublic)
	register(kmsg.SASLAuthenticate, 0, 2, (*Broker).handleSaslAuthenticate, authorizePublic)
}

func (b *Broker) handleSaslHandshake(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	sec := b.cfg.Security
	resp.SupportedMechanisms = sec.SASLMechanisms
	switch {
	case sec.Credentials == nil, c.auth.user != "", c.auth.mechanism != "":
		resp.ErrorCode = kerr.IllegalSaslState.Code
	case !slices.Contains(sec.SASLMechanisms, req.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
	default:
		s, err := auth.NewSession(req.Mechanism, sec.Credentials)
		if err != nil {
			return nil, err
		}
		c.auth.mechanism = req.Mechanism
		c.auth.session = s
		c.auth.raw = req.Version == 0
	}
	return resp, nil
}

func (b *Broker) handleSaslAuthenticate(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if c.auth.session == nil || c.auth.user != "" {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate without a SaslHandshake naming a mechanism")
		return resp, nil
	}
	out, err := c.saslStep(req.SASLAuthBytes)
	if err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Authentication failed during authentication due to invalid credentials with SASL mechanism %s", c.auth.mechanism))
		return resp, nil
	}
	resp.SASLAuthBytes = out
	return resp, nil
}

// minFrame is the smallest valid frame: a request header, or one token
// byte in the v0 flow.
func (c *conn) minFrame() int32 {
	if c.auth.raw {
		return 1
	}
	return minRequestHeader
}

// handleRawSASL answers one bare token of the v0 flow; an error closes the
// connection, which is how that flow reports a failed login.
func (c *conn) handleRawSASL(token []byte) ([]byte, error) {
	out, err := c.saslStep(token)
	if err != nil {
		return nil, err
	}
	if c.auth.user != "" {
		c.auth.raw = false
	}
	buf := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(out)), uint32(len(out)))
	return append(buf, out...), nil
}

// saslStep feeds one client message to the exchange and records the
// outcome.
func (c *conn) saslStep(msg []byte) ([]byte, error) {
	out, done, err := c.auth.session.Step(msg)
	mech := c.auth.mechanism
	switch {
	case err != nil:
		c.auth.failed = true
		c.auth.session = nil
		c.b.secMetrics.logins.WithLabelValues(mech, "failed").Inc()
		level := logrus.InfoLevel
		if !errors.Is(err, auth.ErrAuthFailed) {
			level = logrus.WarnLevel
		}
		c.b.log.WithFields(logrus.Fields{"remote": c.remote, "mechanism": mech, "error": err}).Log(level, "SASL login refused")
		return nil, err
	case done:
		c.auth.user = c.auth.session.Principal()
		c.auth.session = nil
		c.b.secMetrics.logins.WithLabelValues(mech, "ok").Inc()
		c.b.log.WithFields(logrus.Fields{"remote": c.remote, "mechanism": mech, "user": c.auth.user}).Debug("SASL login")
	}
	return out, nil
}
