package auth

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// The authorization proxy's tests. They are inside the package for its
// sealed values' purposes and its decoders; every flow goes through
// Documents.Handler as a door sends it, with a simulated browser (a
// cookie jar of the test's) and a fake provider whose authorization
// endpoint is never called (the browser's visit there is simulated) and
// whose token endpoint answers what the test sets. Their helpers are
// prefixed px, so as not to meet the names of the package's other files.

const (
	// pxHTTPS is the endpoint of the cookie-prefix cases (__Host-, Secure);
	// pxPlain a local one, whose cookies have neither.
	pxHTTPS = "https://mcp.example.com/mcp"
	pxPlain = "http://127.0.0.1:8976/mcp"
	// pxClientID is the endpoint's own client at the provider.
	pxClientID = "proxy-client-4f1b2c"
	// pxLoopback and pxAppRedirect are the redirect URIs the tests' clients
	// declare; pxAppRedirect is also one the proxy accepts for registered
	// clients.
	pxLoopback    = "http://127.0.0.1:33418/callback"
	pxAppRedirect = "https://app.example.com/oauth/callback"
	pxScope       = "notes:read notes:write"
	// pxMarker is planted in everything the peer sends that may come back
	// in some form (state, client_name, scope, redirect_uri): no answer
	// may carry it raw, unescaped.
	pxMarker = `MARKER<script>"'`
	// pxSecret is planted where nothing may pass at all, in any form: an
	// unknown parameter, the provider's error descriptions.
	pxSecret = "PXSECRET7f3a"
)

// pxKey is the tests' sealing key, fixed so that FuzzSealedValues' seeds
// are real sealed values.
var pxKey = []byte("px-test-sealing-key-0123456789ab")

// pxSpender is an in-memory Spender that can be made to fail.
type pxSpender struct {
	mu    sync.Mutex
	spent map[string]time.Time
	err   error
}

func (s *pxSpender) SpendOnce(_ context.Context, name string, until time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false, s.err
	}
	if _, ok := s.spent[name]; ok {
		return false, nil
	}
	if s.spent == nil {
		s.spent = map[string]time.Time{}
	}
	s.spent[name] = until
	return true, nil
}

// pxSealer is the tests' sealer, which fails as a key service that cannot
// be reached when fail is set.
type pxSealer struct {
	reqstate.Sealer
	fail atomic.Bool
}

func (s *pxSealer) Seal(ctx context.Context, b reqstate.Binding, state []byte) (string, error) {
	if s.fail.Load() {
		return "", fmt.Errorf("%w: the test's key service is down", reqstate.ErrUnavailable)
	}
	return s.Sealer.Seal(ctx, b, state)
}

func (s *pxSealer) Open(ctx context.Context, b reqstate.Binding, token string) ([]byte, error) {
	if s.fail.Load() {
		return nil, fmt.Errorf("%w: the test's key service is down", reqstate.ErrUnavailable)
	}
	return s.Sealer.Open(ctx, b, token)
}

// pxProviderToken is what the fake provider's token endpoint answers by
// default.
const pxProviderToken = `{"access_token":"at-1","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-1","scope":"notes:read notes:write"}`

// pxProvider is the fake provider: its token endpoint records every
// request and answers status and body.
type pxProvider struct {
	srv *httptest.Server

	mu             sync.Mutex
	status         int
	body           string
	forms          []url.Values
	auths          []string // the token requests' Authorization headers
	authorizeCalls int
}

func (pv *pxProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	switch r.URL.Path {
	case "/authorize":
		pv.authorizeCalls++
		http.Error(w, "the browser is simulated", http.StatusTeapot)
	case "/token":
		b, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(b))
		pv.forms = append(pv.forms, form)
		pv.auths = append(pv.auths, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(pv.status)
		_, _ = io.WriteString(w, pv.body)
	default:
		http.NotFound(w, r)
	}
}

// answer makes the token endpoint answer status and body from now on.
func (pv *pxProvider) answer(status int, body string) {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	pv.status, pv.body = status, body
}

// calls is how many token requests the provider saw.
func (pv *pxProvider) calls() int {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	return len(pv.forms)
}

// authorizations is how many times the provider's authorization endpoint
// was called: never, the browser's visit there is simulated.
func (pv *pxProvider) authorizations() int {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	return pv.authorizeCalls
}

// last is the last token request's form and Authorization header.
func (pv *pxProvider) last() (url.Values, string) {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	if len(pv.forms) == 0 {
		return nil, ""
	}
	return pv.forms[len(pv.forms)-1], pv.auths[len(pv.auths)-1]
}

// pxDocs serves client ID metadata documents over TLS on 127.0.0.1:
// /client.json and /other.json are valid documents for their URLs
// (client.json's name carries the marker), anything else 404.
type pxDocs struct{ srv *httptest.Server }

func newPxDocs(t testing.TB) *pxDocs {
	d := &pxDocs{}
	d.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := map[string]string{"/client.json": pxMarker, "/other.json": "Other app"}[r.URL.Path]
		if name == "" {
			http.NotFound(w, r)
			return
		}
		b, _ := json.Marshal(map[string]any{
			"client_id":     "https://" + r.Host + r.URL.Path,
			"client_name":   name,
			"redirect_uris": []string{pxLoopback, pxAppRedirect},
			"grant_types":   []string{"authorization_code", "refresh_token"},
		})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}))
	d.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	d.srv.StartTLS()
	t.Cleanup(d.srv.Close)
	return d
}

func (d *pxDocs) roots() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(d.srv.Certificate())
	return p
}

// id is the client id of the document at path.
func (d *pxDocs) id(path string) string { return d.srv.URL + path }

// pxRig is a proxy for endpoint with everything it talks to.
type pxRig struct {
	endpoint string
	clk      *cimdClock
	sealer   *pxSealer
	codes    *pxSpender
	prov     *pxProvider
	docSrv   *pxDocs
	proxy    *Proxy
	docs     *Documents
	handler  http.Handler

	mu       sync.Mutex
	outcomes []pxOutcome
	// badGateway lets a test expect the one 5xx other than 503 the proxy
	// gives: a provider's 200 that is not a bearer token.
	badGateway bool
}

// newPxRig is a proxy for endpoint, changed by change when it is set
// (before any request). Its clock starts at the present, truncated to the
// second, so that sealed values' own times and the proxy's agree.
func newPxRig(t testing.TB, endpoint string, change func(r *pxRig)) *pxRig {
	t.Helper()
	r := &pxRig{endpoint: endpoint, clk: &cimdClock{t: time.Now().Truncate(time.Second)}, codes: &pxSpender{}}
	r.sealer = &pxSealer{Sealer: reqstate.NewLocal(pxKey, &reqstate.LocalOptions{Now: r.clk.Now})}
	r.prov = &pxProvider{status: http.StatusOK, body: pxProviderToken}
	r.prov.srv = httptest.NewServer(r.prov)
	t.Cleanup(r.prov.srv.Close)
	r.docSrv = newPxDocs(t)
	r.proxy = &Proxy{
		ClientID:              pxClientID,
		AuthorizationEndpoint: r.prov.srv.URL + "/authorize",
		TokenEndpoint:         r.prov.srv.URL + "/token",
		Issuer:                r.prov.srv.URL,
		RedirectURIs:          []string{pxAppRedirect},
		Sealer:                r.sealer,
		Codes:                 r.codes,
		Documents:             &ClientMetadataDocuments{PrivateHosts: []string{"127.0.0.1"}, RootCAs: r.docSrv.roots(), Now: r.clk.Now},
		Now:                   r.clk.Now,
	}
	if change != nil {
		change(r)
	}
	srv := stateless.NewServer(stateless.Implementation{Name: "px", Version: "1"}, &stateless.Options{Observe: r.observe})
	r.docs = &Documents{Server: srv, Resource: &Resource{ScopesSupported: []string{"notes:read", "notes:write"}, Proxy: r.proxy}}
	r.handler = r.docs.Handler(endpoint)
	t.Cleanup(func() {
		if c := r.proxy.Documents; c != nil && c.client != nil {
			c.client.CloseIdleConnections()
		}
	})
	return r
}

// pxOutcome is what the tests read of an answer's report.
type pxOutcome struct {
	Method    string
	OwnMethod bool
	Status    int
	Kind      string
	Err       error
}

func (r *pxRig) observe(_ context.Context, o *stateless.Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes = append(r.outcomes, pxOutcome{o.Method, o.OwnMethod, o.Status, o.Kind, o.Err})
}

// lastOutcome is the report of the last answer.
func (r *pxRig) lastOutcome() pxOutcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.outcomes) == 0 {
		return pxOutcome{}
	}
	return r.outcomes[len(r.outcomes)-1]
}

// path is the endpoint's path followed by suffix.
func (r *pxRig) path(suffix string) string {
	u, _ := url.Parse(r.endpoint)
	return strings.TrimSuffix(u.Path, "/") + suffix
}

// pxJar is a browser's cookie jar: it keeps what Set-Cookie sets (and
// forgets what it expires), and sends it all back, with raw foreign
// cookies (other applications' on the same host) first.
type pxJar struct {
	cookies map[string]*http.Cookie
	foreign []string
}

func newPxJar() *pxJar { return &pxJar{cookies: map[string]*http.Cookie{}} }

func (j *pxJar) apply(h http.Header) {
	for _, line := range h.Values("Set-Cookie") {
		c, err := http.ParseSetCookie(line)
		if err != nil {
			continue
		}
		if c.MaxAge < 0 {
			delete(j.cookies, c.Name)
			continue
		}
		j.cookies[c.Name] = c
	}
}

