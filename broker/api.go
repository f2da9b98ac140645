package broker

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handler answers one decoded request; a nil response means no answer is
// sent (Produce with acks=0).
type handler func(b *Broker, ctx context.Context, c *conn, req kmsg.Request) (kmsg.Response, error)

type apiSpec struct {
	key        int16
	minVersion int16
	maxVersion int16
	handle     handler
	authorize  authorizer
}

// apis is the one table of what the broker implements, in key order:
// ApiVersions advertises exactly these ranges and dispatch accepts exactly
// these. Each API is registered by the file that handles it, with its
// versions and its authorization rule; its notes on the versions are
// there. (Filled by init: handleApiVersions reads the table it is part of.)
var apis []apiSpec

// register adds an API to the table. An API without a handler or an
// authorization rule, or registered twice, is a programming error caught
// at start: no API is ever open to every principal by omission.
func register(key kmsg.Key, minVersion, maxVersion int16, h handler, az authorizer) {
	if h == nil || az == nil {
		panic(fmt.Sprintf("broker: %s registered without a handler or an authorization rule", key.Name()))
	}
	if _, dup := lookupAPI(int16(key)); dup {
		panic(fmt.Sprintf("broker: %s registered twice", key.Name()))
	}
	apis = append(apis, apiSpec{int16(key), minVersion, maxVersion, h, az})
	slices.SortFunc(apis, func(a, b apiSpec) int { return cmp.Compare(a.key, b.key) })
}

func lookupAPI(key int16) (apiSpec, bool) {
	i, ok := slices.BinarySearchFunc(apis, key, func(a apiSpec, k int16) int { return cmp.Compare(a.key, k) })
	if !ok {
		return apiSpec{}, false
	}
	return apis[i], true
}

// minRequestHeader is api key, api version and correlation id.
const minRequestHeader = 8

// requestError closes the connection; api and version go to the log.
type requestError struct {
	api     string
	version int16
	err     error
}

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

func reqErr(key, version int16, format string, args ...any) error {
	name := kmsg.NameForKey(key)
	if name == "" {
		name = fmt.Sprintf("key %d", key)
	}
	return &requestError{api: name, version: version, err: fmt.Errorf(format, args...)}
}

// handle decodes one request frame (header, then kmsg body), runs its
// handler and returns the encoded response frame, or nil for no response.
// An error means the connection must be closed.
func (c *conn) handle(frame []byte) ([]byte, error) {
	// The frame is dead once handled: its bytes go back to the budget.
	c.held = int64(len(frame))
	defer c.releaseFrame(frame)
	if c.auth.raw {
		return c.handleRawSASL(frame)
	}
	r := kbin.Reader{Src: frame}
	key := r.Int16()
	c.stages.end()
	if key == int16(kmsg.Produce) {
		c.stages.begin(c.b.metrics.produceStages, c.readAt)
		c.stages.mark(stageQueue)
	}
	version := r.Int16()
	corr := r.Int32()
	if id := r.NullableString(); id != nil {
		c.clientID = *id
	}
	if !r.Ok() {
		return nil, reqErr(key, version, "truncated request header")
	}
	if !c.admitted(key) {
		return nil, reqErr(key, version, "request before SASL authentication")
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, reqErr(key, version, "unknown api key %d", key)
	}
	spec, known := lookupAPI(key)
	if key == int16(kmsg.ApiVersions) && version > spec.maxVersion {
		// KIP-511: a newer ApiVersions than ours is answered at v0 with
		// UNSUPPORTED_VERSION and our table, without parsing the body.
		resp := apiVersionsResponse(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return c.encode(corr, resp), nil
	}
	if version < 0 || version > req.MaxVersion() {
		return nil, reqErr(key, version, "version %d is beyond any known (max %d)", version, req.MaxVersion())
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		kmsg.SkipTags(&r)
		if !r.Ok() {
			return nil, reqErr(key, version, "truncated request header tags")
		}
	}
	if err := req.ReadFrom(r.Src); err != nil {
		return nil, reqErr(key, version, "decode body: %v", err)
	}
	c.stages.mark(stageDecode)
	if !known || version < spec.minVersion || version > spec.maxVersion {
		resp, err := unsupportedResponse(req)
		if err != nil {
			return nil, err
		}
		return c.encode(corr, resp), nil
	}
	// The duration ends with the response encoded, which at tens of
	// thousands of partitions is part of the broker's work, and leaves out
	// the socket write, whose time is the client's reading.
	start := time.Now()
	if key != int16(kmsg.Produce) {
		// A deferred produce is answered before anything else is served.
		c.finishDeferred()
	}
	c.corr, c.reqStart, c.justDeferred = corr, start, false
	c.limitRequest(req)
	resp, err := c.serveAuthorized(spec, req)
	var out []byte
	if fr, ok := resp.(*kmsg.FetchResponse); ok && err == nil && len(c.fetch.views) > 0 {
		out, err = c.encodeFetch(corr, fr)
	} else if err == nil && resp != nil {
		out = c.encode(corr, resp)
		c.stages.mark(stageEncode)
	}
	if !c.justDeferred {
		c.b.metrics.observe(key, time.Since(start))
	}
	if err != nil {
		return nil, reqErr(key, version, "%v", err)
	}
	return out, nil
}

// encode frames a response: size, correlation id, the response header's
// tagged fields when the response is flexible (never for ApiVersions, whose
// header stays v0 so any client can read it), then the kmsg body.
func (c *conn) encode(corr int32, resp kmsg.Response) []byte {
	c.finishDeferred() // its answer leaves first
	c.out = responseBuffers.Get()
	buf := append(c.out.B[:0], 0, 0, 0, 0, 0, 0, 0, 0)
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf[0:], uint32(len(buf)-4))
	binary.BigEndian.PutUint32(buf[4:], uint32(corr))
	c.out.B = buf
	return buf
}

