package stateless

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// Authorization, the resource server's side (MCP 2026-07-28, OAuth 2.1):
// with [Options.Auth] set, every request must carry credentials (a
// bearer token in its Authorization header) that the [Authenticator]
// accepts for this endpoint. A request without them, or with ones that
// fail, is refused 401 with the authenticator's challenge, which points
// the client at the protected-resource metadata (RFC 9728); a valid token
// that lacks a scope a tool needs is refused 403 insufficient_scope,
// naming every scope the tool needs, so the client can step up. Tokens
// never leave the Authenticator: they are not logged, not stored and not
// passed to handlers.
//
// What is OAuth's and not the protocol's — reading the bearer token, the
// provider's names of scopes, the metadata documents and the registration
// facade — is package auth's ([auth.Resource] is an Authenticator,
// [auth.Documents] serves the documents beside the endpoint). The server
// keeps what needs its registry: the principal a request is made by, a
// tool's scopes checked against the token's (MissingScopes), the scopes a
// challenge names, and the authorizer's decision (Admit).
//
// tools/list shows every tool, whatever the token's scopes: a client must
// see a tool to ask for the scope it needs, and the 403 tells it which.
// Visibility rules still hide tools, and a hidden tool still answers
// exactly like an unknown one.

// Authenticator establishes the caller of a request to a protected
// endpoint: the server asks it for every request, and for the refusal of
// a call whose token lacks a tool's scopes. Scopes cross it as the
// endpoint's tools name them ([Tool].Scopes); the names a provider
// issues, and the challenge's syntax, are the authenticator's. Package
// auth's Resource is one.
type Authenticator interface {
	// Authenticate validates the credentials in header for endpoint, the
	// endpoint's canonical URL (RFC 8707's resource, never empty), and
	// returns the caller's principal (neither "" nor Anonymous) and the
	// scopes the credentials grant. A refusal is Unauthorized when the
	// credentials are absent or at fault, with the challenge that names
	// the scopes challenge returns (called only then; nil: none), or a
	// server-fault kind such as DependencyFailure when they could not be
	// checked (the issuer's keys cannot be fetched): the request fails
	// closed.
	Authenticate(ctx context.Context, endpoint string, header http.Header, challenge func() []string) (principal string, scopes []string, refusal *mcperr.Error)
	// InsufficientScope returns the refusal of a request to endpoint
	// whose credentials lack some of required, a tool's scopes: an
	// InsufficientScope whose challenge and data name every one of them
	// as the client must ask for them, and those names.
	InsufficientScope(endpoint string, required []string) (refusal *mcperr.Error, asked []string)
}

// AuthOptions protect the endpoint ([Options.Auth]).
type AuthOptions struct {
	// Authenticator establishes each request's caller (package auth's
	// Resource, for bearer tokens).
	Authenticator Authenticator
	// ScopeImplies is the scope hierarchy: a scope grants the scopes it
	// maps to, transitively ("notes:write" -> "notes:read").
	ScopeImplies map[string][]string
}

// ChallengeRelayHeader carries a refusal's WWW-Authenticate challenge a
// second time, under a name no gateway remaps. API Gateway REST APIs
// rename a Lambda proxy response's WWW-Authenticate to
// x-amzn-Remapped-WWW-Authenticate, and first-hand reports say function
// URLs and HTTP APIs do too, so the challenge may not reach a client under
// its own name. A gateway that can map response headers (an HTTP API's
// integration response parameters, as the template configures) copies
// this one into WWW-Authenticate; see docs/aws-contract.md.
const ChallengeRelayHeader = "Relay-WWW-Authenticate"

// authenticate establishes the caller of a request to a protected
// endpoint from its credentials, or refuses it.
func (x *exchange) authenticate(ctx context.Context) *mcperr.Error {
	if x.s.opts.Auth == nil {
		return nil
	}
	principal, scopes, e := x.s.checkToken(x.bounded(ctx), x.r.Endpoint, x.r.Header, x.challengeScopes)
	if e != nil {
		return e
	}
	x.principal, x.scopes = principal, scopes
	return nil
}

// checkToken asks the Authenticator for the caller of a request to
// endpoint with header, the one check of both the server (authenticate)
// and an authorizer in front of it (Admit): the principal and scopes it
// names, or the refusal, whose challenge names the scopes challenge
// returns (nil: none).
func (s *Server) checkToken(ctx context.Context, endpoint string, header http.Header, challenge func() []string) (string, []string, *mcperr.Error) {
	a := s.opts.Auth.Authenticator
	switch {
	case endpoint == "":
		// Nothing to check the token's audience against: a server that
		// does not know its own URL accepts no token.
		return "", nil, mcperr.Wrap(mcperr.KindInternal, errNoEndpoint)
	case a == nil:
		return "", nil, mcperr.Wrap(mcperr.KindInternal, errNoAuthenticator)
	}
	principal, scopes, e := a.Authenticate(ctx, endpoint, header, challenge)
	switch {
	case e != nil:
		return "", nil, e
	case principal == "" || principal == Anonymous:
		// An Authenticator that lets a request through names its caller:
		// a protected endpoint serves no one anonymously.
		return "", nil, mcperr.Wrap(mcperr.KindInternal, errNoPrincipal)
	}
	return principal, scopes, nil
}