func (j *pxJar) header() string {
	names := make([]string, 0, len(j.cookies))
	for n := range j.cookies {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := slices.Clone(j.foreign)
	for _, n := range names {
		parts = append(parts, n+"="+j.cookies[n].Value)
	}
	return strings.Join(parts, "; ")
}

// clone is a copy of j (another browser with the same cookies).
func (j *pxJar) clone() *pxJar {
	c := newPxJar()
	for n, v := range j.cookies {
		c.cookies[n] = v
	}
	c.foreign = slices.Clone(j.foreign)
	return c
}

// pxAnswer is an answer as the browser or the client sees it.
type pxAnswer struct {
	status int
	header http.Header
	body   string
}

// location is the answer's Location, parsed; nil when there is none.
func (a *pxAnswer) location(t testing.TB) *url.URL {
	t.Helper()
	l := a.header.Get("Location")
	if l == "" {
		return nil
	}
	u, err := url.Parse(l)
	if err != nil {
		t.Fatalf("Location %q: %v", l, err)
	}
	return u
}

// setCookie is the cookie the answer sets whose name starts with prefix.
func (a *pxAnswer) setCookie(prefix string) *http.Cookie {
	for _, line := range a.header.Values("Set-Cookie") {
		if c, err := http.ParseSetCookie(line); err == nil && strings.HasPrefix(c.Name, prefix) {
			return c
		}
	}
	return nil
}

// send sends a request to the endpoint's path followed by suffix through
// the documents' handler, with jar's cookies (nil: none), and checks what
// every answer must be: nothing of pxMarker raw and nothing of pxSecret
// in any form in its body or headers, and no 5xx but 503.
func (r *pxRig) send(t testing.TB, method, suffix, query, body string, header http.Header, jar *pxJar) *pxAnswer {
	t.Helper()
	hr := httptest.NewRequest(method, "http://mcp.example.com/", strings.NewReader(body))
	hr.URL.Path, hr.URL.RawQuery = r.path(suffix), query
	for k, vs := range header {
		hr.Header[k] = vs
	}
	if jar != nil {
		if c := jar.header(); c != "" {
			hr.Header.Set("Cookie", c)
		}
	}
	w := httptest.NewRecorder()
	r.handler.ServeHTTP(w, hr)
	a := &pxAnswer{status: w.Code, header: w.Result().Header, body: w.Body.String()}
	pxClean(t, a)
	if a.status >= 500 && a.status != http.StatusServiceUnavailable && (a.status != http.StatusBadGateway || !r.badGateway) {
		t.Errorf("%s %s: %d, a 5xx other than 503: %s", method, suffix, a.status, a.body)
	}
	if jar != nil {
		jar.apply(a.header)
	}
	return a
}

// pxClean checks that a repeats neither marker.
func pxClean(t testing.TB, a *pxAnswer) {
	t.Helper()
	texts := []string{a.body}
	for k, vs := range a.header {
		for _, v := range vs {
			texts = append(texts, k+": "+v)
		}
	}
	for _, s := range texts {
		if strings.Contains(s, pxMarker) {
			t.Errorf("the answer repeats the peer's marker raw: %.300q", s)
		}
		// Decoded too: pxSecret may not pass even escaped.
		decoded, err := url.QueryUnescape(s)
		if err != nil {
			decoded = s
		}
		if strings.Contains(strings.ToUpper(s), pxSecret) || strings.Contains(strings.ToUpper(decoded), pxSecret) {
			t.Errorf("the answer repeats what must not pass at all: %.300q", s)
		}
	}
}

// register registers a client (POST <endpoint>/register) and returns its
// client id.
func (r *pxRig) register(t testing.TB, name string, redirects ...string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": redirects, "grant_types": []string{"authorization_code", "refresh_token"}})
	a := r.send(t, http.MethodPost, RegistrationSuffix, "", string(b), http.Header{"Content-Type": {"application/json"}}, nil)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if err := json.Unmarshal([]byte(a.body), &reg); a.status != http.StatusCreated || err != nil || !strings.HasPrefix(reg.ClientID, dcrPrefix) {
		t.Fatalf("registration: %d %s", a.status, a.body)
	}
	return reg.ClientID
}

// pxVerifier is a fresh PKCE verifier of a client's.
func pxVerifier() string { return randomText(32) }

// pxDel deletes a parameter in pxQuery.
const pxDel = "\x00delete"

// pxQuery is a valid authorization request of client for redirect with
// verifier's challenge, with changes (pxDel deletes).
func (r *pxRig) pxQuery(client, redirect, verifier string, changes map[string]string) url.Values {
	q := url.Values{
		"client_id":             {client},
		"redirect_uri":          {redirect},
		"response_type":         {"code"},
		"code_challenge":        {challengeOf(verifier)},
		"code_challenge_method": {"S256"},
		"state":                 {pxMarker},
		"scope":                 {pxScope},
		"resource":              {r.endpoint},
	}
	for k, v := range changes {
		if v == pxDel {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
	}
	return q
}

func (r *pxRig) authorize(t testing.TB, q url.Values, jar *pxJar) *pxAnswer {
	t.Helper()
	return r.send(t, http.MethodGet, AuthorizeSuffix, q.Encode(), "", nil, jar)
}

var (
	pxTicketField = regexp.MustCompile(`name="ticket" value="([^"]*)"`)
	pxCSRFField   = regexp.MustCompile(`name="csrf" value="([^"]*)"`)
)

// pxForm is the consent page's ticket and CSRF token.
func pxForm(t testing.TB, a *pxAnswer) (ticket, csrf string) {
	t.Helper()
	tm, cm := pxTicketField.FindStringSubmatch(a.body), pxCSRFField.FindStringSubmatch(a.body)
	if a.status != http.StatusOK || tm == nil || cm == nil {
		t.Fatalf("not a consent page: %d %s", a.status, a.body)
	}
	return tm[1], cm[1]
}

// consentHeader is the header of the consent page's own form post.
func (r *pxRig) consentHeader() http.Header {
	return http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {originOf(r.endpoint)}, "Sec-Fetch-Site": {"same-origin"}}
}

// decide posts the consent form with the page's ticket and CSRF token,
// changed by changes (pxDel deletes), and header (nil: the page's own).
func (r *pxRig) decide(t testing.TB, jar *pxJar, ticket, csrf, decision string, changes map[string]string, header http.Header) *pxAnswer {
	t.Helper()
	form := url.Values{"ticket": {ticket}, "csrf": {csrf}, "decision": {decision}}
	for k, v := range changes {
		if v == pxDel {
			form.Del(k)
		} else {
			form.Set(k, v)
		}
	}
	if header == nil {
		header = r.consentHeader()
	}
	return r.send(t, http.MethodPost, AuthorizeSuffix, "", form.Encode(), header, jar)
}

// toProvider runs an authorization request in jar's browser up to the
// provider: through the consent page, approved, when it is shown. It
// returns the URL the browser is sent to, checked to be the provider's.
func (r *pxRig) toProvider(t testing.TB, q url.Values, jar *pxJar) *url.URL {
	t.Helper()
	a := r.authorize(t, q, jar)
	if a.status == http.StatusOK {
		ticket, csrf := pxForm(t, a)
		a = r.decide(t, jar, ticket, csrf, "approve", nil, nil)
		if a.status != http.StatusSeeOther {
			t.Fatalf("approval: %d %s", a.status, a.body)
		}
	} else if a.status != http.StatusFound {
		t.Fatalf("authorization request: %d %v %s", a.status, a.header, a.body)
	}
	u := a.location(t)
	if u == nil || !strings.HasPrefix(u.String(), r.proxy.AuthorizationEndpoint+"?") {
		t.Fatalf("sent to %v, not the provider", u)
	}
	return u
}

// callback is the provider's answer to the browser, which it sends to the
// proxy's callback: q, and the provider's iss.
func (r *pxRig) callback(t testing.TB, jar *pxJar, q url.Values) *pxAnswer {
	t.Helper()
	if !q.Has("iss") {
		q.Set("iss", r.proxy.Issuer)
	}
	return r.send(t, http.MethodGet, CallbackSuffix, q.Encode(), "", nil, jar)
}

// pxCode is a code the proxy issued to a client, with what the client
// redeems it with.
type pxCode struct {
	code, client, redirect, verifier string
	// upstream is the provider URL the browser was sent to.
	upstream *url.URL
}

var pxProviderCodes atomic.Int32

// flow runs a whole authorization in jar's browser, for client and
// redirect, to the code the client receives.
func (r *pxRig) flow(t testing.TB, jar *pxJar, client, redirect string) pxCode {
	t.Helper()
	v := pxVerifier()
	up := r.toProvider(t, r.pxQuery(client, redirect, v, nil), jar)
	a := r.callback(t, jar, url.Values{"code": {fmt.Sprintf("provider-code-%d", pxProviderCodes.Add(1))}, "state": {up.Query().Get("state")}})
	u := a.location(t)
	if a.status != http.StatusFound || u == nil {
		t.Fatalf("callback: %d %s", a.status, a.body)
	}
	code := u.Query().Get("code")
	if code == "" {
		t.Fatalf("callback: no code in %s", u)
	}
	return pxCode{code: code, client: client, redirect: redirect, verifier: v, upstream: up}
}

// redeem is c's token request, with changes (pxDel deletes) and header.
func (r *pxRig) redeem(t testing.TB, c pxCode, changes map[string]string, header http.Header) *pxAnswer {
	t.Helper()
	form := url.Values{"grant_type": {"authorization_code"}, "code": {c.code}, "client_id": {c.client}, "redirect_uri": {c.redirect}, "code_verifier": {c.verifier}}
	for k, v := range changes {
		if v == pxDel {
			form.Del(k)
		} else {
			form.Set(k, v)
		}
	}
	return r.token(t, form.Encode(), header)
}

// token posts body to the token endpoint as a form, with header.
func (r *pxRig) token(t testing.TB, body string, header http.Header) *pxAnswer {
	t.Helper()
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	for k, vs := range header {
		h[k] = vs
	}
	return r.send(t, http.MethodPost, TokenSuffix, "", body, h, nil)
}

// wantPage checks that a is a page of the proxy's with status: no
// redirect.
func wantPage(t testing.TB, a *pxAnswer, status int) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.body)
	}
	if l := a.header.Get("Location"); l != "" {
		t.Fatalf("a page with a Location: %s", l)
	}
	if ct := a.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if csp := a.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if a.header.Get("X-Frame-Options") != "DENY" || a.header.Get("Cache-Control") != "no-store" {
		t.Errorf("header %v", a.header)
	}
}

// wantClientError checks that a sends the browser to redirect (the
// client's) with error code, the client's state when it sent one, and
// the endpoint's iss.
func wantClientError(t testing.TB, a *pxAnswer, status int, redirect, code, state, endpoint string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %v %s", a.status, status, a.header, a.body)
	}
	u := a.location(t)
	if u == nil {
		t.Fatal("no Location")
	}
	q := u.Query()
	base := *u
	base.RawQuery = ""
	if want, _ := url.Parse(redirect); base.String() != want.String() {
		t.Errorf("sent to %s, want the client's %s", &base, redirect)
	}
	if q.Get("error") != code || q.Get("iss") != endpoint || q.Get("state") != state || q.Has("state") != (state != "") {
		t.Errorf("sent %v, want error=%s, iss=%s and state %q", q, code, endpoint, state)
	}
	if q.Has("code") || q.Has("error_description") {
		t.Errorf("sent %v: a code or a description with an error", q)
	}
	if a.header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", a.header.Get("Cache-Control"))
	}
}

// wantTokenError checks a token endpoint refusal.
func wantTokenError(t testing.TB, a *pxAnswer, status int, code string) {
	t.Helper()
	var e map[string]any
	if err := json.Unmarshal([]byte(a.body), &e); err != nil || a.status != status || e["error"] != code {
		t.Fatalf("%d %s, want %d with error %s", a.status, a.body, status, code)
	}
	if len(e) != 1 {
		t.Errorf("the refusal says more than its code: %s", a.body)
	}
	if a.header.Get("Content-Type") != "application/json" || a.header.Get("Cache-Control") != "no-store" {
		t.Errorf("header %v", a.header)
	}
	if status == http.StatusServiceUnavailable && a.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
}

