package stateless

import (
	"context"
	"encoding/json"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// request routes a request by era and runs the protocol checks in the
// order of the architecture: _meta shape, headers, version, method.
func (x *exchange) request(ctx context.Context) Answer {
	d := x.d
	hv, hvPresent, hvOK := headerValue(x.r.Header, headerProtocolVersion)
	meta := d.meta()
	if d.metaErr != nil {
		return refused(mcperr.Wrap(mcperr.KindMalformedMeta, d.metaErr))
	}
	x.call.Principal, x.call.Address = x.r.Principal, x.r.Address
	if x.principal != "" {
		x.call.Principal = x.principal
	}
	if x.call.Principal == "" {
		x.call.Principal = Anonymous
	}

	if meta != nil && meta.ProtocolVersion != nil {
		return x.modern(ctx, hv, hvPresent && hvOK)
	}
	// No protocol version in _meta: a legacy client, or a malformed modern
	// request. The header tells them apart.
	switch {
	case d.method == "initialize":
		x.legacy = true
		if err := x.headersAgree(false); err != nil {
			return refused(mcperr.Wrap(mcperr.KindHeaderMismatch, err))
		}
		return d.row.serve(x, ctx)
	case hvPresent && hvOK && isModern(hv):
		return refused(mcperr.New(mcperr.KindMalformedMeta))
	case !hvPresent:
		x.version = "2025-03-26"
	case hvOK && isLegacy(hv):
		x.version = hv
	default:
		x.legacy = true
		return refused(mcperr.NewUnsupportedVersion(hv, supportedVersions))
	}
	x.legacy = true
	x.call.legacy = true
	x.call.logLevel = legacyLogLevel(x.s)
	x.call.ProtocolVersion = x.version
	x.o.Version = x.version
	// A legacy client need not send the MCP headers; when it does, they
	// must agree with the body, as a gateway may route or authorize on
	// them.
	if err := x.headersAgree(false); err != nil {
		return refused(mcperr.Wrap(mcperr.KindHeaderMismatch, err))
	}
	if meta != nil && meta.ProgressToken != nil {
		x.call.progressToken = progressToken(json.RawMessage(meta.ProgressToken))
	}
	return x.dispatch(ctx)
}

// modern checks a 2026-07-28 request's _meta and headers, negotiates its
// version, reads what the client sent about itself, and dispatches.
func (x *exchange) modern(ctx context.Context, hv string, hvOK bool) Answer {
	meta := x.d.meta()
	pv, ok := versionString(meta.ProtocolVersion)
	if !ok || !isObject(meta.ClientCapabilities) {
		return refused(mcperr.New(mcperr.KindMalformedMeta))
	}
	var mismatch error
	switch {
	case !hvOK && hv == "":
		mismatch = errNoVersionHeader
	case !hvOK:
		mismatch = errBadVersionHeader
	case hv != pv:
		mismatch = errVersionDiffers
	default:
		mismatch = x.headersAgree(true)
	}
	if mismatch != nil {
		return refused(mcperr.Wrap(mcperr.KindHeaderMismatch, mismatch))
	}
	switch {
	case isModern(pv):
	case isLegacy(pv):
		x.legacy = true
		x.call.legacy = true
		x.call.logLevel = legacyLogLevel(x.s)
	default:
		return refused(mcperr.NewUnsupportedVersion(pv, supportedVersions))
	}
	x.version = pv
	x.o.Version = pv
	x.call.ProtocolVersion = pv
	x.call.capsRaw = json.RawMessage(meta.ClientCapabilities)
	if meta.ClientInfo != nil {
		x.call.clientInfoRaw = json.RawMessage(meta.ClientInfo)
	}
	if lv, ok := jsonString(meta.LogLevel); ok && LoggingLevel(lv).rank() > 0 {
		x.call.logLevel = LoggingLevel(lv)
	}
	if meta.ProgressToken != nil {
		x.call.progressToken = progressToken(json.RawMessage(meta.ProgressToken))
	}
	return x.dispatch(ctx)
}

// progressToken keeps a token that is a string or a number.
func progressToken(raw json.RawMessage) json.RawMessage {
	if validID(raw) {
		return raw
	}
	return nil
}

// dispatch runs the method, through the method table. Methods the table
// does not have, methods of the other era, and methods of a feature the
// server does not advertise are unknown.
func (x *exchange) dispatch(ctx context.Context) Answer {
	d := x.d
	m := x.served()
	if m == nil {
		return refused(mcperr.New(mcperr.KindUnknownMethod))
	}
	if d.paramsErr != nil && d.method != "initialize" {
		return refused(mcperr.Wrap(mcperr.KindMalformedParams, d.paramsErr))
	}
	if l := x.call.live; l != nil && x.s.opts.StreamKeepAlive > 0 && (m.handlers || m.name == "tools/call" || m.name == MethodListen) {
		// A method that runs a handler may be silent long enough for a
		// gateway to end the stream; one that runs none (discovery, a
		// list) answers long before a keep-alive is due.
		l.keepAlive(x.s.opts.StreamKeepAlive)
	}
	if m.handlers || m.listed != nil && m.listed(x.reg) {
		// The server's handlers (a prompt's, a resource's, a completion's,
		// an own method's) and visibility rules may wait on something; a
		// tool's handler gets its own deadline (serveCallTool), and a
		// method that runs none of them (discovery, a list without
		// visibility rules) waits on nothing.
		ctx = x.bounded(ctx)
	}
	x.row = m
	return x.intercept(ctx)
}

// serveMethod answers the request by its method's handler, under ctx,
// the context the request interceptors gave it.
func (x *exchange) serveMethod(ctx context.Context) Answer {
	if l := x.s.opts.HandlerLogger; l != nil {
		x.tel.ctx, x.tel.base, x.tel.method, x.tel.traceParent = ctx, l, x.d.method, x.o.TraceParent
		if t := x.d.target(); t != nil {
			x.tel.target = *t
		}
		x.call.telemetry = &x.tel
	}
	return x.row.serve(x, ctx)
}

func versionString(raw []byte) (string, bool) {
	if len(raw) > 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		for _, v := range supportedVersions {
			if string(raw[1:len(raw)-1]) == v {
				return v, true
			}
		}
	}
	return jsonString(raw)
}
