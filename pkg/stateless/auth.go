package stateless

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// Authorization, the resource server's side (MCP 2026-07-28, OAuth 2.1):
// with [Options.Auth] set, every request must carry a bearer token in its
// Authorization header that the [Authenticator] accepts for this
// endpoint. A request without one, or with one that fails, is refused 401
// with a WWW-Authenticate challenge that points the client at the
// protected-resource metadata (RFC 9728), from which it discovers the
// authorization server; a valid token that lacks a scope a tool needs is
// refused 403 insufficient_scope, naming every scope the tool needs, so
// the client can step up. Tokens never leave the Authenticator: they are
// not logged, not stored and not passed to handlers.
//
// tools/list shows every tool, whatever the token's scopes: a client must
// see a tool to ask for the scope it needs, and the 403 tells it which.
// Visibility rules still hide tools, and a hidden tool still answers
// exactly like an unknown one.

// Authenticator validates bearer tokens. pkg/auth's verifier, wrapped by
// the function, is one.
type Authenticator interface {
	// Authenticate validates token for audience, the endpoint's canonical
	// URL (RFC 8707), and returns the caller's principal and the token's
	// scopes. A refusal is Unauthorized when the token is at fault (the
	// server adds the challenge) and a server-fault kind such as
	// DependencyFailure when the validation could not be done (the
	// issuer's keys cannot be fetched): the request fails closed.
	Authenticate(ctx context.Context, token, audience string) (principal string, scopes []string, refusal *mcperr.Error)
}