// TestProxyAuthorizationRequest: an authorization request is answered by
// a page when its client or redirect URI is at fault (never a redirect to
// a URI not known good), by the consent page when valid, and by a
// redirect to the client with error, state and iss when its other
// parameters are at fault.
func TestProxyAuthorizationRequest(t *testing.T) {
	r := newPxRig(t, pxHTTPS, nil)
	dcr := r.register(t, pxMarker, pxLoopback, pxAppRedirect)
	doc := r.docSrv.id("/client.json")
	v := pxVerifier()
	long := strings.Repeat("a", maxParam+1)
	evil := "https://evil.example/cb?x=" + pxMarker
	type c struct {
		name   string
		query  string
		status int    // the answer's status
		kind   string // the answer's reported kind
		// redirect, when set, is where the error goes (the client's), with
		// error kind.
		redirect string
		state    string
	}
	q := func(client, redirect string, changes map[string]string) string {
		return r.pxQuery(client, redirect, v, changes).Encode()
	}
	cases := []c{
		{name: "missing client_id", query: q(dcr, pxLoopback, map[string]string{"client_id": pxDel}), status: 400, kind: "invalid_client"},
		{name: "unknown client id", query: q("some-client", pxLoopback, nil), status: 400, kind: "invalid_client"},
		{name: "marker as client id", query: q(pxMarker, pxLoopback, nil), status: 400, kind: "invalid_client"},
		{name: "registered id not decodable", query: q(dcrPrefix+"!!"+pxMarker, pxLoopback, nil), status: 400, kind: "invalid_client"},
		{name: "registered id with a redirect not accepted", query: q(encodeRegistered(registered{RedirectURIs: []string{evil}, Name: pxMarker}), evil, nil), status: 400, kind: "invalid_client"},
		{name: "document not found", query: q(r.docSrv.id("/missing.json"), pxLoopback, nil), status: 400, kind: "invalid_client"},
		{name: "http client id", query: q("http://127.0.0.1/client.json", pxLoopback, nil), status: 400, kind: "invalid_client"},
		{name: "repeated parameter", query: q(dcr, pxLoopback, nil) + "&state=again", status: 400, kind: "invalid_request"},
		{name: "repeated client_id", query: q(dcr, pxLoopback, nil) + "&client_id=" + url.QueryEscape(dcr), status: 400, kind: "invalid_request"},
		{name: "repeated redirect_uri", query: q(dcr, pxLoopback, nil) + "&redirect_uri=" + url.QueryEscape(evil), status: 400, kind: "invalid_request"},
		{name: "over-long parameter", query: q(dcr, pxLoopback, map[string]string{"state": long}), status: 400, kind: "invalid_request"},
		{name: "over-long parameter name", query: q(dcr, pxLoopback, map[string]string{strings.Repeat("x", 65): "1"}), status: 400, kind: "invalid_request"},
		{name: "malformed query", query: q(dcr, pxLoopback, nil) + "&%zz=1", status: 400, kind: "invalid_request"},
		{name: "missing redirect_uri", query: q(dcr, pxLoopback, map[string]string{"redirect_uri": pxDel}), status: 400, kind: "invalid_redirect_uri"},
		{name: "redirect_uri not declared", query: q(dcr, evil, nil), status: 400, kind: "invalid_redirect_uri"},
		{name: "declared redirect with a slash more", query: q(dcr, pxAppRedirect+"/", nil), status: 400, kind: "invalid_redirect_uri"},
		{name: "declared https redirect on another port", query: q(dcr, "https://app.example.com:8443/oauth/callback", nil), status: 400, kind: "invalid_redirect_uri"},
		{name: "loopback with another path", query: q(dcr, "http://127.0.0.1:5555/other", nil), status: 400, kind: "invalid_redirect_uri"},
		{name: "loopback with another host", query: q(dcr, "http://localhost:33418/callback", nil), status: 400, kind: "invalid_redirect_uri"},
		{name: "loopback on https", query: q(dcr, "https://127.0.0.1:33418/callback", nil), status: 400, kind: "invalid_redirect_uri"},
		{name: "loopback with a fragment", query: q(dcr, pxLoopback+"#"+pxMarker, nil), status: 400, kind: "invalid_redirect_uri"},
		{name: "loopback with user info", query: q(dcr, "http://u@127.0.0.1:33418/callback", nil), status: 400, kind: "invalid_redirect_uri"},
		{name: "loopback with a query", query: q(dcr, pxLoopback+"?x="+pxMarker, nil), status: 400, kind: "invalid_redirect_uri"},
		{name: "document client, redirect not declared", query: q(doc, evil, nil), status: 400, kind: "invalid_redirect_uri"},

		{name: "valid", query: q(dcr, pxLoopback, nil), status: 200, kind: "consent_required"},
		{name: "loopback with another port (RFC 8252)", query: q(dcr, "http://127.0.0.1:5555/callback", nil), status: 200, kind: "consent_required"},
		{name: "loopback without a port", query: q(dcr, "http://127.0.0.1/callback", nil), status: 200, kind: "consent_required"},
		{name: "declared https redirect", query: q(dcr, pxAppRedirect, nil), status: 200, kind: "consent_required"},
		{name: "document client", query: q(doc, pxAppRedirect, nil), status: 200, kind: "consent_required"},
		{name: "document client, loopback with another port", query: q(doc, "http://127.0.0.1:1/callback", nil), status: 200, kind: "consent_required"},
		{name: "no state, scope or resource", query: q(dcr, pxLoopback, map[string]string{"state": pxDel, "scope": pxDel, "resource": pxDel}), status: 200, kind: "consent_required"},
		{name: "unknown parameter", query: q(dcr, pxLoopback, map[string]string{"x-" + pxSecret: pxSecret}), status: 200, kind: "consent_required"},

		{name: "response_type token", query: q(dcr, pxLoopback, map[string]string{"response_type": "token"}), status: 302, kind: "unsupported_response_type", redirect: pxLoopback, state: pxMarker},
		{name: "response_type missing", query: q(dcr, pxLoopback, map[string]string{"response_type": pxDel}), status: 302, kind: "unsupported_response_type", redirect: pxLoopback, state: pxMarker},
		{name: "response_type code id_token", query: q(dcr, pxLoopback, map[string]string{"response_type": "code id_token"}), status: 302, kind: "unsupported_response_type", redirect: pxLoopback, state: pxMarker},
		{name: "no PKCE", query: q(dcr, pxLoopback, map[string]string{"code_challenge": pxDel, "code_challenge_method": pxDel}), status: 302, kind: "invalid_request", redirect: pxLoopback, state: pxMarker},
		{name: "no code_challenge_method", query: q(dcr, pxLoopback, map[string]string{"code_challenge_method": pxDel}), status: 302, kind: "invalid_request", redirect: pxLoopback, state: pxMarker},
		{name: "plain method", query: q(dcr, pxLoopback, map[string]string{"code_challenge_method": "plain", "code_challenge": v}), status: 302, kind: "invalid_request", redirect: pxLoopback, state: pxMarker},
		{name: "s256 in lower case", query: q(dcr, pxLoopback, map[string]string{"code_challenge_method": "s256"}), status: 302, kind: "invalid_request", redirect: pxLoopback, state: pxMarker},
		{name: "short challenge", query: q(dcr, pxLoopback, map[string]string{"code_challenge": "abc"}), status: 302, kind: "invalid_request", redirect: pxLoopback, state: pxMarker},
		{name: "challenge not base64url", query: q(dcr, pxLoopback, map[string]string{"code_challenge": strings.Repeat("+", 43)}), status: 302, kind: "invalid_request", redirect: pxLoopback, state: pxMarker},
		{name: "challenge padded", query: q(dcr, pxLoopback, map[string]string{"code_challenge": challengeOf(v) + "="}), status: 302, kind: "invalid_request", redirect: pxLoopback, state: pxMarker},
		{name: "resource another endpoint", query: q(dcr, pxLoopback, map[string]string{"resource": "https://other.example.com/mcp"}), status: 302, kind: "invalid_target", redirect: pxLoopback, state: pxMarker},
		{name: "resource with a slash more", query: q(dcr, pxLoopback, map[string]string{"resource": pxHTTPS + "/"}), status: 302, kind: "invalid_target", redirect: pxLoopback, state: pxMarker},
		{name: "scope with two spaces", query: q(dcr, pxLoopback, map[string]string{"scope": "notes:read  notes:write"}), status: 302, kind: "invalid_scope", redirect: pxLoopback, state: pxMarker},
		{name: "scope with a quote", query: q(dcr, pxLoopback, map[string]string{"scope": pxMarker}), status: 302, kind: "invalid_scope", redirect: pxLoopback, state: pxMarker},
		{name: "scope with a leading space", query: q(dcr, pxLoopback, map[string]string{"scope": " notes:read"}), status: 302, kind: "invalid_scope", redirect: pxLoopback, state: pxMarker},
		{name: "scope with a control character", query: q(dcr, pxLoopback, map[string]string{"scope": "notes:read\tx"}), status: 302, kind: "invalid_scope", redirect: pxLoopback, state: pxMarker},
		{name: "error to a loopback with another port", query: q(dcr, "http://127.0.0.1:5555/callback", map[string]string{"response_type": "token"}), status: 302, kind: "unsupported_response_type", redirect: "http://127.0.0.1:5555/callback", state: pxMarker},
		{name: "error without state", query: q(dcr, pxLoopback, map[string]string{"response_type": "token", "state": pxDel}), status: 302, kind: "unsupported_response_type", redirect: pxLoopback},
		{name: "document client, bad scope", query: q(doc, pxAppRedirect, map[string]string{"scope": "a  b"}), status: 302, kind: "invalid_scope", redirect: pxAppRedirect, state: pxMarker},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := r.send(t, http.MethodGet, AuthorizeSuffix, tc.query, "", nil, newPxJar())
			switch {
			case tc.redirect != "":
				wantClientError(t, a, tc.status, tc.redirect, tc.kind, tc.state, r.endpoint)
			case tc.status == http.StatusOK:
				wantPage(t, a, http.StatusOK)
				pxForm(t, a)
			default:
				wantPage(t, a, tc.status)
			}
			if o := r.lastOutcome(); o.Method != MethodAuthorize || !o.OwnMethod || o.Kind != tc.kind || o.Status != tc.status {
				t.Errorf("reported %s %d kind %q, want %s %d kind %q", o.Method, o.Status, o.Kind, MethodAuthorize, tc.status, tc.kind)
			}
		})
	}
	if n := r.prov.authorizations(); n != 0 {
		t.Errorf("the provider's authorization endpoint was called %d times", n)
	}
}

