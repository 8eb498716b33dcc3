package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Proxy is the endpoint's authorization proxy: an authorization server in
// front of a provider that knows one client of the endpoint's (Amazon
// Cognito, Microsoft Entra ID), for MCP clients that bring their own
// identity — a client ID metadata document (a client id that is an https
// URL) or a registration (RFC 7591, deprecated by MCP 2026-07-28, kept
// for clients that do only that).
//
// It is stateless in the function's sense: what a flow carries between
// its steps is sealed (the Sealer, the endpoint's request-state sealer,
// rooted in KMS when deployed) and travels with the browser or the
// client, and the one thing that must be used once, the code it issues,
// is spent once through Codes (the claims table). The flow:
//
//  1. GET /mcp/authorize: the client's authorization request is
//     validated (its client, the redirect URI that client declares, PKCE
//     S256, the resource) and, unless this browser consented to the
//     client before or the operator pre-approved it, answered with a
//     consent page that names the client, the redirect's host and the
//     scopes.
//  2. POST /mcp/authorize, the page's form: approval (from this page, in
//     this browser: a double-submitted cookie and the Origin) sends the
//     browser to the provider with the endpoint's own client id, its own
//     callback, its own PKCE pair and a sealed state that names the
//     flow's browser cookie.
//  3. GET /mcp/callback: the provider's answer, accepted only from the
//     browser that holds the flow's cookie (so a captured authorization
//     URL opened by somebody else goes nowhere: CVE-2026-27124's case),
//     is answered with a code of the endpoint's own sealing the
//     provider's code, sent to the client's redirect URI with iss (RFC
//     9207).
//  4. POST /mcp/token: the client's code, redirect URI and PKCE verifier
//     are checked, the code spent, and the provider's code exchanged;
//     refresh tokens pass through. The tokens are the provider's, so the
//     resource server validates them as before.
//
// docs/auth.md gives the security argument.
type Proxy struct {
	// ClientID is the client registered at the provider for the endpoint,
	// with the endpoint's callback (<endpoint>/callback) as its one
	// redirect URI.
	ClientID string
	// ClientSecret, when set, returns the client's secret for the token
	// exchange (HTTP Basic): for a provider whose client is confidential.
	// nil: a public client, which proves itself with PKCE alone.
	ClientSecret func(ctx context.Context) (string, error)
	// AuthorizationEndpoint and TokenEndpoint are the provider's.
	AuthorizationEndpoint, TokenEndpoint string
	// Issuer is the provider's issuer: an iss on its authorization
	// response (RFC 9207) must equal it.
	Issuer string
	// RedirectURIs are the redirect URIs a registered client may use
	// besides loopback ones, each compared whole (as the facade's).
	RedirectURIs []string
	// PreApproved are client ids (metadata-document URLs, typically)
	// whose flows need no consent page.
	PreApproved []string
	// OmitResource keeps the resource parameter (RFC 8707) from the
	// provider: Entra ID refuses one that is not an Application ID URI
	// (AADSTS9010010), and the scopes, which carry the API's prefix, name
	// the resource there. The client's resource is still checked against
	// the endpoint, and the token against the endpoint's audiences.
	OmitResource bool
	// Sealer seals the flow's state; it must be set (the endpoint's
	// request-state sealer).
	Sealer reqstate.Sealer
	// Codes spends each code the proxy issues once; it must be set (the
	// claims table; claims.Guard's SpendOnce).
	Codes Spender
	// Documents fetches client ID metadata documents; nil: a zero
	// ClientMetadataDocuments, made on first use.
	Documents *ClientMetadataDocuments
	// HTTPClient makes the token requests to the provider; nil: a client
	// bounded by ProxyTimeout.
	HTTPClient *http.Client
	// Now is the clock; nil: time.Now.
	Now func() time.Time

	defaultDocsOnce sync.Once
	defaultDocs     *ClientMetadataDocuments
}

// Spender spends a name once: claims.Guard's SpendOnce is one.
type Spender interface {
	// SpendOnce reports whether name was spent now, for the first time,
	// and is kept spent until until. An error is a store that could not
	// say (the flow fails closed, retryably).
	SpendOnce(ctx context.Context, name string, until time.Time) (bool, error)
}

