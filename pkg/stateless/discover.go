package stateless

import (
	"context"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// serveDiscover answers server/discover: the versions served, the
// capabilities the registry advertises, the instructions; cacheable.
func serveDiscover(x *exchange, _ context.Context, _ *baseParams) Answer {
	caps := x.reg.capabilities()
	if x.listens() {
		caps.listenable()
	}
	res := struct {
		SupportedVersions []string           `json:"supportedVersions"`
		Capabilities      ServerCapabilities `json:"capabilities"`
		Instructions      string             `json:"instructions,omitempty"`
	}{supportedVersions, caps, x.s.opts.Instructions}
	h := discoverCache(x.s)
	return x.result(res, &resultFields{cache: &h})
}

// initialize answers the legacy handshake without keeping a session: the
// client's version if it is a served legacy revision, else the latest
// legacy revision — never 2026-07-28, which has no handshake.
func serveInitialize(x *exchange, _ context.Context, p *initializeParams) Answer {
	d := x.d
	if !d.hasParams || d.paramsErr != nil {
		return refused(mcperr.Wrap(mcperr.KindMalformedInitialize, d.paramsErr))
	}
	if p.ProtocolVersion == nil {
		return refused(mcperr.New(mcperr.KindUnnegotiableVersion))
	}
	v := *p.ProtocolVersion
	if !isLegacy(v) {
		v = LatestLegacyVersion
	}
	x.version, x.o.Version = v, v
	caps := x.reg.capabilities()
	caps.Extensions = nil // a 2026-07-28 member
	res := struct {
		ProtocolVersion string             `json:"protocolVersion"`
		Capabilities    ServerCapabilities `json:"capabilities"`
		ServerInfo      Implementation     `json:"serverInfo"`
		Instructions    string             `json:"instructions,omitempty"`
	}{v, caps, x.s.info, x.s.opts.Instructions}
	return x.result(res, &resultFields{})
}

// ping answers a legacy ping.
func servePing(x *exchange, _ context.Context, _ *baseParams) Answer {
	return x.result(struct{}{}, &resultFields{})
}

// setLevel accepts a legacy logging/setLevel and does not remember it:
// there is no session to hold it. Legacy requests get log messages at the
// server's LegacyLogLevel, which the 2025 revisions allow.
func serveSetLevel(x *exchange, _ context.Context, p *setLevelParams) Answer {
	if p.Level == nil || LoggingLevel(*p.Level).rank() == 0 {
		return refused(mcperr.New(mcperr.KindMalformedParams))
	}
	return x.result(struct{}{}, &resultFields{})
}

// subscribe answers a legacy resources/subscribe or unsubscribe. Updates
// would travel on the GET stream this endpoint does not offer, so
// subscribe is not advertised; a client that subscribes anyway is
// answered and gets no updates.
func serveSubscribe(x *exchange, _ context.Context, p *subscribeParams) Answer {
	if p.URI == nil {
		return refused(mcperr.New(mcperr.KindMalformedParams))
	}
	return x.result(struct{}{}, &resultFields{})
}