// TestProxyFlow: the whole flow in process, for an https endpoint and a
// registered client, a local endpoint and a client identified by its
// metadata document, a provider that takes no resource and one whose
// client is confidential.
func TestProxyFlow(t *testing.T) {
	type c struct {
		name         string
		endpoint     string
		doc          bool // a metadata-document client, else registered
		redirect     string
		omitResource bool
		secret       bool
		claimsTable  bool
		noState      bool
	}
	for _, tc := range []c{
		{name: "https, registered client, the claims table", endpoint: pxHTTPS, redirect: pxLoopback, claimsTable: true},
		{name: "local, document client", endpoint: pxPlain, doc: true, redirect: pxAppRedirect},
		{name: "https, document client, loopback on another port", endpoint: pxHTTPS, doc: true, redirect: "http://127.0.0.1:49152/callback"},
		{name: "omit resource", endpoint: pxHTTPS, redirect: pxAppRedirect, omitResource: true},
		{name: "confidential client at the provider", endpoint: pxPlain, redirect: pxLoopback, secret: true},
		{name: "no state, no scope", endpoint: pxHTTPS, redirect: pxLoopback, noState: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newPxRig(t, tc.endpoint, func(r *pxRig) {
				r.proxy.OmitResource = tc.omitResource
				if tc.secret {
					r.proxy.ClientSecret = func(context.Context) (string, error) { return "s3cret:&", nil }
				}
				if tc.claimsTable {
					r.proxy.Codes = claims.New(claims.NewMemory(), &claims.Options{Now: r.clk.Now})
				}
			})
			secure := strings.HasPrefix(tc.endpoint, "https://")
			prefix := ""
			if secure {
				prefix = "__Host-"
			}
			client, name := r.register(t, pxMarker, pxLoopback, pxAppRedirect), pxMarker
			if tc.doc {
				client = r.docSrv.id("/client.json")
			}
			jar, v := newPxJar(), pxVerifier()
			changes := map[string]string{}
			state, scope := pxMarker, pxScope
			if tc.noState {
				changes = map[string]string{"state": pxDel, "scope": pxDel}
				state, scope = "", ""
			}

			// The consent page.
			a := r.authorize(t, r.pxQuery(client, tc.redirect, v, changes), jar)
			wantPage(t, a, http.StatusOK)
			csp := a.header.Get("Content-Security-Policy")
			if !strings.Contains(csp, "form-action 'self' "+originOf(r.proxy.AuthorizationEndpoint)) {
				t.Errorf("CSP %q does not let the form go to the provider", csp)
			}
			if !strings.Contains(a.body, `<span id="client-name">`+template.HTMLEscapeString(name)+`</span>`) {
				t.Errorf("the page does not name the client %q, escaped: %s", name, a.body)
			}
			ru, _ := url.Parse(tc.redirect)
			if !strings.Contains(a.body, `<strong id="redirect-host">`+ru.Host+`</strong>`) {
				t.Errorf("the page does not name the redirect's host %s", ru.Host)
			}
			for _, s := range strings.Fields(scope) {
				if !strings.Contains(a.body, "<li><code>"+s+"</code></li>") {
					t.Errorf("the page does not name scope %s", s)
				}
			}
			if tc.doc && !strings.Contains(a.body, "metadata document at "+strings.TrimPrefix(r.docSrv.srv.URL, "https://")) {
				t.Errorf("the page does not say where the client's document is")
			}
			csrfCookie := a.setCookie(prefix + "mcp-csrf")
			if csrfCookie == nil || csrfCookie.SameSite != http.SameSiteStrictMode || !csrfCookie.HttpOnly || csrfCookie.Secure != secure || csrfCookie.Path != "/" {
				t.Errorf("CSRF cookie %v", csrfCookie)
			}
			ticket, csrf := pxForm(t, a)

			// Approval: to the provider.
			a = r.decide(t, jar, ticket, csrf, "approve", nil, nil)
			up := a.location(t)
			if a.status != http.StatusSeeOther || up == nil {
				t.Fatalf("approval: %d %s", a.status, a.body)
			}
			upq := up.Query()
			if got := up.Scheme + "://" + up.Host + up.Path; got != r.proxy.AuthorizationEndpoint {
				t.Errorf("sent to %s, not the provider", got)
			}
			want := map[string]string{"response_type": "code", "client_id": pxClientID, "redirect_uri": tc.endpoint + "/callback", "code_challenge_method": "S256", "scope": scope, "resource": tc.endpoint}
			if tc.omitResource {
				want["resource"] = ""
			}
			for k, w := range want {
				if upq.Get(k) != w || upq.Has(k) != (w != "") {
					t.Errorf("upstream %s=%q, want %q", k, upq.Get(k), w)
				}
			}
			if ch := upq.Get("code_challenge"); !validChallenge(ch) || ch == challengeOf(v) {
				t.Errorf("upstream challenge %q: not the proxy's own S256 challenge", ch)
			}
			if st := upq.Get("state"); !strings.HasPrefix(st, "l1.") || strings.Contains(up.String(), "MARKER") {
				t.Errorf("upstream state %q is not sealed, or the URL carries the client's state", st)
			}
			flow := a.setCookie(prefix + "mcp-flow-")
			if flow == nil || !flow.HttpOnly || flow.Secure != secure || flow.SameSite != http.SameSiteLaxMode || flow.Path != "/" || flow.Domain != "" || flow.MaxAge != int(flowTTL/time.Second) {
				t.Errorf("flow cookie %v", flow)
			}
			if consent := a.setCookie(prefix + "mcp-consent"); consent == nil || !consent.HttpOnly || consent.Secure != secure || consent.SameSite != http.SameSiteLaxMode || consent.Path != "/" {
				t.Errorf("consent cookie %v", consent)
			}
			if c := jar.cookies[prefix+"mcp-csrf"]; c != nil {
				t.Errorf("the CSRF cookie is kept after the approval")
			}

			// The provider's answer: to the client.
			a = r.callback(t, jar, url.Values{"code": {"provider-code-1"}, "state": {upq.Get("state")}})
			cu := a.location(t)
			if a.status != http.StatusFound || cu == nil {
				t.Fatalf("callback: %d %s", a.status, a.body)
			}
			if got := cu.Scheme + "://" + cu.Host + cu.Path; got != tc.redirect {
				t.Errorf("sent to %s, not the client's %s", got, tc.redirect)
			}
			cq := cu.Query()
			if cq.Get("code") == "" || cq.Get("state") != state || cq.Has("state") != (state != "") || cq.Get("iss") != tc.endpoint || len(cq) != 2+len(cq["state"]) {
				t.Errorf("the client gets %v", cq)
			}
			if strings.Contains(cq.Get("code"), "provider-code-1") {
				t.Error("the client sees the provider's code")
			}
			if c := a.setCookie(flow.Name); c == nil || c.MaxAge >= 0 {
				t.Errorf("the flow cookie is not expired: %v", c)
			}

			// The client's token request.
			before := r.prov.calls()
			form := url.Values{"grant_type": {"authorization_code"}, "code": {cq.Get("code")}, "client_id": {client}, "redirect_uri": {tc.redirect}, "code_verifier": {v}}
			a = r.token(t, form.Encode(), nil)
			if a.status != http.StatusOK || a.body != pxProviderToken || a.header.Get("Cache-Control") != "no-store" || a.header.Get("Content-Type") != "application/json" {
				t.Fatalf("token: %d %v %s", a.status, a.header, a.body)
			}
			if r.prov.calls() != before+1 {
				t.Fatalf("the provider saw %d token requests, want 1", r.prov.calls()-before)
			}
			pf, auth := r.prov.last()
			wantUp := map[string]string{"grant_type": "authorization_code", "code": "provider-code-1", "redirect_uri": tc.endpoint + "/callback", "client_id": pxClientID, "resource": tc.endpoint}
			if tc.omitResource {
				wantUp["resource"] = ""
			}
			if tc.secret {
				wantUp["client_id"] = ""
				hr := http.Request{Header: http.Header{"Authorization": {auth}}}
				user, pass, ok := hr.BasicAuth()
				if u, _ := url.QueryUnescape(user); !ok || u != pxClientID {
					t.Errorf("the provider saw Basic user %q", user)
				}
				if p, _ := url.QueryUnescape(pass); p != "s3cret:&" {
					t.Errorf("the provider saw Basic password %q", pass)
				}
			} else if auth != "" {
				t.Errorf("a public client sent Authorization %q", auth)
			}
			for k, w := range wantUp {
				if pf.Get(k) != w || pf.Has(k) != (w != "") {
					t.Errorf("the provider saw %s=%q, want %q", k, pf.Get(k), w)
				}
			}
			if pv := pf.Get("code_verifier"); !validVerifier(pv) || challengeOf(pv) != upq.Get("code_challenge") {
				t.Errorf("the provider saw verifier %q, whose challenge is not the one sent upstream", pv)
			}
			if r.prov.authorizations() != 0 {
				t.Error("the provider's authorization endpoint was called")
			}
			if o := r.lastOutcome(); o.Method != MethodToken || o.Status != http.StatusOK || o.Err != nil {
				t.Errorf("reported %+v", o)
			}
		})
	}
}