// The proxy's paths, after the endpoint's path (/mcp/authorize, ...).
const (
	AuthorizeSuffix = "/authorize"
	CallbackSuffix  = "/callback"
	TokenSuffix     = "/token"
)

// Bounds of what the proxy reads and how long its flows last.
const (
	// MaxProxyFormBytes bounds a consent form's or token request's body.
	MaxProxyFormBytes = 16 << 10
	// ProxyTimeout bounds a token request to the provider.
	ProxyTimeout = 10 * time.Second
	// flowTTL bounds a flow from its authorization request to the
	// provider's answer; codeTTL a code from its issue to its redemption
	// (RFC 6749 section 4.1.2 recommends at most ten minutes; a client
	// redeems at once).
	flowTTL = 10 * time.Minute
	codeTTL = 2 * time.Minute
	// consentTTL is how long a browser's consent to a client stands at
	// most: the sealer's own expiry (the endpoint's request-state
	// lifetime, MCP_STATE_TTL) bounds every sealed value, this one too,
	// so a consent is asked again after that.
	consentTTL = 12 * time.Hour
	// maxConsents bounds the clients one consent cookie remembers.
	maxConsents = 8
	// maxParam bounds one parameter of an authorization request, and
	// maxRequestBytes the request as its sealed values carry it (JSON, in
	// which <, > and & take six bytes each), so that one that passes
	// validation always fits them.
	maxParam        = 2048
	maxRequestBytes = 4 << 10
)

// dcrPrefix starts the client ids the proxy's registration issues: the
// client's own registration (its redirect URIs and name), encoded, not
// stored. Anyone can register anything, so the id needs no integrity:
// what it declares is checked again at every authorization request.
const dcrPrefix = "mcp-dcr:"

// The sealed values' purposes, the Method of their binding, so that one
// never opens as another.
const (
	purposeTicket   = "oauth/consent-ticket"
	purposeState    = "oauth/provider-state"
	purposeCode     = "oauth/code"
	purposeConsents = "oauth/consents"
)

// proxyClient is a client as the proxy knows it.
type proxyClient struct {
	id, name string
	// document: identified by a client ID metadata document (else
	// registered).
	document  bool
	redirects []string
}

// errClient is a client or a redirect URI the proxy cannot accept: the
// authorization request is answered by a page, never redirected.
type errClient struct{ reason string }

func (e *errClient) Error() string { return "auth: proxy: " + e.reason }

// client resolves id: a metadata document, fetched, or a registration,
// decoded.
func (p *Proxy) client(ctx context.Context, id string) (*proxyClient, error) {
	switch {
	case IsClientMetadataURL(id):
		doc, err := p.documents().Get(ctx, id)
		if err != nil {
			return nil, err
		}
		return &proxyClient{id: id, name: doc.ClientName, document: true, redirects: doc.RedirectURIs}, nil
	case strings.HasPrefix(id, dcrPrefix):
		reg, err := decodeRegistered(id)
		if err != nil {
			return nil, &errClient{"the client id is not one this endpoint issued"}
		}
		for _, r := range reg.RedirectURIs {
			if !acceptsRedirect(p.RedirectURIs, r) {
				return nil, &errClient{"the client's registered redirect URIs are not accepted here"}
			}
		}
		return &proxyClient{id: id, name: reg.Name, redirects: reg.RedirectURIs}, nil
	}
	return nil, &errClient{"the client is unknown: use a client ID metadata document URL or register"}
}

// documents is p's metadata-document cache: Documents, or one made once
// on first use (requests run concurrently, so never assigned in place).
func (p *Proxy) documents() *ClientMetadataDocuments {
	if p.Documents != nil {
		return p.Documents
	}
	p.defaultDocsOnce.Do(func() { p.defaultDocs = &ClientMetadataDocuments{} })
	return p.defaultDocs
}

