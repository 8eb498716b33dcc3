package auth

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Resource is the endpoint as an OAuth 2.1 protected resource, the
// resource server's side of MCP authorization: what the server asks of
// every request (it is a [stateless.Authenticator]: the caller a bearer
// token names, the challenges of a refusal, the provider's names of
// scopes) and what the endpoint's documents say (the protected-resource
// metadata, RFC 9728, and the registration facade's, RFC 8414 and RFC
// 7591), which [Documents] serves beside the endpoint.
//
// A request without a bearer token in its Authorization header, or with
// one Tokens refuses, is refused 401 with a WWW-Authenticate challenge
// that points the client at the protected-resource metadata, from which
// it discovers the authorization server; a token that lacks a scope a
// tool needs is refused 403 insufficient_scope, naming every scope the
// tool needs as the provider issues them, so the client can step up.
// Tokens never leave the Resource: they are not logged, not stored and
// not passed on.
//
//	res := &auth.Resource{Tokens: verifier, AuthorizationServers: []string{issuer}, ScopesSupported: scopes}
//	srv := stateless.NewServer(impl, &stateless.Options{Auth: &stateless.AuthOptions{Authenticator: res, ScopeImplies: implies}})
//	docs := &auth.Documents{Server: srv, Resource: res}
//
// A nil *Resource is an endpoint without authorization: its documents are
// absent (404).
type Resource struct {
	// Tokens validates the bearer tokens: a *Verifier is one.
	Tokens TokenAuthenticator
	// AuthorizationServers are the issuer URLs the protected-resource
	// metadata names.
	AuthorizationServers []string
	// ScopesSupported are the scopes the metadata lists (the minimum for
	// basic use), as the provider names them.
	ScopesSupported []string
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
	// Proxy, when set, is the endpoint's authorization proxy, which
	// supersedes the registration facade (Registration is then unused):
	// the metadata names the endpoint as its authorization server, whose
	// authorization and token endpoints are the proxy's (see [Proxy]).
	Proxy *Proxy
}

// TokenAuthenticator validates bearer tokens: a [*Verifier] is one (see
// [Verifier.Authenticate]); a table of tokens is one in a test.
type TokenAuthenticator interface {
	// Authenticate validates token for audience, the endpoint's canonical
	// URL (RFC 8707), and returns the caller's principal and the token's
	// scopes, as the provider names them. A refusal is Unauthorized when
	// the token is at fault (the Resource adds the challenge) and a
	// server-fault kind such as DependencyFailure when the validation
	// could not be done (the issuer's keys cannot be fetched): the
	// request fails closed.
	Authenticate(ctx context.Context, token, audience string) (principal string, scopes []string, refusal *mcperr.Error)
}

// Authenticate is Verify as a [TokenAuthenticator]: the token's principal
// ([Principal]) and scopes; a token at fault (ErrInvalid) is an
// Unauthorized refusal, and a key service that cannot be reached
// (ErrUnavailable) fails the request closed as a retryable server fault,
// so that the client retries rather than authorizing again.
func (v *Verifier) Authenticate(ctx context.Context, token, audience string) (string, []string, *mcperr.Error) {
	t, err := v.Verify(ctx, token, audience)
	switch {
	case err == nil:
		return Principal(t), t.Scopes, nil
	case errors.Is(err, ErrUnavailable):
		return "", nil, mcperr.NewRetryable(mcperr.KindDependencyFailure, time.Second, err)
	}
	return "", nil, mcperr.Wrap(mcperr.KindUnauthorized, err)
}

// Authenticate establishes the caller of a request to endpoint from the
// bearer token in header's Authorization (stateless.Authenticator): the
// principal Tokens names and the token's scopes as the endpoint names
// them (ScopePrefix removed). A request without a token is refused 401
// with the challenge alone; one with a malformed Authorization, a token
// Tokens refuses, or a token that names no one, 401 invalid_token. Both
// challenges name the scopes challenge returns, as the provider issues
// them.
func (res *Resource) Authenticate(ctx context.Context, endpoint string, header http.Header, challenge func() []string) (string, []string, *mcperr.Error) {
	unauthorized := func(invalid bool, cause error) *mcperr.Error {
		var scopes []string
		if challenge != nil {
			scopes = challenge()
		}
		return mcperr.NewUnauthorized(MetadataURL(endpoint), res.providerScopes(scopes), invalid, cause)
	}
	token, present, ok := bearerToken(header.Values("Authorization"))
	switch {
	case !present:
		return "", nil, unauthorized(false, errNoToken)
	case !ok:
		return "", nil, unauthorized(true, errMalformedAuthorization)
	case res.Tokens == nil:
		return "", nil, mcperr.Wrap(mcperr.KindInternal, errNoTokens)
	}
	principal, granted, refusal := res.Tokens.Authenticate(ctx, token, endpoint)
	if refusal != nil {
		if refusal.Kind() == mcperr.KindUnauthorized {
			return "", nil, unauthorized(true, refusal)
		}
		return "", nil, refusal
	}
	if principal == "" || principal == stateless.Anonymous {
		return "", nil, unauthorized(true, errNoIdentity)
	}
	return principal, res.endpointScopes(granted), nil
}

// InsufficientScope is the 403 of a request to endpoint whose token lacks
// some of required, a tool's scopes (stateless.Authenticator): its
// challenge and its data name every one of them as the provider issues
// them (with ScopePrefix), which it also returns.
func (res *Resource) InsufficientScope(endpoint string, required []string) (*mcperr.Error, []string) {
	asked := res.providerScopes(required)
	return mcperr.NewInsufficientScope(asked, MetadataURL(endpoint)), asked
}

// providerScopes are the endpoint's scope names as the provider issues
// them: with ScopePrefix before each.
func (res *Resource) providerScopes(scopes []string) []string {
	if res.ScopePrefix == "" || len(scopes) == 0 {
		return scopes
	}
	out := make([]string, len(scopes))
	for i, sc := range scopes {
		out[i] = res.ScopePrefix + sc
	}
	return out
}

// endpointScopes are a token's scopes as the endpoint names them:
// ScopePrefix removed where a scope has it.
func (res *Resource) endpointScopes(granted []string) []string {
	if res.ScopePrefix == "" || len(granted) == 0 {
		return granted
	}
	out := make([]string, len(granted))
	for i, sc := range granted {
		out[i] = strings.TrimPrefix(sc, res.ScopePrefix)
	}
	return out
}

var (
	errNoToken                = errors.New("auth: no bearer token")
	errMalformedAuthorization = errors.New("auth: malformed Authorization header")
	errNoIdentity             = errors.New("auth: token names no principal")
	errNoTokens               = errors.New("auth: the Resource has no Tokens to validate a token with")
)

// maxBearerToken bounds the credential read from an Authorization
// header, as Verify bounds the token.
const maxBearerToken = maxTokenBytes

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
	if cred == "" || len(cred) > maxBearerToken {
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