// TestProxyToken: the token endpoint's refusals, and what it passes
// through.
func TestProxyToken(t *testing.T) {
	r := newPxRig(t, pxHTTPS, nil)
	client := r.register(t, pxMarker, pxLoopback)
	other := r.register(t, "other", pxLoopback)
	jar := newPxJar()
	basic := func(user, pass string) http.Header {
		return http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(user)+":"+url.QueryEscape(pass)))}}
	}
	type c struct {
		name    string
		changes map[string]string
		header  http.Header
		body    func(c pxCode) string // the request's body, instead of the form
		before  func(t *testing.T)    // before the request (the code was issued)
		status  int
		code    string
		// upstream: the provider sees the request.
		upstream bool
		// retry: a correct request afterwards succeeds (the code was not
		// spent).
		retry bool
	}
	cases := []c{
		{name: "wrong verifier", changes: map[string]string{"code_verifier": pxVerifier()}, status: 400, code: "invalid_grant", retry: true},
		{name: "no verifier", changes: map[string]string{"code_verifier": pxDel}, status: 400, code: "invalid_grant", retry: true},
		{name: "verifier too short", changes: map[string]string{"code_verifier": "abc"}, status: 400, code: "invalid_grant", retry: true},
		{name: "wrong redirect_uri", changes: map[string]string{"redirect_uri": "http://127.0.0.1:5555/callback"}, status: 400, code: "invalid_grant", retry: true},
		{name: "no redirect_uri", changes: map[string]string{"redirect_uri": pxDel}, status: 400, code: "invalid_grant", retry: true},
		{name: "other client_id", changes: map[string]string{"client_id": other}, status: 400, code: "invalid_grant", retry: true},
		{name: "no client_id", changes: map[string]string{"client_id": pxDel}, status: 400, code: "invalid_grant", retry: true},
		{name: "resource another endpoint", changes: map[string]string{"resource": "https://other.example.com/mcp"}, status: 400, code: "invalid_target", retry: true},
		{name: "expired code", before: func(*testing.T) { r.clk.Advance(codeTTL + time.Second) }, status: 400, code: "invalid_grant"},
		{name: "tampered code", body: func(c pxCode) string {
			b := []byte(c.code)
			i := len(b) / 2
			b[i] = map[bool]byte{true: 'B', false: 'A'}[b[i] == 'A']
			return url.Values{"grant_type": {"authorization_code"}, "code": {string(b)}, "client_id": {c.client}, "redirect_uri": {c.redirect}, "code_verifier": {c.verifier}}.Encode()
		}, status: 400, code: "invalid_grant", retry: true},
		{name: "code for another endpoint", body: func(c pxCode) string {
			s, _ := r.proxy.seal(context.Background(), purposeCode, "https://other.example.com/mcp", issuedCode{ID: "x", ProviderCode: "p", Client: c.client, Redirect: c.redirect, Challenge: challengeOf(c.verifier), Expires: r.clk.Now().Add(time.Minute).Unix()})
			return url.Values{"grant_type": {"authorization_code"}, "code": {s}, "client_id": {c.client}, "redirect_uri": {c.redirect}, "code_verifier": {c.verifier}}.Encode()
		}, status: 400, code: "invalid_grant", retry: true},
		{name: "provider state as a code", body: func(c pxCode) string {
			return url.Values{"grant_type": {"authorization_code"}, "code": {c.upstream.Query().Get("state")}, "client_id": {c.client}, "redirect_uri": {c.redirect}, "code_verifier": {c.verifier}}.Encode()
		}, status: 400, code: "invalid_grant", retry: true},
		{name: "repeated parameter", body: func(c pxCode) string {
			return url.Values{"grant_type": {"authorization_code"}, "code": {c.code, c.code}, "client_id": {c.client}, "redirect_uri": {c.redirect}, "code_verifier": {c.verifier}}.Encode()
		}, status: 400, code: "invalid_request", retry: true},
		{name: "malformed form", body: func(c pxCode) string {
			return url.Values{"grant_type": {"authorization_code"}, "code": {c.code}, "client_id": {c.client}, "redirect_uri": {c.redirect}, "code_verifier": {c.verifier}}.Encode() + "&%zz"
		}, status: 400, code: "invalid_request", retry: true},
		{name: "JSON body", header: http.Header{"Content-Type": {"application/json"}}, body: func(c pxCode) string {
			b, _ := json.Marshal(map[string]string{"grant_type": "authorization_code", "code": c.code, "client_id": c.client, "redirect_uri": c.redirect, "code_verifier": c.verifier})
			return string(b)
		}, status: 400, code: "invalid_request", retry: true},
		{name: "no content type", header: http.Header{"Content-Type": nil}, status: 400, code: "invalid_request", retry: true},
		{name: "form too long", changes: map[string]string{"x": strings.Repeat("a", MaxProxyFormBytes)}, status: 400, code: "invalid_request", retry: true},
		{name: "password grant", changes: map[string]string{"grant_type": "password"}, status: 400, code: "unsupported_grant_type", retry: true},
		{name: "no grant_type", changes: map[string]string{"grant_type": pxDel}, status: 400, code: "unsupported_grant_type", retry: true},
		{name: "Basic with an empty password", changes: map[string]string{"client_id": pxDel}, header: basic(client, ""), status: 200, upstream: true},
		{name: "Basic with an empty password and the same client_id", header: basic(client, ""), status: 200, upstream: true},
		{name: "Basic with a password", header: basic(client, "secret"), status: 401, code: "invalid_client", retry: true},
		{name: "Basic of another client", header: basic(other, ""), status: 401, code: "invalid_client", retry: true},
		{name: "Bearer authorization", header: http.Header{"Authorization": {"Bearer x"}}, status: 401, code: "invalid_client", retry: true},
		{name: "provider refuses, with a description", before: func(*testing.T) {
			r.prov.answer(400, `{"error":"invalid_grant","error_description":"`+pxSecret+`","error_uri":"https://`+pxSecret+`.example/"}`)
		}, status: 400, code: "invalid_grant", upstream: true},
		{name: "provider refuses with a code of its own", before: func(*testing.T) {
			r.prov.answer(400, `{"error":"`+pxSecret+`","error_description":"`+pxSecret+`"}`)
		}, status: 400, code: "invalid_grant", upstream: true},
		{name: "provider refuses invalid_scope", before: func(*testing.T) { r.prov.answer(400, `{"error":"invalid_scope"}`) }, status: 400, code: "invalid_scope", upstream: true},
		{name: "provider refuses without JSON", before: func(*testing.T) { r.prov.answer(401, pxSecret) }, status: 400, code: "invalid_grant", upstream: true},
		{name: "provider fails", before: func(*testing.T) { r.prov.answer(500, `{"error":"server_error","error_description":"`+pxSecret+`"}`) }, status: 503, code: "temporarily_unavailable", upstream: true},
		{name: "provider unavailable", before: func(*testing.T) { r.prov.answer(503, pxSecret) }, status: 503, code: "temporarily_unavailable", upstream: true},
		{name: "codes table fails", before: func(*testing.T) {
			r.codes.mu.Lock()
			r.codes.err = errors.New("the table is down")
			r.codes.mu.Unlock()
		}, status: 503, code: "temporarily_unavailable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := r.flow(t, jar, client, pxLoopback)
			if tc.before != nil {
				tc.before(t)
			}
			defer func() {
				r.prov.answer(http.StatusOK, pxProviderToken)
				r.codes.mu.Lock()
				r.codes.err = nil
				r.codes.mu.Unlock()
			}()
			calls := r.prov.calls()
			var a *pxAnswer
			if tc.body != nil {
				h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
				for k, vs := range tc.header {
					h[k] = vs
				}
				a = r.send(t, http.MethodPost, TokenSuffix, "", tc.body(c), h, nil)
			} else {
				a = r.redeem(t, c, tc.changes, tc.header)
			}
			if tc.status == http.StatusOK {
				if a.status != http.StatusOK || a.body != pxProviderToken {
					t.Fatalf("%d %s", a.status, a.body)
				}
			} else {
				wantTokenError(t, a, tc.status, tc.code)
			}
			if o := r.lastOutcome(); o.Method != MethodToken || o.Status != tc.status || o.Kind != tc.code {
				t.Errorf("reported %s %d kind %q", o.Method, o.Status, o.Kind)
			}
			if got := r.prov.calls() - calls; got != map[bool]int{true: 1, false: 0}[tc.upstream] {
				t.Errorf("the provider saw %d token requests", got)
			}
			if tc.retry {
				r.prov.answer(http.StatusOK, pxProviderToken)
				if a := r.redeem(t, c, nil, nil); a.status != http.StatusOK {
					t.Errorf("the correct request afterwards: %d %s", a.status, a.body)
				}
			}
		})
	}

	t.Run("code reused", func(t *testing.T) {
		c := r.flow(t, jar, client, pxLoopback)
		calls := r.prov.calls()
		if a := r.redeem(t, c, nil, nil); a.status != http.StatusOK {
			t.Fatalf("first: %d %s", a.status, a.body)
		}
		wantTokenError(t, r.redeem(t, c, nil, nil), 400, "invalid_grant")
		if got := r.prov.calls() - calls; got != 1 {
			t.Errorf("the provider's token endpoint was called %d times, want 1", got)
		}
	})

	t.Run("code reused after a provider failure", func(t *testing.T) {
		// The code is spent before the exchange: a failed exchange is not
		// retried with the same code (the provider's is spent too).
		c := r.flow(t, jar, client, pxLoopback)
		r.prov.answer(500, "")
		defer r.prov.answer(http.StatusOK, pxProviderToken)
		wantTokenError(t, r.redeem(t, c, nil, nil), 503, "temporarily_unavailable")
		r.prov.answer(http.StatusOK, pxProviderToken)
		wantTokenError(t, r.redeem(t, c, nil, nil), 400, "invalid_grant")
	})

	t.Run("provider unreachable", func(t *testing.T) {
		r := newPxRig(t, pxHTTPS, func(r *pxRig) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			r.proxy.TokenEndpoint = "http://" + l.Addr().String() + "/token"
			l.Close()
		})
		client := r.register(t, "c", pxLoopback)
		c := r.flow(t, newPxJar(), client, pxLoopback)
		wantTokenError(t, r.redeem(t, c, nil, nil), 503, "temporarily_unavailable")
	})

	t.Run("provider's 200 not a bearer token", func(t *testing.T) {
		r.badGateway = true
		defer func() { r.badGateway = false }()
		for _, body := range []string{`{"token_type":"Bearer"}`, `{"access_token":"x","token_type":"mac"}`, pxSecret, `[]`} {
			c := r.flow(t, jar, client, pxLoopback)
			r.prov.answer(http.StatusOK, body)
			wantTokenError(t, r.redeem(t, c, nil, nil), http.StatusBadGateway, "server_error")
		}
		r.prov.answer(http.StatusOK, pxProviderToken)
	})

	t.Run("refresh_token passes through", func(t *testing.T) {
		calls := r.prov.calls()
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt-1"}, "client_id": {client}, "scope": {"notes:read"}, "resource": {r.endpoint}}
		a := r.token(t, form.Encode(), http.Header{"Origin": {"https://app.example.com"}})
		if a.status != http.StatusOK || a.body != pxProviderToken || a.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%d %v %s", a.status, a.header, a.body)
		}
		pf, auth := r.prov.last()
		want := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt-1"}, "client_id": {pxClientID}, "scope": {"notes:read"}, "resource": {r.endpoint}}
		if r.prov.calls() != calls+1 || pf.Encode() != want.Encode() || auth != "" {
			t.Errorf("the provider saw %v (%q), want %v", pf, auth, want)
		}
		// Without scope: none upstream.
		form.Del("scope")
		if a := r.token(t, form.Encode(), nil); a.status != http.StatusOK {
			t.Fatalf("%d %s", a.status, a.body)
		}
		if pf, _ := r.prov.last(); pf.Has("scope") {
			t.Errorf("the provider saw scope %q", pf.Get("scope"))
		}
		// The provider's refusal passes as its code only.
		r.prov.answer(400, `{"error":"invalid_grant","error_description":"`+pxSecret+`"}`)
		wantTokenError(t, r.token(t, form.Encode(), nil), 400, "invalid_grant")
		r.prov.answer(http.StatusOK, pxProviderToken)
	})

	t.Run("refresh_token refusals", func(t *testing.T) {
		calls := r.prov.calls()
		for _, tc := range []struct {
			form url.Values
			code string
		}{
			{url.Values{"grant_type": {"refresh_token"}, "client_id": {client}}, "invalid_request"},
			{url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt-1"}}, "invalid_request"},
			{url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt-1"}, "client_id": {client}, "scope": {pxMarker}}, "invalid_request"},
			{url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt-1"}, "client_id": {client}, "resource": {"https://other.example.com/mcp"}}, "invalid_target"},
		} {
			wantTokenError(t, r.token(t, tc.form.Encode(), nil), 400, tc.code)
		}
		if r.prov.calls() != calls {
			t.Error("a refused refresh reached the provider")
		}
	})
}

// TestProxyConsent: the consent form is accepted only from the consent
// page, in the browser it was shown in; a denial goes to the client as
// access_denied.
func TestProxyConsent(t *testing.T) {
	r := newPxRig(t, pxHTTPS, nil)
	client := r.register(t, pxMarker, pxLoopback)
	page := func(t *testing.T, jar *pxJar) (string, string) {
		return pxForm(t, r.authorize(t, r.pxQuery(client, pxLoopback, pxVerifier(), nil), jar))
	}
	header := func(changes map[string]string) http.Header {
		h := r.consentHeader()
		for k, v := range changes {
			if v == pxDel {
				h.Del(k)
			} else {
				h.Set(k, v)
			}
		}
		return h
	}
	type c struct {
		name    string
		jar     func(j *pxJar) // changes the browser's cookies before the post
		changes map[string]string
		header  http.Header
		ticket  func(t *testing.T, ticket string) string
		body    func(ticket, csrf string) string // the post's body, instead of the form
		before  func()
		status  int
		kind    string
	}
	cases := []c{
		{name: "without the CSRF cookie", jar: func(j *pxJar) { delete(j.cookies, "__Host-mcp-csrf") }, status: 403, kind: "csrf"},
		{name: "CSRF cookie without its prefix", jar: func(j *pxJar) {
			j.cookies["mcp-csrf"] = j.cookies["__Host-mcp-csrf"]
			delete(j.cookies, "__Host-mcp-csrf")
		}, status: 403, kind: "csrf"},
		{name: "CSRF field differs", changes: map[string]string{"csrf": randomText(24)}, status: 403, kind: "csrf"},
		{name: "CSRF field missing", changes: map[string]string{"csrf": pxDel}, status: 403, kind: "csrf"},
		{name: "CSRF cookie and field agree but are not the ticket's", jar: func(j *pxJar) { j.cookies["__Host-mcp-csrf"] = &http.Cookie{Value: "forged"} }, changes: map[string]string{"csrf": "forged"}, status: 403, kind: "csrf"},
		{name: "Origin of another site", header: header(map[string]string{"Origin": "https://evil.example"}), status: 403, kind: "cross_origin_consent"},
		{name: "Origin null", header: header(map[string]string{"Origin": "null"}), status: 403, kind: "cross_origin_consent"},
		{name: "Origin on another port", header: header(map[string]string{"Origin": "https://mcp.example.com:8443"}), status: 403, kind: "cross_origin_consent"},
		{name: "Sec-Fetch-Site cross-site", header: header(map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": pxDel}), status: 403, kind: "cross_origin_consent"},
		{name: "Sec-Fetch-Site same-site", header: header(map[string]string{"Sec-Fetch-Site": "same-site"}), status: 403, kind: "cross_origin_consent"},
		{name: "tampered ticket", ticket: func(_ *testing.T, s string) string {
			return s[:len(s)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(s, "AA")]
		}, status: 400, kind: "invalid_ticket"},
		{name: "ticket missing", changes: map[string]string{"ticket": pxDel}, status: 400, kind: "invalid_ticket"},
		{name: "a provider state as the ticket", ticket: func(t *testing.T, _ string) string {
			return r.toProvider(t, r.pxQuery(client, pxLoopback, pxVerifier(), nil), newPxJar()).Query().Get("state")
		}, status: 400, kind: "invalid_ticket"},
		{name: "expired ticket", before: func() { r.clk.Advance(flowTTL + time.Second) }, status: 400, kind: "invalid_ticket"},
		{name: "no decision", changes: map[string]string{"decision": pxDel}, status: 400, kind: "invalid_request"},
		{name: "unknown decision", changes: map[string]string{"decision": pxMarker}, status: 400, kind: "invalid_request"},
		{name: "repeated field", body: func(ticket, csrf string) string {
			return url.Values{"ticket": {ticket}, "csrf": {csrf}, "decision": {"deny", "approve"}}.Encode()
		}, status: 400, kind: "invalid_request"},
		{name: "not a form", header: header(map[string]string{"Content-Type": "text/plain"}), status: 400, kind: "invalid_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			jar := newPxJar()
			ticket, csrf := page(t, jar)
			if tc.jar != nil {
				tc.jar(jar)
			}
			if tc.ticket != nil {
				ticket = tc.ticket(t, ticket)
			}
			if tc.before != nil {
				tc.before()
			}
			var a *pxAnswer
			if tc.body != nil {
				a = r.send(t, http.MethodPost, AuthorizeSuffix, "", tc.body(ticket, csrf), r.consentHeader(), jar)
			} else {
				a = r.decide(t, jar, ticket, csrf, "approve", tc.changes, tc.header)
			}
			wantPage(t, a, tc.status)
			if o := r.lastOutcome(); o.Method != MethodConsent || o.Kind != tc.kind {
				t.Errorf("reported %s kind %q, want %s", o.Method, o.Kind, tc.kind)
			}
			if jar.cookies["__Host-mcp-consent"] != nil || a.setCookie("__Host-mcp-flow-") != nil {
				t.Error("a refused consent was remembered, or started a flow")
			}
		})
	}

	t.Run("deny", func(t *testing.T) {
		jar := newPxJar()
		ticket, csrf := page(t, jar)
		a := r.decide(t, jar, ticket, csrf, "deny", nil, nil)
		wantClientError(t, a, http.StatusSeeOther, pxLoopback, "access_denied", pxMarker, r.endpoint)
		if jar.cookies["__Host-mcp-csrf"] != nil || jar.cookies["__Host-mcp-consent"] != nil || a.setCookie("__Host-mcp-flow-") != nil {
			t.Errorf("after a denial the jar holds %v", jar.cookies)
		}
		// Nothing is remembered: the next request shows the page again.
		wantPage(t, r.authorize(t, r.pxQuery(client, pxLoopback, pxVerifier(), nil), jar), http.StatusOK)
	})

	t.Run("the page's form, in the browser it was shown in, without Origin", func(t *testing.T) {
		// Sec-Fetch-Site and Origin are absent from some browsers' posts:
		// the cookie and the field are the proof then.
		jar := newPxJar()
		ticket, csrf := page(t, jar)
		a := r.decide(t, jar, ticket, csrf, "approve", nil, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
		if a.status != http.StatusSeeOther {
			t.Fatalf("%d %s", a.status, a.body)
		}
	})

	t.Run("a ticket of another page in the same browser", func(t *testing.T) {
		// The second page's CSRF cookie replaces the first's: the first
		// page's form is refused, the second's accepted.
		jar := newPxJar()
		t1, c1 := page(t, jar)
		t2, c2 := page(t, jar)
		wantPage(t, r.decide(t, jar, t1, c1, "approve", nil, nil), http.StatusForbidden)
		wantPage(t, r.decide(t, jar, t1, c2, "approve", nil, nil), http.StatusForbidden)
		if a := r.decide(t, jar, t2, c2, "approve", nil, nil); a.status != http.StatusSeeOther {
			t.Fatalf("%d %s", a.status, a.body)
		}
	})
}

// TestProxyCapturedAuthorizationURL is CVE-2026-27124's case: a flow is
// approved in browser A, and the provider URL it was sent to is captured
// and opened in browser B. B's sign-in at the provider comes back to the
// callback without A's flow cookie, and goes nowhere; A's own callback
// still works.
func TestProxyCapturedAuthorizationURL(t *testing.T) {
	for _, endpoint := range []string{pxHTTPS, pxPlain} {
		t.Run(endpoint, func(t *testing.T) {
			r := newPxRig(t, endpoint, nil)
			client := r.register(t, pxMarker, pxLoopback)
			a := newPxJar()
			captured := r.toProvider(t, r.pxQuery(client, pxLoopback, pxVerifier(), nil), a)
			state := captured.Query().Get("state")

			// B: another browser that consented to the same client earlier
			// and has a flow of its own under way.
			consented := newPxJar()
			r.toProvider(t, r.pxQuery(client, pxLoopback, pxVerifier(), nil), consented)
			// A browser with A's consent and CSRF cookies, but not its flow
			// cookie (a cookie jar that shares what a site could learn).
			noFlow := a.clone()
			for n := range noFlow.cookies {
				if strings.Contains(n, flowCookiePrefix) {
					delete(noFlow.cookies, n)
				}
			}
			// A browser with a flow cookie of A's flow's name but its own
			// value.
			forged := newPxJar()
			for n := range a.cookies {
				if strings.Contains(n, flowCookiePrefix) {
					forged.cookies[n] = &http.Cookie{Name: n, Value: randomText(32)}
				}
			}
			for name, b := range map[string]*pxJar{"empty jar": newPxJar(), "consented to the same client": consented, "A's cookies but its flow's": noFlow, "a forged flow cookie": forged} {
				t.Run(name, func(t *testing.T) {
					ans := r.callback(t, b, url.Values{"code": {"victims-code"}, "state": {state}})
					wantPage(t, ans, http.StatusForbidden)
					if o := r.lastOutcome(); o.Method != MethodCallback || o.Kind != "flow_not_this_browser" {
						t.Errorf("reported %s kind %q", o.Method, o.Kind)
					}
					// Nor does the provider's error go to the client from there.
					wantPage(t, r.callback(t, b, url.Values{"error": {"access_denied"}, "state": {state}}), http.StatusForbidden)
				})
			}

			// A's own callback.
			ans := r.callback(t, a, url.Values{"code": {"as-code"}, "state": {state}})
			u := ans.location(t)
			if ans.status != http.StatusFound || u == nil || u.Scheme+"://"+u.Host+u.Path != pxLoopback || u.Query().Get("code") == "" {
				t.Fatalf("A's callback: %d %v %s", ans.status, u, ans.body)
			}
			// Once: the flow cookie is gone.
			wantPage(t, r.callback(t, a, url.Values{"code": {"as-code"}, "state": {state}}), http.StatusForbidden)
		})
	}
}

// TestProxyCallback: the provider's answers other than a code go to the
// client as an error of the endpoint's words, and clear the flow.
func TestProxyCallback(t *testing.T) {
	r := newPxRig(t, pxHTTPS, nil)
	client := r.register(t, pxMarker, pxLoopback)
	for _, tc := range []struct {
		name string
		q    url.Values
		code string
	}{
		{"the provider denies, with a description", url.Values{"error": {"access_denied"}, "error_description": {pxSecret}, "error_uri": {"https://" + pxSecret + ".example"}}, "access_denied"},
		{"the provider's own error code", url.Values{"error": {pxSecret}}, "server_error"},
		{"the provider's marker as its error", url.Values{"error": {pxMarker}}, "server_error"},
		{"login_required", url.Values{"error": {"login_required"}}, "login_required"},
		{"another issuer", url.Values{"code": {"c"}, "iss": {"https://" + pxSecret + ".example"}}, "server_error"},
		{"no code", url.Values{}, "server_error"},
		{"code too long", url.Values{"code": {strings.Repeat("c", 4<<10+1)}}, "server_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jar := newPxJar()
			up := r.toProvider(t, r.pxQuery(client, pxLoopback, pxVerifier(), nil), jar)
			tc.q.Set("state", up.Query().Get("state"))
			a := r.callback(t, jar, tc.q)
			wantClientError(t, a, http.StatusFound, pxLoopback, tc.code, pxMarker, r.endpoint)
			if c := a.setCookie("__Host-mcp-flow-"); c == nil || c.MaxAge >= 0 {
				t.Errorf("the flow cookie is not expired: %v", c)
			}
		})
	}
	for _, tc := range []struct{ name, query string }{
		{"no state", "code=c"},
		{"state not sealed", "code=c&state=" + url.QueryEscape(pxMarker)},
		{"malformed query", "code=c&%zz"},
		{"state expired", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jar := newPxJar()
			query := tc.query
			if query == "" {
				up := r.toProvider(t, r.pxQuery(client, pxLoopback, pxVerifier(), nil), jar)
				r.clk.Advance(flowTTL + time.Second)
				query = url.Values{"code": {"c"}, "state": {up.Query().Get("state")}}.Encode()
			}
			wantPage(t, r.send(t, http.MethodGet, CallbackSuffix, query, "", nil, jar), http.StatusBadRequest)
		})
	}
}

// TestProxyConsentRemembered: after one approval a browser's next flow of
// the same client goes straight to the provider; another client's shows
// the page; a pre-approved client's never does.
func TestProxyConsentRemembered(t *testing.T) {
	doc := ""
	r := newPxRig(t, pxHTTPS, func(r *pxRig) {
		doc = r.docSrv.id("/other.json")
		r.proxy.PreApproved = []string{doc}
	})
	client := r.register(t, pxMarker, pxLoopback)
	second := r.register(t, "second", pxLoopback)
	jar := newPxJar()
	r.flow(t, jar, client, pxLoopback)

	a := r.authorize(t, r.pxQuery(client, "http://127.0.0.1:5555/callback", pxVerifier(), nil), jar)
	if u := a.location(t); a.status != http.StatusFound || u == nil || !strings.HasPrefix(u.String(), r.proxy.AuthorizationEndpoint+"?") || a.setCookie("__Host-mcp-flow-") == nil {
		t.Fatalf("the same client again: %d %v", a.status, a.header)
	}
	wantPage(t, r.authorize(t, r.pxQuery(second, pxLoopback, pxVerifier(), nil), jar), http.StatusOK)
	wantPage(t, r.authorize(t, r.pxQuery(client, pxLoopback, pxVerifier(), nil), newPxJar()), http.StatusOK)
	// A consent cookie of another endpoint's is none here.
	other := newPxRig(t, "https://other.example.com/mcp", nil)
	wantPage(t, other.authorize(t, other.pxQuery(client, pxLoopback, pxVerifier(), nil), jar.clone()), http.StatusOK)

	// Pre-approved: no page, in any browser; its flow completes.
	a = r.authorize(t, r.pxQuery(doc, pxAppRedirect, pxVerifier(), nil), newPxJar())
	if a.status != http.StatusFound || a.location(t) == nil || !strings.HasPrefix(a.location(t).String(), r.proxy.AuthorizationEndpoint+"?") {
		t.Fatalf("pre-approved: %d %s", a.status, a.body)
	}
	c := r.flow(t, newPxJar(), doc, pxAppRedirect)
	if a := r.redeem(t, c, nil, nil); a.status != http.StatusOK {
		t.Fatalf("pre-approved token: %d %s", a.status, a.body)
	}

	// The cookie remembers maxConsents clients, the newest.
	jar = newPxJar()
	var ids []string
	for i := range maxConsents + 1 {
		id := r.register(t, fmt.Sprintf("client %d", i), pxLoopback)
		ids = append(ids, id)
		r.toProvider(t, r.pxQuery(id, pxLoopback, pxVerifier(), nil), jar)
	}
	wantPage(t, r.authorize(t, r.pxQuery(ids[0], pxLoopback, pxVerifier(), nil), jar), http.StatusOK)
	for _, id := range ids[1:] {
		if a := r.authorize(t, r.pxQuery(id, pxLoopback, pxVerifier(), nil), jar); a.status != http.StatusFound {
			t.Errorf("a remembered client: %d", a.status)
		}
	}

	// A remembered consent is no way around the request's checks.
	wantPage(t, r.authorize(t, r.pxQuery(ids[1], "https://evil.example/cb", pxVerifier(), nil), jar), http.StatusBadRequest)
}

// TestProxyMetadata: with a proxy the endpoint is its own authorization
// server, whose endpoints are the proxy's.
func TestProxyMetadata(t *testing.T) {
	for _, endpoint := range []string{pxHTTPS, pxPlain} {
		t.Run(endpoint, func(t *testing.T) {
			r := newPxRig(t, endpoint, nil)
			a := r.send(t, http.MethodGet, "", "", "", nil, nil) // the endpoint itself: not a document
			if a.status != http.StatusNotFound {
				t.Errorf("the endpoint's own path: %d", a.status)
			}
			u, _ := url.Parse(endpoint)
			get := func(path string) map[string]any {
				t.Helper()
				hr := httptest.NewRequest(http.MethodGet, "http://x"+path, nil)
				w := httptest.NewRecorder()
				r.handler.ServeHTTP(w, hr)
				var doc map[string]any
				if err := json.Unmarshal(w.Body.Bytes(), &doc); w.Code != http.StatusOK || err != nil {
					t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
				}
				return doc
			}
			as := get("/.well-known/oauth-authorization-server" + u.Path)
			for k, want := range map[string]any{
				"issuer":                                         endpoint,
				"authorization_endpoint":                         endpoint + "/authorize",
				"token_endpoint":                                 endpoint + "/token",
				"registration_endpoint":                          endpoint + "/register",
				"client_id_metadata_document_supported":          true,
				"authorization_response_iss_parameter_supported": true,
			} {
				if as[k] != want {
					t.Errorf("%s: %v, want %v", k, as[k], want)
				}
			}
			if fmt.Sprint(as["code_challenge_methods_supported"]) != "[S256]" || fmt.Sprint(as["token_endpoint_auth_methods_supported"]) != "[none]" || fmt.Sprint(as["response_types_supported"]) != "[code]" {
				t.Errorf("metadata %v", as)
			}
			pr := get("/.well-known/oauth-protected-resource" + u.Path)
			if pr["resource"] != endpoint || fmt.Sprint(pr["authorization_servers"]) != "["+endpoint+"]" {
				t.Errorf("protected-resource metadata %v", pr)
			}
		})
	}

	t.Run("Serve under a stage's prefix", func(t *testing.T) {
		r := newPxRig(t, pxHTTPS, nil)
		client := encodeRegistered(registered{RedirectURIs: []string{pxLoopback}})
		q := r.pxQuery(client, pxLoopback, pxVerifier(), map[string]string{"resource": "https://api.example.com/prod/mcp"}).Encode()
		req := &stateless.Request{Method: http.MethodGet, Header: http.Header{}, Query: q}
		resp, ok := r.docs.Serve(context.Background(), req, "/prod/mcp/authorize", "", pxLocator{})
		if !ok || resp.Status != http.StatusOK || !strings.Contains(string(resp.Body), `action="https://api.example.com/prod/mcp/authorize"`) {
			t.Fatalf("Serve: %v %d %s", ok, resp.Status, resp.Body)
		}
		// Without an endpoint the proxy's documents are absent.
		resp, ok = r.docs.Serve(context.Background(), req, "/prod/mcp/authorize", "", nil)
		if !ok || resp.Status != http.StatusNotFound {
			t.Fatalf("Serve without an endpoint: %v %d", ok, resp.Status)
		}
		// Nor without a proxy.
		d := &Documents{Server: r.docs.Server, Resource: &Resource{}}
		for _, path := range []string{"/mcp/authorize", "/mcp/callback"} {
			if resp, ok := d.Serve(context.Background(), req, path, pxHTTPS, nil); !ok || resp.Status != http.StatusNotFound {
				t.Errorf("%s without a proxy: %v %d", path, ok, resp.Status)
			}
		}
		tok := &stateless.Request{Method: http.MethodPost, Header: http.Header{}}
		if resp, ok := d.Serve(context.Background(), tok, "/mcp/token", pxHTTPS, nil); !ok || resp.Status != http.StatusNotFound {
			t.Errorf("token without a proxy: %v %d", ok, resp.Status)
		}
	})
}

// pxLocator names the endpoint a stage's path names.
type pxLocator struct{}

func (pxLocator) EndpointAt(path string) string { return "https://api.example.com" + path }

// TestProxyKeyServiceDown: a sealer whose key service cannot be reached
// makes every step answer 503 with Retry-After, never another 5xx, and
// never a redirect.
func TestProxyKeyServiceDown(t *testing.T) {
	for _, preApproved := range []bool{false, true} {
		t.Run(fmt.Sprint("pre-approved ", preApproved), func(t *testing.T) {
			var client string
			r := newPxRig(t, pxHTTPS, func(r *pxRig) {
				client = encodeRegistered(registered{RedirectURIs: []string{pxLoopback}, Name: pxMarker})
				if preApproved {
					r.proxy.PreApproved = []string{client}
				}
			})
			jar := newPxJar()
			// What the steps are sent, made while the key service is up.
			ticketJar := newPxJar()
			ticket, csrf := "", ""
			if !preApproved {
				ticket, csrf = pxForm(t, r.authorize(t, r.pxQuery(client, pxLoopback, pxVerifier(), nil), ticketJar))
			}
			flowJar := newPxJar()
			up := r.toProvider(t, r.pxQuery(client, pxLoopback, pxVerifier(), nil), flowJar)
			c := r.flow(t, newPxJar(), client, pxLoopback)
			calls := r.prov.calls()

			r.sealer.fail.Store(true)
			defer r.sealer.fail.Store(false)
			steps := map[string]*pxAnswer{
				"authorize": r.authorize(t, r.pxQuery(client, pxLoopback, pxVerifier(), nil), jar),
				"callback":  r.callback(t, flowJar, url.Values{"code": {"c"}, "state": {up.Query().Get("state")}}),
				"token":     r.redeem(t, c, nil, nil),
			}
			if !preApproved {
				steps["consent"] = r.decide(t, ticketJar, ticket, csrf, "approve", nil, nil)
			}
			for name, a := range steps {
				if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || a.header.Get("Location") != "" {
					t.Errorf("%s: %d %v", name, a.status, a.header)
				}
				if name == "token" {
					wantTokenError(t, a, http.StatusServiceUnavailable, "temporarily_unavailable")
				}
			}
			if r.prov.calls() != calls {
				t.Error("the provider was asked for a token")
			}
			// Back up: the code was not spent.
			r.sealer.fail.Store(false)
			if a := r.redeem(t, c, nil, nil); a.status != http.StatusOK {
				t.Errorf("after the key service is back: %d %s", a.status, a.body)
			}
		})
	}
}

// TestProxyDocumentUnavailable: a client whose metadata document cannot
// be had is answered 503 by a page, to be tried again.
func TestProxyDocumentUnavailable(t *testing.T) {
	r := newPxRig(t, pxHTTPS, func(r *pxRig) {
		r.proxy.Documents = &ClientMetadataDocuments{lookup: func(context.Context, string, string) ([]netip.Addr, error) {
			return nil, &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}
		}}
	})
	a := r.authorize(t, r.pxQuery("https://app.example.com/client.json", pxLoopback, pxVerifier(), nil), newPxJar())
	wantPage(t, a, http.StatusServiceUnavailable)
}

// TestProxyForeignCookies: the browser's Cookie header carries the
// cookies of every application on the host (and its parent domain's):
// one the proxy cannot parse must not hide the proxy's own.
//
// It fails: cookieValue (consent.go) reads a Cookie line with
// http.ParseCookie, which refuses the whole line for one cookie that is
// not RFC 6265 syntax (a JSON value, a name without "="), as browsers
// send them; the CSRF and the flow cookie are then absent.
func TestProxyForeignCookies(t *testing.T) {
	for _, foreign := range []string{`prefs={"theme":"dark"}`, `flag`, `a=b\c`} {
		t.Run(foreign, func(t *testing.T) {
			r := newPxRig(t, pxHTTPS, nil)
			client := r.register(t, "c", pxLoopback)
			jar := newPxJar()
			jar.foreign = []string{foreign}
			v := pxVerifier()
			a := r.authorize(t, r.pxQuery(client, pxLoopback, v, nil), jar)
			ticket, csrf := pxForm(t, a)
			a = r.decide(t, jar, ticket, csrf, "approve", nil, nil)
			if a.status != http.StatusSeeOther {
				t.Fatalf("approval with a foreign cookie in the jar: %d (%s)", a.status, r.lastOutcome().Kind)
			}
			a = r.callback(t, jar, url.Values{"code": {"c"}, "state": {a.location(t).Query().Get("state")}})
			if a.status != http.StatusFound {
				t.Fatalf("callback with a foreign cookie in the jar: %d (%s)", a.status, r.lastOutcome().Kind)
			}
		})
	}
}

// TestProxyConsentLifetime: a consent is remembered as long as the
// sealer's values live (docs/auth.md: MCP_STATE_TTL, 10 minutes by
// default), then asked again; the cookie's Max-Age is consentTTL.
func TestProxyConsentLifetime(t *testing.T) {
	r := newPxRig(t, pxHTTPS, nil)
	client := r.register(t, "c", pxLoopback)
	jar := newPxJar()
	r.toProvider(t, r.pxQuery(client, pxLoopback, pxVerifier(), nil), jar)
	if c := jar.cookies["__Host-mcp-consent"]; c == nil || c.MaxAge != int(consentTTL/time.Second) {
		t.Fatalf("consent cookie %v", c)
	}
	r.clk.Advance(9 * time.Minute)
	if a := r.authorize(t, r.pxQuery(client, pxLoopback, pxVerifier(), nil), jar); a.status != http.StatusFound {
		t.Errorf("9 minutes after the consent: %d, want 302", a.status)
	}
	r.clk.Advance(2 * time.Minute)
	wantPage(t, r.authorize(t, r.pxQuery(client, pxLoopback, pxVerifier(), nil), jar), http.StatusOK)
}

// TestProxyLongRequest: an authorization request the proxy accepts (each
// parameter within maxParam) either completes or is refused at once.
//
// It fails: the sealed values grow with what the request carries (JSON
// escapes each of <, > and & into six bytes), and open refuses one over
// 8 KiB, the sealer one over its MaxState: a request validate accepted
// fails later, at the consent form (invalid_ticket) or at the callback
// (invalid_state), or at once with a 503 "try again" that never
// succeeds.
func TestProxyLongRequest(t *testing.T) {
	long := func(c string) string { return strings.Repeat(c, maxParam) }
	var scope []string
	for range maxParam / 8 {
		scope = append(scope, "notes:x")
	}
	for _, tc := range []struct {
		name        string
		preApproved bool
		changes     map[string]string
	}{
		{"state of angle brackets, consent page", false, map[string]string{"state": long("<")}},
		{"state of angle brackets, pre-approved", true, map[string]string{"state": long("<")}},
		{"state and scope of angle brackets", true, map[string]string{"state": long("<"), "scope": long("<")}},
		{"long state and scope, consent page", false, map[string]string{"state": long("s"), "scope": strings.Join(scope, " ")[:maxParam-1]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var redirects []string
			for i := range maxRedirects {
				redirects = append(redirects, fmt.Sprintf("http://127.0.0.1:%d/%s", 1000+i, strings.Repeat("p", 150)))
			}
			client := encodeRegistered(registered{RedirectURIs: redirects})
			if len(client) > maxParam {
				t.Fatalf("client id of %d bytes", len(client))
			}
			r := newPxRig(t, pxHTTPS, func(r *pxRig) {
				if tc.preApproved {
					r.proxy.PreApproved = []string{client}
				}
			})
			jar := newPxJar()
			a := r.authorize(t, r.pxQuery(client, redirects[0], pxVerifier(), tc.changes), jar)
			if a.status >= 400 && a.status < 500 || a.status == http.StatusFound && !strings.HasPrefix(a.header.Get("Location"), r.proxy.AuthorizationEndpoint) {
				return // refused at once: fine
			}
			if a.status == http.StatusOK {
				ticket, csrf := pxForm(t, a)
				a = r.decide(t, jar, ticket, csrf, "approve", nil, nil)
			}
			if a.status != http.StatusFound && a.status != http.StatusSeeOther {
				t.Fatalf("accepted, then refused: %d (%s)", a.status, r.lastOutcome().Kind)
			}
			a = r.callback(t, jar, url.Values{"code": {"c"}, "state": {a.location(t).Query().Get("state")}})
			if a.status != http.StatusFound {
				t.Fatalf("accepted, then refused at the callback: %d (%s)", a.status, r.lastOutcome().Kind)
			}
		})
	}
}

// pxFuzzEpoch is the fuzz targets' clock, fixed so that the sealed seeds
// are what they say: one sealed then for the wrong endpoint, one whose
// own expiry has passed, and so on.
var pxFuzzEpoch = time.Unix(1_900_000_000, 0)

// pxFuzzRig is a proxy for the fuzz targets: on pxFuzzEpoch, whose
// metadata documents cannot be fetched (no name resolves, so nothing
// leaves the process), with two registered clients, pxFuzzClient and
// pxFuzzPreApproved, the second pre-approved.
func pxFuzzRig(f *testing.F) *pxRig {
	return newPxRig(f, pxHTTPS, func(r *pxRig) {
		r.clk.t = pxFuzzEpoch
		r.proxy.PreApproved = []string{pxFuzzPreApproved}
		r.proxy.Documents = &ClientMetadataDocuments{lookup: func(context.Context, string, string) ([]netip.Addr, error) {
			return nil, &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}
		}}
	})
}