// allows reports whether c declares redirect: exactly, or as a loopback
// URI that differs only in its port (RFC 8252 section 7.3: a native
// client's loopback listener takes whatever port is free).
func (c *proxyClient) allows(redirect string) bool {
	if slices.Contains(c.redirects, redirect) {
		return true
	}
	u, err := url.Parse(redirect)
	if err != nil || !isLoopbackHTTP(u) {
		return false
	}
	for _, r := range c.redirects {
		d, err := url.Parse(r)
		if err == nil && isLoopbackHTTP(d) && strings.EqualFold(d.Hostname(), u.Hostname()) && d.EscapedPath() == u.EscapedPath() && d.RawQuery == u.RawQuery {
			return true
		}
	}
	return false
}

// isLoopbackHTTP reports whether u is an http URI on a loopback host,
// without user info or fragment.
func isLoopbackHTTP(u *url.URL) bool {
	if u.Scheme != "http" || u.User != nil || u.Opaque != "" || u.Fragment != "" || u.RawFragment != "" {
		return false
	}
	switch strings.ToLower(u.Hostname()) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// registered is what a proxy-issued client id declares.
type registered struct {
	RedirectURIs []string `json:"r"`
	Name         string   `json:"n,omitempty"`
}

// encodeRegistered is the client id of a registration.
func encodeRegistered(r registered) string {
	b, _ := json.Marshal(r) // strings: cannot fail
	return dcrPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// decodeRegistered reads a client id encodeRegistered made.
func decodeRegistered(id string) (registered, error) {
	var r registered
	if len(id) > MaxClientIDBytes {
		return r, errors.New("too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(id, dcrPrefix))
	if err != nil {
		return r, err
	}
	if err := jsonv2.Unmarshal(b, &r); err != nil {
		return r, err
	}
	if len(r.RedirectURIs) == 0 || len(r.RedirectURIs) > maxRedirects || len(r.Name) > maxClientName {
		return r, errors.New("out of bounds")
	}
	return r, nil
}

// authzRequest is an authorization request as validated: what the
// consent ticket and the provider state carry of it.
type authzRequest struct {
	Client    string `json:"c"`
	Redirect  string `json:"r"`
	State     string `json:"s,omitempty"`
	Challenge string `json:"h"`
	Scope     string `json:"o,omitempty"`
	Resource  string `json:"e,omitempty"`
}

// ticket is the consent page's sealed form value: the request consented
// to, and the digest of the page's CSRF cookie.
type ticket struct {
	Request authzRequest `json:"q"`
	CSRF    []byte       `json:"x"`
	Expires int64        `json:"t"`
}

// providerState is the state sent to the provider: the client's request,
// the endpoint's PKCE verifier for the provider, and the flow's browser
// cookie (its name and the digest of its value).
type providerState struct {
	Request  authzRequest `json:"q"`
	Verifier string       `json:"v"`
	Flow     string       `json:"f"`
	Nonce    []byte       `json:"n"`
	Expires  int64        `json:"t"`
}

// issuedCode is the code the proxy gives the client: the provider's code
// and what the token request must match.
type issuedCode struct {
	ID           string `json:"i"`
	ProviderCode string `json:"p"`
	Verifier     string `json:"v"`
	Client       string `json:"c"`
	Redirect     string `json:"r"`
	Challenge    string `json:"h"`
	Resource     string `json:"e,omitempty"`
	Expires      int64  `json:"t"`
}

// seal seals v for purpose at endpoint.
func (p *Proxy) seal(ctx context.Context, purpose, endpoint string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return p.Sealer.Seal(ctx, reqstate.Binding{Method: purpose, Endpoint: endpoint}, b)
}

// open opens a value seal made for purpose at endpoint into v, and
// checks its own expiry (expires, once decoded, in v).
func (p *Proxy) open(ctx context.Context, purpose, endpoint, token string, v any, expires *int64) error {
	if token == "" || len(token) > 8<<10 {
		return reqstate.ErrInvalid
	}
	b, err := p.Sealer.Open(ctx, reqstate.Binding{Method: purpose, Endpoint: endpoint}, token)
	if err != nil {
		return err
	}
	if err := jsonv2.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", reqstate.ErrInvalid, err)
	}
	if p.now().Unix() > *expires {
		return fmt.Errorf("%w: expired", reqstate.ErrInvalid)
	}
	return nil
}

func (p *Proxy) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// proxyAnswer is a proxy's answer and what its report says.
type proxyAnswer struct {
	resp *stateless.Response
	kind string
	err  error
}

// refusedPage answers an authorization request that cannot be sent back
// to its client (the client or the redirect URI is at fault): a page,
// never a redirect, naming the reason (the endpoint's words).
func refusedPage(status int, kind string, err error) proxyAnswer {
	reason := "The authorization request was refused."
	var ec *errClient
	switch {
	case errors.As(err, &ec):
		reason = "The authorization request was refused: " + ec.reason + "."
	case errors.Is(err, ErrClientMetadataUnavailable):
		reason = "The client's metadata document could not be fetched. Try again."
	case errors.Is(err, ErrClientMetadata):
		reason = "The client's metadata document was refused."
	}
	resp := htmlPage(status, "Authorization refused", reason)
	if status == http.StatusServiceUnavailable {
		resp.Header.Set("Retry-After", "1")
	}
	return proxyAnswer{resp: resp, kind: kind, err: err}
}

// redirectError sends an error to the client's validated redirect URI
// (RFC 6749 section 4.1.2.1), with its state and the endpoint's iss.
func redirectError(req *authzRequest, endpoint, code string, err error) proxyAnswer {
	q := url.Values{"error": {code}, "iss": {endpoint}}
	if req.State != "" {
		q.Set("state", req.State)
	}
	return proxyAnswer{resp: redirect(withQuery(req.Redirect, q), nil), kind: code, err: err}
}

// withQuery is raw with q's parameters added to its query.
func withQuery(raw string, q url.Values) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	v := u.Query()
	for k, vs := range q {
		v[k] = vs
	}
	u.RawQuery = v.Encode()
	return u.String()
}

// redirect is a 302 (or, for a form's answer, 303) to location, with
// cookies set.
func redirect(location string, cookies []*http.Cookie) *stateless.Response {
	h := http.Header{"Location": {location}, "Cache-Control": {"no-store"}, "Referrer-Policy": {"no-referrer"}}
	for _, c := range cookies {
		h.Add("Set-Cookie", c.String())
	}
	return &stateless.Response{Status: http.StatusFound, Header: h}
}

// authorize answers GET /mcp/authorize.
func (p *Proxy) authorize(ctx context.Context, r *stateless.Request, endpoint string, query url.Values) proxyAnswer {
	req, c, a := p.validate(ctx, endpoint, query)
	if req == nil {
		return a
	}
	if p.consented(ctx, r, endpoint, c.id) {
		return p.toProvider(ctx, endpoint, req, nil, http.StatusFound)
	}
	return p.consentPage(ctx, r, endpoint, req, c)
}

// validate reads an authorization request: nil and the answer when it is
// refused.
func (p *Proxy) validate(ctx context.Context, endpoint string, q url.Values) (*authzRequest, *proxyClient, proxyAnswer) {
	for k, vs := range q {
		if len(vs) > 1 {
			// RFC 6749 section 3.1: a parameter sent twice is an invalid
			// request; which one counts must not be left to guess.
			return nil, nil, refusedPage(http.StatusBadRequest, "invalid_request", &errClient{"a parameter is repeated"})
		}
		if len(vs[0]) > maxParam || len(k) > 64 {
			return nil, nil, refusedPage(http.StatusBadRequest, "invalid_request", &errClient{"a parameter is too long"})
		}
	}
	id := q.Get("client_id")
	if id == "" {
		return nil, nil, refusedPage(http.StatusBadRequest, "invalid_client", &errClient{"client_id is missing"})
	}
	c, err := p.client(ctx, id)
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, ErrClientMetadataUnavailable) {
			status = http.StatusServiceUnavailable
		}
		return nil, nil, refusedPage(status, "invalid_client", err)
	}
	redirectURI := q.Get("redirect_uri")
	if redirectURI == "" || !c.allows(redirectURI) {
		return nil, nil, refusedPage(http.StatusBadRequest, "invalid_redirect_uri", &errClient{"redirect_uri is not one the client declares"})
	}
	req := &authzRequest{Client: id, Redirect: redirectURI, State: q.Get("state"), Challenge: q.Get("code_challenge"), Scope: q.Get("scope"), Resource: q.Get("resource")}
	// From here on the client's redirect URI is known good: refusals go
	// there.
	if b, _ := json.Marshal(req); len(b) > maxRequestBytes {
		return nil, nil, redirectError(req, endpoint, "invalid_request", errors.New("the authorization request is too long"))
	}
	switch {
	case q.Get("response_type") != "code":
		return nil, nil, redirectError(req, endpoint, "unsupported_response_type", errors.New("response_type is not code"))
	case q.Get("code_challenge_method") != "S256" || !validChallenge(req.Challenge):
		return nil, nil, redirectError(req, endpoint, "invalid_request", errors.New("PKCE with S256 is required"))
	case req.Resource != "" && req.Resource != endpoint:
		return nil, nil, redirectError(req, endpoint, "invalid_target", errors.New("resource is not this endpoint"))
	case !validScope(req.Scope):
		return nil, nil, redirectError(req, endpoint, "invalid_scope", errors.New("scope is malformed"))
	}
	return req, c, proxyAnswer{}
}