var (
	errNoEndpoint      = authError("no endpoint URL to validate tokens for")
	errNoAuthenticator = authError("Options.Auth has no Authenticator")
	errNoPrincipal     = authError("the Authenticator let a request through without naming its caller")
)

type authError string

func (e authError) Error() string { return "stateless: " + string(e) }

// challengeScopes are the scopes a 401 tells the client this request
// needs: a tool's, when the request calls a registered tool that no
// visibility rule hides (a hidden tool's scopes would reveal it).
func (x *exchange) challengeScopes() []string {
	if x.d == nil {
		return nil
	}
	if x.d.method != "tools/call" {
		return nil
	}
	name := x.d.params.target()
	if name == nil {
		return nil
	}
	t := x.reg.tool(*name)
	if t == nil || t.def.Visible != nil {
		return nil
	}
	return t.def.Scopes
}

// checkScopes refuses a call to t when the token lacks a scope t needs:
// 403 with every scope t needs in one challenge.
func (x *exchange) checkScopes(t *registeredTool) *mcperr.Error {
	a := x.s.opts.Auth
	if a == nil || len(t.def.Scopes) == 0 {
		return nil
	}
	if len(MissingScopes(x.scopes, t.def.Scopes, a.ScopeImplies)) == 0 {
		return nil
	}
	e, _ := a.Authenticator.InsufficientScope(x.r.Endpoint, t.def.Scopes)
	return e
}

// MissingScopes returns the scopes of required that granted does not
// cover, in the order of required and without repeats; nil means granted
// is enough. implies is the scope hierarchy: implies[s] lists the
// narrower scopes s grants too ("notes" implies "notes:read"), and
// implication is transitive; a cycle is harmless. It is the one scope
// check of the module: the server's 403 and the REST authorizer's Deny
// name every scope it returns, in one challenge, as the MCP specification
// asks.
func MissingScopes(granted, required []string, implies map[string][]string) (missing []string) {
	if len(required) == 0 {
		return nil
	}
	have := make(map[string]bool, len(granted))
	pending := append([]string(nil), granted...)
	for len(pending) > 0 {
		s := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if have[s] {
			continue // seen: this is what makes cycles harmless
		}
		have[s] = true
		pending = append(pending, implies[s]...)
	}
	for i, r := range required {
		if !have[r] && !slices.Contains(required[:i], r) {
			missing = append(missing, r)
		}
	}
	return missing
}

// Preflight answers r, a CORS preflight of a resource the endpoint serves
// beside the MCP endpoint that takes methods (package auth's registration
// endpoint, which takes POST), by the endpoint's own Origin rule
// (Options.AllowedOrigins and the loopback rule), as the MCP endpoint's
// preflight is answered: an allowed origin is echoed, with methods and
// the requested headers the endpoint admits; a refused origin, or a
// method not among methods, gets the forbidden-origin refusal without
// Access-Control-* headers, so the browser never sends the request, and o
// records it (Kind, Code, the cause). It reports nothing: its caller
// reports the answer, with o ([Server.Answered]).
func (s *Server) Preflight(r *Request, o *Outcome, methods ...string) *Response {
	return preflightFor(s, r, o, methods, strings.Join(methods, ", "))
}

// AllowOrigin adds to resp, the answer to r that the server gives beside
// the MCP endpoint (package auth's token endpoint), what lets the page
// that sent r read it when the endpoint's Origin rule allows r's origin,
// as an MCP answer gets it; nothing for another origin or a request
// without one.
func (s *Server) AllowOrigin(r *Request, resp *Response) { allowCORS(s, r, resp) }

// Answered reports resp, the answer to r that the server gave beside the
// MCP endpoint (package auth's OAuth documents), as every answer is
// reported: the log line of a refusal, and Options.Observe, whose request
// line and metrics it gets. o names the answer — its Method one of the
// endpoint's own names (OwnMethod), never the peer's path; Kind and Err
// for a refusal — and is completed here with resp's status, the time since
// start and r's traceparent.
func (s *Server) Answered(ctx context.Context, r *Request, resp *Response, o *Outcome, start time.Time) {
	ctx = s.observing(ctx, r.Header, o)
	s.reportSince(ctx, o, resp.Status, start)
}