var (
	pxFuzzClient      = encodeRegistered(registered{RedirectURIs: []string{pxLoopback, pxAppRedirect}, Name: pxMarker})
	pxFuzzPreApproved = encodeRegistered(registered{RedirectURIs: []string{"http://localhost/cb"}, Name: "pre-approved"})
)

// The bounds of the inputs looked at while fuzzing (the seeds run whole
// under go test): the engine minimizes every input that brings new
// coverage, up to n²/2 tries for n bytes, and runs nothing else
// meanwhile. A sealed value's seeds are short ones (a small payload)
// for that reason; the one of a real code's size runs under go test.
const (
	pxMaxFuzzQuery  = 1024
	pxMaxFuzzSealed = 256
	pxMaxFuzzID     = 512
)

// FuzzAuthorizationRequest: an authorization request never panics, is
// never answered with a 5xx but 503, and a redirect goes either to the
// provider's authorization endpoint or to a redirect URI the request's
// client declares.
func FuzzAuthorizationRequest(f *testing.F) {
	r := pxFuzzRig(f)
	v := pxVerifier()
	f.Add(r.pxQuery(pxFuzzClient, pxLoopback, v, nil).Encode())
	f.Fuzz(func(t *testing.T, raw string) {
		if pxFuzzWorker() && len(raw) > pxMaxFuzzQuery {
			t.Skip()
		}
		a := r.send(t, http.MethodGet, AuthorizeSuffix, raw, "", nil, newPxJar())
		if strings.Contains(a.body, "<script") {
			t.Fatalf("the page has a script: %s", a.body)
		}
		if a.status < 300 || a.status > 399 {
			if a.header.Get("Location") != "" {
				t.Fatalf("%d with a Location", a.status)
			}
			return
		}
		u := a.location(t)
		if u == nil {
			t.Fatalf("%d without a Location", a.status)
		}
		if strings.HasPrefix(u.String(), r.proxy.AuthorizationEndpoint+"?") {
			if q := u.Query(); q.Get("client_id") != pxClientID || q.Get("redirect_uri") != pxHTTPS+"/callback" {
				t.Fatalf("to the provider with %v", q)
			}
			return
		}
		q, err := url.ParseQuery(raw)
		if err != nil {
			t.Fatalf("a redirect for a malformed query: %s", u)
		}
		reg, err := decodeRegistered(q.Get("client_id"))
		if err != nil {
			t.Fatalf("a redirect to %s for client %q, which declares nothing", u, q.Get("client_id"))
		}
		for _, d := range reg.RedirectURIs {
			du, err := url.Parse(d)
			if err != nil || du.Scheme != u.Scheme || !strings.EqualFold(du.Hostname(), u.Hostname()) || du.EscapedPath() != u.EscapedPath() {
				continue
			}
			if du.Port() == u.Port() || isLoopbackHTTP(du) {
				if u.Query().Get("iss") != pxHTTPS || u.Query().Get("error") == "" {
					t.Fatalf("to the client with %v", u.Query())
				}
				return
			}
		}
		t.Fatalf("a redirect to %s, which client %q does not declare (%q)", u, q.Get("client_id"), reg.RedirectURIs)
	})
}