// validChallenge reports whether s is an S256 code challenge: the
// base64url of a SHA-256 digest (RFC 7636 section 4.2).
func validChallenge(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == sha256.Size
}

// validVerifier reports whether s is a code verifier (RFC 7636 section
// 4.1: 43 to 128 unreserved characters).
func validVerifier(s string) bool {
	if len(s) < 43 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// validScope reports whether s is a scope parameter (RFC 6749 section
// 3.3: space-separated tokens of printable ASCII but space, " and \).
func validScope(s string) bool {
	for _, t := range strings.Split(s, " ") {
		if t == "" && s != "" {
			return false
		}
		for i := 0; i < len(t); i++ {
			if c := t[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
				return false
			}
		}
	}
	return true
}

// challengeOf is the S256 challenge of verifier.
func challengeOf(verifier string) string {
	d := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(d[:])
}

// randomText is n random bytes, base64url.
func randomText(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// digest is the SHA-256 of s, for what a sealed value binds of a cookie.
func digest(s string) []byte {
	d := sha256.Sum256([]byte(s))
	return d[:]
}

// toProvider sends the browser to the provider for req: a new flow
// cookie, the endpoint's PKCE pair and the sealed state. cookies are set
// with it (a consent just given).
func (p *Proxy) toProvider(ctx context.Context, endpoint string, req *authzRequest, cookies []*http.Cookie, status int) proxyAnswer {
	flow, nonce := randomText(9), randomText(32)
	st := providerState{Request: *req, Verifier: randomText(48), Flow: flow, Nonce: digest(nonce), Expires: p.now().Add(flowTTL).Unix()}
	sealed, err := p.seal(ctx, purposeState, endpoint, st)
	if err != nil {
		return sealFailed(err)
	}
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {p.ClientID},
		"redirect_uri":          {callbackURL(endpoint)},
		"code_challenge":        {challengeOf(st.Verifier)},
		"code_challenge_method": {"S256"},
		"state":                 {sealed},
	}
	if req.Scope != "" {
		q.Set("scope", req.Scope)
	}
	if !p.OmitResource {
		q.Set("resource", endpoint)
	}
	cookies = append(cookies, flowCookie(endpoint, flow, nonce, int(flowTTL/time.Second)))
	resp := redirect(withQuery(p.AuthorizationEndpoint, q), cookies)
	resp.Status = status
	return proxyAnswer{resp: resp}
}

// sealFailed answers a flow whose state could not be sealed or opened:
// for want of the key service a retry may succeed (503); any other
// failure will not (500).
func sealFailed(err error) proxyAnswer {
	if !errors.Is(err, reqstate.ErrUnavailable) {
		return proxyAnswer{resp: htmlPage(http.StatusInternalServerError, "Error", "The sign-in could not be continued. Start again from the application."), kind: "server_error", err: err}
	}
	resp := htmlPage(http.StatusServiceUnavailable, "Try again", "The authorization service is unavailable for a moment. Try again.")
	resp.Header.Set("Retry-After", "1")
	return proxyAnswer{resp: resp, kind: "temporarily_unavailable", err: err}
}

// callbackURL is the endpoint's own callback at the provider.
func callbackURL(endpoint string) string { return strings.TrimSuffix(endpoint, "/") + CallbackSuffix }

// providerErrors are the error codes of an authorization response (RFC
// 6749 section 4.1.2.1) that pass to the client as they are; any other
// becomes server_error. No description passes: it is the provider's text,
// which the endpoint does not vouch for.
var providerErrors = []string{"invalid_request", "unauthorized_client", "access_denied", "unsupported_response_type", "invalid_scope", "server_error", "temporarily_unavailable", "invalid_target", "login_required", "consent_required", "interaction_required"}

// callback answers GET /mcp/callback, the provider's answer.
func (p *Proxy) callback(ctx context.Context, r *stateless.Request, endpoint string, q url.Values) proxyAnswer {
	var st providerState
	if err := p.open(ctx, purposeState, endpoint, q.Get("state"), &st, &st.Expires); err != nil {
		if errors.Is(err, reqstate.ErrUnavailable) {
			return sealFailed(err)
		}
		return proxyAnswer{resp: htmlPage(http.StatusBadRequest, "Authorization refused", "This sign-in is not one this endpoint started, or it is too old. Start again from the application."), kind: "invalid_state", err: err}
	}
	// Only the browser that started the flow may finish it: a captured
	// authorization URL opened elsewhere has no flow cookie.
	nonce, ok := cookieValue(r, flowCookieName(endpoint, st.Flow))
	if !ok || subtle.ConstantTimeCompare(digest(nonce), st.Nonce) != 1 {
		return proxyAnswer{resp: htmlPage(http.StatusForbidden, "Authorization refused", "This sign-in was started in another browser. Start again from the application, in this browser."),
			kind: "flow_not_this_browser", err: errors.New("auth: proxy: the callback's browser does not hold the flow's cookie")}
	}
	done := expiredCookie(flowCookieName(endpoint, st.Flow), endpoint)
	req := &st.Request
	if iss := q.Get("iss"); iss != "" && p.Issuer != "" && iss != p.Issuer {
		a := redirectError(req, endpoint, "server_error", errors.New("auth: proxy: the provider's iss is not its issuer"))
		a.resp.Header.Add("Set-Cookie", done.String())
		return a
	}
	if e := q.Get("error"); e != "" {
		code := "server_error"
		if slices.Contains(providerErrors, e) {
			code = e
		}
		a := redirectError(req, endpoint, code, fmt.Errorf("auth: proxy: the provider answered %q", code))
		a.resp.Header.Add("Set-Cookie", done.String())
		return a
	}
	providerCode := q.Get("code")
	if providerCode == "" || len(providerCode) > 4<<10 {
		a := redirectError(req, endpoint, "server_error", errors.New("auth: proxy: the provider answered without a usable code"))
		a.resp.Header.Add("Set-Cookie", done.String())
		return a
	}
	code := issuedCode{ID: randomText(18), ProviderCode: providerCode, Verifier: st.Verifier, Client: req.Client, Redirect: req.Redirect,
		Challenge: req.Challenge, Resource: req.Resource, Expires: p.now().Add(codeTTL).Unix()}
	sealed, err := p.seal(ctx, purposeCode, endpoint, code)
	if err != nil {
		return sealFailed(err)
	}
	out := url.Values{"code": {sealed}, "iss": {endpoint}}
	if req.State != "" {
		out.Set("state", req.State)
	}
	return proxyAnswer{resp: redirect(withQuery(req.Redirect, out), []*http.Cookie{done})}
}

// tokenError is a token endpoint refusal (RFC 6749 section 5.2).
func tokenError(status int, code string, err error) proxyAnswer {
	b, _ := json.Marshal(map[string]string{"error": code})
	h := http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}}
	if status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
	}
	return proxyAnswer{resp: &stateless.Response{Status: status, Header: h, Body: b}, kind: code, err: err}
}