// AuthOptions protect the endpoint with bearer tokens.
type AuthOptions struct {
	Authenticator Authenticator
	// AuthorizationServers are the issuer URLs the protected-resource
	// metadata names.
	AuthorizationServers []string
	// ScopesSupported are the scopes the metadata lists (the minimum for
	// basic use).
	ScopesSupported []string
	// ScopeImplies is the scope hierarchy: a scope grants the scopes it
	// maps to, transitively ("notes:write" -> "notes:read").
	ScopeImplies map[string][]string
	// ResourceName is the metadata's human-readable resource_name.
	ResourceName string
	// ScopePrefix is what the provider puts before the endpoint's scope
	// names: Amazon Cognito names a resource server's scopes
	// "<identifier>/<name>", Entra ID an API's "<Application ID URI>/<name>".
	// Challenges (401 and 403) name a tool's scopes with it, as clients
	// must ask for them; a token's scope that carries it grants the scope
	// without it, and one without it (Entra ID's scp lists bare names)
	// grants itself. ScopesSupported are listed as they are: the
	// provider's names.
	ScopePrefix string
	// Registration, when set, is the endpoint's registration facade, for
	// clients that register themselves with a provider that offers no
	// registration: the metadata then names the endpoint itself as its
	// authorization server (see [Registration]).
	Registration *Registration
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

// MetadataPath is where the protected-resource metadata is served: at
// this path (for clients that ask the origin) and at this path followed
// by the endpoint's path (RFC 9728's well-known URI for the endpoint).
const MetadataPath = "/.well-known/oauth-protected-resource"

// MetadataURL returns the RFC 9728 well-known URL of the metadata of the
// resource whose canonical URL is endpoint: the well-known segment goes
// between the origin and the endpoint's path.
func MetadataURL(endpoint string) string { return wellKnownURL(endpoint, MetadataPath) }

// wellKnownURL is the well-known URL wk for the resource or issuer whose
// URL is endpoint (RFC 9728, RFC 8414): the well-known segment between
// the origin and the path; "" for a URL without a host.
func wellKnownURL(endpoint, wk string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + wk + strings.TrimSuffix(u.EscapedPath(), "/")
}

// ProtectedResourceMetadata answers a GET for the protected-resource
// metadata of the endpoint whose canonical URL is endpoint. It is public
// and the same for everyone, so any origin may read it. Without
// [Options.Auth] there is none: 404.
func (s *Server) ProtectedResourceMetadata(endpoint string) *Response {
	a := s.opts.Auth
	if a == nil || endpoint == "" {
		return oauthNotFound()
	}
	doc := struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers"`
		ScopesSupported        []string `json:"scopes_supported,omitempty"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
		ResourceName           string   `json:"resource_name,omitempty"`
	}{endpoint, a.authorizationServers(endpoint), a.ScopesSupported, []string{"header"}, a.ResourceName}
	b, err := json.Marshal(doc)
	if err != nil {
		return (&exchange{s: s, o: &Outcome{}}).refuse(nil, mcperr.Wrap(mcperr.KindInternal, err))
	}
	return &Response{Status: http.StatusOK, Header: http.Header{
		"Content-Type":                {"application/json"},
		"Cache-Control":               {"public, max-age=300"},
		"Access-Control-Allow-Origin": {"*"},
	}, Body: b}
}

// authenticate establishes the caller of a request to a protected
// endpoint from its bearer token, or refuses it.
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

// checkToken validates the bearer token in header for endpoint, the one
// check of both the server (authenticate) and an authorizer in front of
// it (Admit): the principal and scopes it names, or the refusal, a 401's
// challenge naming the scopes challenge returns (nil: none), asked only
// for a refusal.
func (s *Server) checkToken(ctx context.Context, endpoint string, header http.Header, challenge func() []string) (string, []string, *mcperr.Error) {
	unauthorized := func(invalid bool, cause error) *mcperr.Error {
		var scopes []string
		if challenge != nil {
			scopes = challenge()
		}
		return mcperr.NewUnauthorized(MetadataURL(endpoint), s.opts.Auth.providerScopes(scopes), invalid, cause)
	}
	if endpoint == "" {
		// Nothing to check the token's audience against: a server that
		// does not know its own URL accepts no token.
		return "", nil, mcperr.Wrap(mcperr.KindInternal, errNoEndpoint)
	}
	token, present, ok := bearerToken(header.Values(headerAuthorization))
	if !present {
		return "", nil, unauthorized(false, errNoToken)
	}
	if !ok {
		return "", nil, unauthorized(true, errMalformedAuthorization)
	}
	principal, granted, refusal := s.opts.Auth.Authenticator.Authenticate(ctx, token, endpoint)
	if refusal != nil {
		if refusal.Kind() == mcperr.KindUnauthorized {
			return "", nil, unauthorized(true, refusal)
		}
		return "", nil, refusal
	}
	if principal == "" || principal == Anonymous {
		return "", nil, unauthorized(true, errNoIdentity)
	}
	return principal, s.opts.Auth.endpointScopes(granted), nil
}

// providerScopes are the endpoint's scope names as the provider issues
// them: with ScopePrefix before each.
func (a *AuthOptions) providerScopes(scopes []string) []string {
	if a.ScopePrefix == "" || len(scopes) == 0 {
		return scopes
	}
	out := make([]string, len(scopes))
	for i, sc := range scopes {
		out[i] = a.ScopePrefix + sc
	}
	return out
}

// endpointScopes are a token's scopes as the endpoint names them:
// ScopePrefix removed where a scope has it.
func (a *AuthOptions) endpointScopes(granted []string) []string {
	if a.ScopePrefix == "" || len(granted) == 0 {
		return granted
	}
	out := make([]string, len(granted))
	for i, sc := range granted {
		out[i] = strings.TrimPrefix(sc, a.ScopePrefix)
	}
	return out
}

var (
	errNoEndpoint             = authError("no endpoint URL to validate tokens for")
	errNoToken                = authError("no bearer token")
	errMalformedAuthorization = authError("malformed Authorization header")
	errNoIdentity             = authError("token names no principal")
)

type authError string

func (e authError) Error() string { return "stateless: " + string(e) }

// bearerToken reads the one Authorization header's Bearer credential
// (RFC 6750 section 2.1; the scheme is case-insensitive). present reports
// whether the request tried to authenticate at all; ok whether it did so
// well-formedly. A token anywhere else (the query string, the body) is
// never read.
func bearerToken(vals []string) (token string, present, ok bool) {
	if len(vals) == 0 {
		return "", false, false
	}
	if len(vals) > 1 {
		return "", true, false
	}
	scheme, cred, found := strings.Cut(vals[0], " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", true, false
	}
	cred = strings.TrimLeft(cred, " ")
	if cred == "" || len(cred) > 16<<10 {
		return "", true, false
	}
	for i := 0; i < len(cred); i++ {
		// token68: ALPHA DIGIT - . _ ~ + / then trailing =
		c := cred[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/=", c) >= 0) {
			return "", true, false
		}
	}
	return cred, true, true
}

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
	return mcperr.NewInsufficientScope(a.providerScopes(t.def.Scopes), MetadataURL(x.r.Endpoint))
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