// pxFuzzWorker reports whether this process runs generated inputs (a fuzz
// worker), not the seed corpus under go test.
func pxFuzzWorker() bool {
	fl := flag.Lookup("test.fuzzworker")
	return fl != nil && fl.Value.String() == "true"
}

// FuzzTokenRequest: a token request never panics, is answered 200, 400,
// 401 or 503 only, with a JSON error unless 200, which only a refresh
// (passed to the provider) gets: a fuzzed code never opens.
func FuzzTokenRequest(f *testing.F) {
	r := pxFuzzRig(f)
	f.Add([]byte("grant_type=refresh_token&refresh_token=rt&client_id=c"), "application/x-www-form-urlencoded")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		if pxFuzzWorker() && len(body)+len(contentType) > pxMaxFuzzQuery {
			t.Skip()
		}
		calls := r.prov.calls()
		a := r.send(t, http.MethodPost, TokenSuffix, "", string(body), http.Header{"Content-Type": {contentType}}, nil)
		switch a.status {
		case http.StatusOK:
			form, _ := url.ParseQuery(string(body))
			if form.Get("grant_type") != "refresh_token" || a.body != pxProviderToken || r.prov.calls() != calls+1 {
				t.Fatalf("200 for %q: %s", body, a.body)
			}
			return
		case http.StatusBadRequest, http.StatusUnauthorized, http.StatusServiceUnavailable:
		default:
			t.Fatalf("status %d: %s", a.status, a.body)
		}
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(a.body), &e); err != nil || e.Error == "" {
			t.Fatalf("%d %q: not a JSON error", a.status, a.body)
		}
		if form, _ := url.ParseQuery(string(body)); form.Get("grant_type") == "authorization_code" && r.prov.calls() != calls {
			t.Fatal("a fuzzed code reached the provider")
		}
	})
}