// tokenErrors are the provider's token errors that pass to the client as
// they are; any other is invalid_grant.
var tokenErrors = []string{"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope", "invalid_target"}

// parseForm reads an application/x-www-form-urlencoded body strictly: no
// parameter twice (RFC 6749 section 3.2), within MaxProxyFormBytes.
func parseForm(r *stateless.Request) (url.Values, error) {
	if len(r.Body) > MaxProxyFormBytes {
		return nil, errors.New("the body is too long")
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/x-www-form-urlencoded") {
		return nil, errors.New("the body is not a form (application/x-www-form-urlencoded)")
	}
	v, err := url.ParseQuery(string(r.Body))
	if err != nil {
		return nil, errors.New("the body is not a well-formed form")
	}
	for _, vs := range v {
		if len(vs) > 1 {
			return nil, errors.New("a parameter is repeated")
		}
	}
	return v, nil
}

// token answers POST /mcp/token.
func (p *Proxy) token(ctx context.Context, r *stateless.Request, endpoint string) proxyAnswer {
	form, err := parseForm(r)
	if err != nil {
		return tokenError(http.StatusBadRequest, "invalid_request", err)
	}
	if err := basicClient(r, form); err != nil {
		return tokenError(http.StatusUnauthorized, "invalid_client", err)
	}
	switch form.Get("grant_type") {
	case "authorization_code":
		return p.redeem(ctx, endpoint, form)
	case "refresh_token":
		if form.Get("refresh_token") == "" || !validScope(form.Get("scope")) || form.Get("client_id") == "" {
			return tokenError(http.StatusBadRequest, "invalid_request", errors.New("refresh_token, client_id and a well-formed scope are needed"))
		}
		if res := form.Get("resource"); res != "" && res != endpoint {
			return tokenError(http.StatusBadRequest, "invalid_target", errors.New("resource is not this endpoint"))
		}
		up := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {form.Get("refresh_token")}}
		if s := form.Get("scope"); s != "" {
			up.Set("scope", s)
		}
		return p.exchange(ctx, endpoint, up)
	}
	return tokenError(http.StatusBadRequest, "unsupported_grant_type", errors.New("grant_type is neither authorization_code nor refresh_token"))
}