// unsupportedResponse answers a request for an API or version the broker
// does not implement with UNSUPPORTED_VERSION in the response's top-level
// error code, at the request's version so the client can parse it. A
// response without a top-level error code cannot carry the error, and the
// connection is closed, as Kafka does.
func unsupportedResponse(req kmsg.Request) (kmsg.Response, error) {
	return errorResponse(req, kerr.UnsupportedVersion)
}

// errorResponse answers req with code in the response's top-level error
// code (per coordinator key for FindCoordinator v4+); an error when the
// response has nowhere to carry it.
func errorResponse(req kmsg.Request, code *kerr.Error) (kmsg.Response, error) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if fc, ok := req.(*kmsg.FindCoordinatorRequest); ok && fc.Version >= 4 {
		out := resp.(*kmsg.FindCoordinatorResponse)
		for _, k := range fc.CoordinatorKeys {
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key = k
			rc.NodeID = -1
			rc.Port = -1
			rc.ErrorCode = code.Code
			out.Coordinators = append(out.Coordinators, rc)
		}
		return out, nil
	}
	f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 {
		return nil, reqErr(req.Key(), req.GetVersion(), "its response has no error code to carry %s", code.Message)
	}
	// Whether this version carries the field shows in the encoding: the
	// bytes differ with and without the error only if it is encoded.
	without := resp.AppendTo(nil)
	f.SetInt(int64(code.Code))
	if string(resp.AppendTo(nil)) == string(without) {
		return nil, reqErr(req.Key(), req.GetVersion(), "response version %d has no error code to carry %s", req.GetVersion(), code.Message)
	}
	return resp, nil
}

// apiVersionsResponse lists the table at the given response version.
func apiVersionsResponse(version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	for _, a := range apis {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey = a.key
		k.MinVersion = a.minVersion
		k.MaxVersion = a.maxVersion
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

// ApiVersions is answered before authentication and at any version (a
// newer one than ours gets v0 and UNSUPPORTED_VERSION: see handle).
func init() {
	register(kmsg.ApiVersions, 0, 4, (*Broker).handleApiVersions, authorizePublic)
}

func (b *Broker) handleApiVersions(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ApiVersionsRequest)
	return apiVersionsResponse(req.Version), nil
}