// FuzzSealedValues: a fuzzed token never opens as the provider state at
// the callback, a code at the token endpoint, a consent ticket or a
// consent cookie: none is accepted, and nothing panics.
func FuzzSealedValues(f *testing.F) {
	r := pxFuzzRig(f)
	ctx := context.Background()
	purposes := []string{purposeTicket, purposeState, purposeCode, purposeConsents}
	f.Fuzz(func(t *testing.T, token string) {
		if pxFuzzWorker() && len(token) > pxMaxFuzzSealed {
			t.Skip()
		}
		for _, p := range purposes {
			var v struct {
				Expires int64 `json:"t"`
			}
			if err := r.proxy.open(ctx, p, pxHTTPS, token, &v, &v.Expires); err == nil {
				t.Fatalf("token opened as %s", p)
			} else if !errors.Is(err, reqstate.ErrInvalid) {
				t.Fatalf("open as %s: %v, not ErrInvalid", p, err)
			}
		}
		jar := newPxJar()
		a := r.callback(t, jar, url.Values{"code": {"c"}, "state": {token}})
		if a.status != http.StatusBadRequest || a.header.Get("Location") != "" {
			t.Fatalf("callback: %d %v", a.status, a.header)
		}
		calls := r.prov.calls()
		form := url.Values{"grant_type": {"authorization_code"}, "code": {token}, "client_id": {pxFuzzClient}, "redirect_uri": {pxLoopback}, "code_verifier": {pxVerifier()}}
		wantTokenError(t, r.token(t, form.Encode(), nil), http.StatusBadRequest, "invalid_grant")
		if r.prov.calls() != calls {
			t.Fatal("a fuzzed code reached the provider")
		}
		jar.cookies["__Host-mcp-csrf"] = &http.Cookie{Value: "k"}
		a = r.decide(t, jar, token, "k", "approve", nil, nil)
		if a.status != http.StatusBadRequest || a.header.Get("Location") != "" {
			t.Fatalf("consent: %d %v", a.status, a.header)
		}
		if pxValidCookieValue(token) {
			jar := newPxJar()
			jar.cookies["__Host-mcp-consent"] = &http.Cookie{Value: token}
			if a := r.authorize(t, r.pxQuery(pxFuzzClient, pxLoopback, pxVerifier(), nil), jar); a.status != http.StatusOK {
				t.Fatalf("a consent cookie of the token skipped the page: %d", a.status)
			}
		}
	})
}

// pxValidCookieValue reports whether s can be a cookie's value as sent.
func pxValidCookieValue(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}

// FuzzRegisteredClientID: a client id is resolved without panicking, and
// a registered client accepted has 1 to maxRedirects redirect URIs, each
// one a registration may declare, a name within maxClientName of UTF-8,
// and allows each of its redirect URIs.
func FuzzRegisteredClientID(f *testing.F) {
	r := pxFuzzRig(f)
	f.Add(pxFuzzClient)
	f.Fuzz(func(t *testing.T, id string) {
		if pxFuzzWorker() && len(id) > pxMaxFuzzID {
			t.Skip()
		}
		if reg, err := decodeRegistered(id); err == nil {
			if n := len(reg.RedirectURIs); n < 1 || n > maxRedirects || len(reg.Name) > maxClientName {
				t.Fatalf("decoded %d redirect URIs, a name of %d bytes", n, len(reg.Name))
			}
			if again, err := decodeRegistered(encodeRegistered(reg)); err != nil || !slices.Equal(again.RedirectURIs, reg.RedirectURIs) || again.Name != reg.Name {
				t.Fatalf("re-encoded: %v %v", again, err)
			}
		}
		c, err := r.proxy.client(context.Background(), id)
		if err != nil {
			if c != nil {
				t.Fatal("a client with an error")
			}
			return
		}
		if c.document || c.id != id || !strings.HasPrefix(id, dcrPrefix) {
			t.Fatalf("accepted %+v for %q", c, id)
		}
		if n := len(c.redirects); n < 1 || n > maxRedirects {
			t.Fatalf("accepted with %d redirect URIs", n)
		}
		if len(c.name) > maxClientName || !utf8.ValidString(c.name) {
			t.Fatalf("accepted with name %q", c.name)
		}
		for _, u := range c.redirects {
			if !acceptsRedirect(r.proxy.RedirectURIs, u) || !c.allows(u) {
				t.Fatalf("accepted with redirect URI %q", u)
			}
		}
	})
}