// basicClient takes the client id of a public client that sends it in
// HTTP Basic with an empty password (RFC 6749 section 2.3.1, as
// golang.org/x/oauth2 tries first) into form's client_id: the proxy's
// clients have no secret, so a password is refused, and so is an id that
// differs from the form's.
func basicClient(r *stateless.Request, form url.Values) error {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil
	}
	hr := http.Request{Header: http.Header{"Authorization": {h}}}
	user, pass, ok := hr.BasicAuth()
	if !ok {
		return errors.New("the Authorization header is not HTTP Basic")
	}
	id, err := url.QueryUnescape(user)
	switch {
	case err != nil:
		return errors.New("the Basic user is not form-encoded")
	case pass != "":
		return errors.New("the proxy's clients are public: a client secret is not accepted")
	case form.Get("client_id") != "" && form.Get("client_id") != id:
		return errors.New("client_id differs from the Basic user")
	}
	form.Set("client_id", id)
	return nil
}

// redeem answers a token request with a code of the proxy's.
func (p *Proxy) redeem(ctx context.Context, endpoint string, form url.Values) proxyAnswer {
	var c issuedCode
	if err := p.open(ctx, purposeCode, endpoint, form.Get("code"), &c, &c.Expires); err != nil {
		if errors.Is(err, reqstate.ErrUnavailable) {
			return tokenError(http.StatusServiceUnavailable, "temporarily_unavailable", err)
		}
		return tokenError(http.StatusBadRequest, "invalid_grant", err)
	}
	v := form.Get("code_verifier")
	switch {
	case form.Get("client_id") != c.Client:
		return tokenError(http.StatusBadRequest, "invalid_grant", errors.New("the code was issued to another client"))
	case form.Get("redirect_uri") != c.Redirect:
		return tokenError(http.StatusBadRequest, "invalid_grant", errors.New("redirect_uri is not the authorization request's"))
	case !validVerifier(v) || subtle.ConstantTimeCompare([]byte(challengeOf(v)), []byte(c.Challenge)) != 1:
		return tokenError(http.StatusBadRequest, "invalid_grant", errors.New("code_verifier does not match the code challenge"))
	case form.Get("resource") != "" && form.Get("resource") != endpoint:
		return tokenError(http.StatusBadRequest, "invalid_target", errors.New("resource is not this endpoint"))
	}
	first, err := p.Codes.SpendOnce(ctx, "oauth-code#"+c.ID, time.Unix(c.Expires, 0).Add(time.Minute))
	switch {
	case err != nil:
		return tokenError(http.StatusServiceUnavailable, "temporarily_unavailable", fmt.Errorf("auth: proxy: spending the code: %w", err))
	case !first:
		return tokenError(http.StatusBadRequest, "invalid_grant", errors.New("the code was used before"))
	}
	return p.exchange(ctx, endpoint, url.Values{"grant_type": {"authorization_code"}, "code": {c.ProviderCode},
		"redirect_uri": {callbackURL(endpoint)}, "code_verifier": {c.Verifier}})
}

