package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
)

// Authorization is applied around the handlers, not inside them: a request
// is split into what the principal may touch, which the handler serves as
// usual, and what it may not, which the API's authorizer answers with
// TOPIC_AUTHORIZATION_FAILED (GROUP_AUTHORIZATION_FAILED for groups). So
// the handlers stay free of ACL code and a denied topic is never
// auto-created or even looked up. Each API's authorizer is registered with
// its handler, in the file that handles it (register refuses an API
// without one), and an API not registered is refused before any of this:
// a new API is never open by accident.

// authorizeTopic reports whether principal may do op on topic; without an
// ACL everything is allowed.
func (b *Broker) authorizeTopic(principal string, op auth.Operation, topic string) bool {
	acl := b.cfg.Security.ACL
	if acl == nil || acl.Allow(principal, op, topic) {
		return true
	}
	b.secMetrics.denials.WithLabelValues(op.String()).Inc()
	return false
}

// authorizeGroup reports whether principal may use the consumer group
// (every group API; authz_group.go answers GROUP_AUTHORIZATION_FAILED
// when it is false).
func (b *Broker) authorizeGroup(principal, group string) bool {
	return b.authorizeTopic(principal, auth.Group, group)
}

// describable: any topic permission lets the principal see the topic.
func (b *Broker) describable(principal, topic string) bool {
	acl := b.cfg.Security.ACL
	return acl == nil || acl.Allow(principal, auth.Produce, topic) ||
		acl.Allow(principal, auth.Consume, topic) || acl.Allow(principal, auth.Admin, topic)
}

// clusterAdmin: the ACL model names topics and groups, not the cluster, so
// the cluster-wide admin APIs (Kafka's Describe and Alter on the Cluster
// resource) ask for admin on every topic: a rule whose pattern matches
// "*", a name no topic can have.
func (b *Broker) clusterAdmin(principal string) bool {
	return b.authorizeTopic(principal, auth.Admin, "*")
}

// errAcksZeroDenied closes the connection: the only way to tell an acks=0
// producer that a write failed.
var errAcksZeroDenied = errors.New("acks=0 produce to a topic the principal may not write")

// splitByName partitions items into those whose name allow accepts and
// the rest.
func splitByName[T any](items []T, name func(T) string, allow func(string) bool) (kept, denied []T) {
	for _, it := range items {
		if allow(name(it)) {
			kept = append(kept, it)
		} else {
			denied = append(denied, it)
		}
	}
	return kept, denied
}

// authz is one request's authorization state under an ACL: the broker,
// the connection, its principal, and run, which serves what is left of the
// request with the API's handler.
type authz struct {
	b   *Broker
	c   *conn
	p   string
	run func() (kmsg.Response, error)
}

// authorizer serves a request under an ACL: it runs the handler (z.run) on
// the part the principal may access and answers the rest as denied. Every
// API registers one (register refuses an API without), next to its handler.
type authorizer func(z authz, req kmsg.Request) (kmsg.Response, error)

// authorizePublic is the rule of the APIs any connection may call once
// admitted: ApiVersions, the SASL exchange, InitProducerID.
func authorizePublic(z authz, _ kmsg.Request) (kmsg.Response, error) { return z.run() }

// allow is a topic filter for op.
func (z authz) allow(op auth.Operation) func(string) bool {
	return func(t string) bool { return z.b.authorizeTopic(z.p, op, t) }
}

// authorizeEach serves the items of *items (a request's topics or
// resources) that keep accepts and answers each other one with deny, once
// the handler has answered the rest.
func authorizeEach[T any, R kmsg.Response](z authz, items *[]T, keep func(T) bool, deny func(R, T)) (kmsg.Response, error) {
	var kept, out []T
	for _, it := range *items {
		if keep(it) {
			kept = append(kept, it)
		} else {
			out = append(out, it)
		}
	}
	*items = kept
	resp, err := z.run()
	if len(out) == 0 || err != nil || resp == nil {
		return resp, err
	}
	for _, it := range out {
		deny(resp.(R), it)
	}
	return resp, nil
}

// topicNamed adapts a topic filter to items named by name.
func topicNamed[T any](name func(T) string, allow func(string) bool) func(T) bool {
	return func(it T) bool { return allow(name(it)) }
}

// serveAuthorized runs api's handler on the part of req the connection's
// principal may access and answers the rest as denied.
func (c *conn) serveAuthorized(api apiSpec, req kmsg.Request) (kmsg.Response, error) {
	b := c.b
	if b.cfg.Security.ACL == nil {
		return api.handle(b, c.ctx, c, req)
	}
	return api.authorize(authz{b: b, c: c, p: c.principal(), run: func() (kmsg.Response, error) { return api.handle(b, c.ctx, c, req) }}, req)
}