// maxTokenResponse bounds the provider's token response.
const maxTokenResponse = 64 << 10

// exchange makes a token request of the provider with the endpoint's
// client and answers what the provider answered: its tokens, or its
// refusal's code (no description).
func (p *Proxy) exchange(ctx context.Context, endpoint string, form url.Values) proxyAnswer {
	if !p.OmitResource {
		form.Set("resource", endpoint)
	}
	ctx, cancel := context.WithTimeout(ctx, ProxyTimeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, p.TokenEndpoint, nil)
	if err != nil {
		return tokenError(http.StatusInternalServerError, "server_error", err)
	}
	hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	hr.Header.Set("Accept", "application/json")
	if p.ClientSecret != nil {
		secret, err := p.ClientSecret(ctx)
		if err != nil {
			return tokenError(http.StatusServiceUnavailable, "temporarily_unavailable", fmt.Errorf("auth: proxy: the client secret: %w", err))
		}
		hr.SetBasicAuth(url.QueryEscape(p.ClientID), url.QueryEscape(secret))
	} else {
		form.Set("client_id", p.ClientID)
	}
	body := form.Encode()
	hr.Body = io.NopCloser(strings.NewReader(body))
	hr.ContentLength = int64(len(body))
	client := p.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: ProxyTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := client.Do(hr)
	if err != nil {
		return tokenError(http.StatusServiceUnavailable, "temporarily_unavailable", fmt.Errorf("auth: proxy: the provider's token endpoint: %w", err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse+1))
	if err != nil || len(b) > maxTokenResponse {
		return tokenError(http.StatusServiceUnavailable, "temporarily_unavailable", errors.New("auth: proxy: the provider's token response did not arrive whole"))
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		var tok struct {
			AccessToken string `json:"access_token"`
			TokenType   string `json:"token_type"`
		}
		if err := jsonv2.Unmarshal(b, &tok, jsonv2.RejectUnknownMembers(false)); err != nil || tok.AccessToken == "" || !strings.EqualFold(tok.TokenType, "bearer") {
			return tokenError(http.StatusBadGateway, "server_error", errors.New("auth: proxy: the provider's token response is not a bearer token"))
		}
		return proxyAnswer{resp: &stateless.Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}, "Pragma": {"no-cache"}}, Body: b}}
	case resp.StatusCode >= 500:
		return tokenError(http.StatusServiceUnavailable, "temporarily_unavailable", fmt.Errorf("auth: proxy: the provider's token endpoint answered %d", resp.StatusCode))
	}
	var e struct {
		Error string `json:"error"`
	}
	_ = jsonv2.Unmarshal(b, &e, jsonv2.RejectUnknownMembers(false))
	code := "invalid_grant"
	if slices.Contains(tokenErrors, e.Error) {
		code = e.Error
	}
	return tokenError(http.StatusBadRequest, code, fmt.Errorf("auth: proxy: the provider refused the token request: %s (%d)", code, resp.StatusCode))
}
