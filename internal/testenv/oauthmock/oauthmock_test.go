//go:build unix

package oauthmock

import (
	"bytes"
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

const resource = "https://api.example.com/mcp"

// TestTokens checks what the authorization server publishes and mints: its
// metadata, its keys, a token shaped as RFC 9068 and RFC 8707 say, and
// each variant wrong in exactly its own way.
func TestTokens(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := New(t)

	var meta struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
		JWKSURI       string `json:"jwks_uri"`
	}
	getJSON(t, s.Issuer+"/.well-known/openid-configuration", &meta)
	if meta.Issuer != s.Issuer || meta.TokenEndpoint != s.TokenEndpoint() || meta.JWKSURI != s.Issuer+"/jwks" {
		t.Fatalf("metadata %+v for issuer %s", meta, s.Issuer)
	}
	keys := jwks(t, s)

	tok, err := s.Token(ctx, "svc a", []string{"notes:read", "notes:write"}, resource)
	if err != nil {
		t.Fatal(err)
	}
	h, c := verify(t, tok, keys)
	now := time.Now().Unix()
	if h["typ"] != "at+jwt" || h["alg"] != "RS256" {
		t.Errorf("header %v, want typ at+jwt, alg RS256", h)
	}
	if c["iss"] != s.Issuer || c["aud"] != resource || c["sub"] != "svc a" || c["client_id"] != "svc a" ||
		c["scope"] != "notes:read notes:write" || c["jti"] == nil ||
		num(c["exp"]) <= now || num(c["nbf"]) > now || num(c["iat"]) > now {
		t.Errorf("claims %v", c)
	}
	if tok, err = s.Token(ctx, "svc-b", nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, c := verify(t, tok, keys); c["aud"] != nil || c["scope"] != nil || c["sub"] != "svc-b" {
		t.Errorf("no resource, no scope: claims %v, want no aud and no scope", c)
	}

	mint := func(v Variant) (map[string]any, map[string]any, []string) {
		t.Helper()
		tok, err := s.TokenVariant(ctx, v, "svc-a", []string{"notes:read"}, resource)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(tok, ".")
		if len(parts) != 3 {
			t.Fatalf("%s: %q is not a compact JWS", v, tok)
		}
		return decodePart(t, parts[0]), decodePart(t, parts[1]), parts
	}
	if _, c := verifyVariant(t, s, Expired, keys); num(c["exp"]) >= now {
		t.Errorf("expired: exp %v", c["exp"])
	}
	if _, c := verifyVariant(t, s, NotYetValid, keys); num(c["nbf"]) <= now+60 || num(c["exp"]) <= now {
		t.Errorf("not yet valid: nbf %v exp %v", c["nbf"], c["exp"])
	}
	if _, c := verifyVariant(t, s, OtherIssuer, keys); c["iss"] == s.Issuer || c["iss"] == nil {
		t.Errorf("other issuer: iss %v", c["iss"])
	}
	if _, c := verifyVariant(t, s, NoSubject, keys); c["sub"] != nil || c["aud"] != resource {
		t.Errorf("no sub: claims %v", c)
	}
	if h, _, parts := mint(BadSignature); keys[h["kid"].(string)] == nil || verifies(parts, keys[h["kid"].(string)]) {
		t.Errorf("bad signature: header %v, a published kid and a signature that does not verify wanted", h)
	}
	if h, c, _ := mint(UnknownKid); keys[h["kid"].(string)] != nil || c["aud"] != resource {
		t.Errorf("unknown kid: header %v claims %v", h, c)
	}
	if h, c, parts := mint(AlgNone); h["alg"] != "none" || parts[2] != "" || c["iss"] != s.Issuer {
		t.Errorf("alg none: header %v signature %q", h, parts[2])
	}
	if h, _, parts := mint(HS256PublicKey); h["alg"] != "HS256" || !hmacWithPEM(parts, keys[h["kid"].(string)]) {
		t.Errorf("HS256: header %v; the MAC with the public key's PEM does not match", h)
	}
	if _, err := s.TokenVariant(ctx, "nonsense", "svc-a", nil, resource); err == nil {
		t.Error("an unknown variant was minted")
	}

	// Rotation: a new key, published next to the old one, signs from now on.
	kid, err := s.Rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rotated := jwks(t, s)
	if len(rotated) != len(keys)+1 || rotated[kid] == nil {
		t.Fatalf("after rotation: kids %v, want the old ones and %s", keysOf(rotated), kid)
	}
	tok, _ = s.Token(ctx, "svc-a", nil, resource)
	if h, _ := verify(t, tok, rotated); h["kid"] != kid {
		t.Errorf("after rotation, signed with %v, want %s", h["kid"], kid)
	}

	n, err := s.Requests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n["/jwks"] != 2 || n["/token"] < 12 {
		t.Errorf("requests %v, want 2 at /jwks and every token", n)
	}

	// Down and back: the same issuer and keys.
	s.Stop()
	if _, err := s.Token(ctx, "svc-a", nil, resource); err == nil {
		t.Fatal("a stopped server issued a token")
	}
	issuer := s.Issuer
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Issuer != issuer {
		t.Errorf("restarted as %s, want %s", s.Issuer, issuer)
	}
	tok, err = s.Token(ctx, "svc-a", nil, resource)
	if err != nil {
		t.Fatal(err)
	}
	verify(t, tok, rotated)
}

func verifyVariant(t *testing.T, s *Server, v Variant, keys map[string]*rsa.PublicKey) (map[string]any, map[string]any) {
	t.Helper()
	tok, err := s.TokenVariant(context.Background(), v, "svc-a", []string{"notes:read"}, resource)
	if err != nil {
		t.Fatal(err)
	}
	return verify(t, tok, keys)
}

// verify checks tok's RS256 signature with the published key its kid
// names and returns its header and claims.
func verify(t *testing.T, tok string, keys map[string]*rsa.PublicKey) (map[string]any, map[string]any) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a compact JWS", tok)
	}
	h := decodePart(t, parts[0])
	kid, _ := h["kid"].(string)
	if h["alg"] != "RS256" || keys[kid] == nil || !verifies(parts, keys[kid]) {
		t.Fatalf("token %v does not verify with the published keys %v", h, keysOf(keys))
	}
	return h, decodePart(t, parts[1])
}

func verifies(parts []string, key *rsa.PublicKey) bool {
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	return rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig) == nil
}

func hmacWithPEM(parts []string, key *rsa.PublicKey) bool {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	mac.Write([]byte(parts[0] + "." + parts[1]))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)) == parts[2]
}

func decodePart(t *testing.T, p string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		t.Fatalf("%q: %v", p, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

// jwks returns the published RSA keys by kid.
func jwks(t *testing.T, s *Server) map[string]*rsa.PublicKey {
	t.Helper()
	var set struct {
		Keys []struct {
			Kty, Kid, Alg, N, E, D string
		} `json:"keys"`
	}
	getJSON(t, s.Issuer+"/jwks", &set)
	out := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "RSA" || k.Alg != "RS256" || k.D != "" {
			t.Fatalf("published key %+v: want a public RS256 key", k)
		}
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err1 != nil || err2 != nil {
			t.Fatalf("key %s: bad n or e", k.Kid)
		}
		out[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	if len(out) == 0 {
		t.Fatal("no published keys")
	}
	return out
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func keysOf(m map[string]*rsa.PublicKey) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// The client and callbacks of the authorization code tests: a public
// client registered by hand with two callbacks, one a loopback port and
// one a proxy's HTTPS callback.
const (
	codeClient    = "proxy-client"
	callback      = "http://127.0.0.1:38113/callback"
	callbackTLS   = "https://proxy.example.com/oauth/callback"
	entraApp      = "0b7c5d3e-2f1a-4e6b-9c8d-7a6f5e4d3c2b"
	entraAppIDURI = "api://" + entraApp
)

// TestExactCallbacks: with registered callbacks, only those exact
// strings are redirected to; any other redirect_uri, however close, and
// whatever the client, is a 400 redirect_mismatch with no Location, so
// that neither a code nor an error reaches a callback nobody registered.
// Without registered callbacks, the known client may name any.
func TestExactCallbacks(t *testing.T) {
	s := NewWith(t, Options{ClientID: codeClient, RedirectURIs: []string{callback, callbackTLS}})
	for _, cb := range []string{callback, callbackTLS} {
		resp := authorize(t, s, url.Values{"client_id": {codeClient}, "redirect_uri": {cb}, "state": {"st-1"}})
		loc := redirected(t, resp)
		if !strings.HasPrefix(loc.String(), cb+"?") || loc.Query().Get("code") == "" || loc.Query().Get("state") != "st-1" {
			t.Errorf("registered %s: redirected to %s, want it with a code and the state", cb, loc)
		}
	}
	for _, cb := range []string{
		callback + "/",                              // a trailing slash
		callback + "?x=1",                           // a query
		"http://127.0.0.1:38114/callback",           // another port
		"http://localhost:38113/callback",           // another name for the host
		"HTTP://127.0.0.1:38113/callback",           // another case
		"http://127.0.0.1:38113/callback/evil",      // an extension
		"http://127.0.0.1:38113/Callback",           // a path's case
		"https://proxy.example.com/oauth/callback#", // an empty fragment
		"https://evil.example.com/oauth/callback",   // another host
		"",
	} {
		q := url.Values{"client_id": {codeClient}, "state": {"st-2"}}
		if cb != "" {
			q.Set("redirect_uri", cb)
		}
		mismatched(t, authorize(t, s, q), cb)
	}
	// Two redirect_uri parameters, one registered: not one registered
	// callback.
	mismatched(t, authorize(t, s, url.Values{"client_id": {codeClient}, "redirect_uri": {callback, "https://evil.example.com/cb"}}), "two")
	// An unknown client: refused, and only ever to a registered callback.
	mismatched(t, authorize(t, s, url.Values{"client_id": {"other"}, "redirect_uri": {"https://evil.example.com/cb"}}), "unknown client")
	loc := redirected(t, authorize(t, s, url.Values{"client_id": {"other"}, "redirect_uri": {callback}}))
	if !strings.HasPrefix(loc.String(), callback+"?") || loc.Query().Get("error") != "unauthorized_client" || loc.Query().Get("code") != "" {
		t.Errorf("unknown client at a registered callback: redirected to %s, want error=unauthorized_client", loc)
	}

	open := NewWith(t, Options{ClientID: codeClient})
	loc = redirected(t, authorize(t, open, url.Values{"client_id": {codeClient}, "redirect_uri": {"http://127.0.0.1:40000/anything"}}))
	if loc.Query().Get("code") == "" {
		t.Errorf("no callbacks registered: redirected to %s, want a code", loc)
	}
}

// TestCodeGrant: a code's token request must prove PKCE, the S256 or the
// plain way the authorization request chose, and a code serves one token
// request, even when two race for it; every refusal is the provider's 400
// invalid_grant.
func TestCodeGrant(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := NewWith(t, Options{ClientID: codeClient, RedirectURIs: []string{callback}})
	verifier := strings.Repeat("v3rifier-", 6)
	other := strings.Repeat("0ther-ver", 6)
	sum := sha256.Sum256([]byte(verifier))
	s256 := base64.RawURLEncoding.EncodeToString(sum[:])

	code := codeFor(t, s, url.Values{"code_challenge": {s256}, "code_challenge_method": {"S256"}, "scope": {"notes:read"}})
	status, body := exchange(ctx, t, s, code, verifier)
	if status != http.StatusOK || body["access_token"] == nil || body["scope"] != "notes:read" {
		t.Fatalf("S256, the right verifier: %d %s", status, refusal(body))
	}
	if status, body := exchange(ctx, t, s, code, verifier); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Errorf("the code again: %d %s, want 400 invalid_grant", status, refusal(body))
	}

	for _, c := range []struct {
		name, challenge, method, verifier string
	}{
		{"S256, another verifier", s256, "S256", other},
		{"S256, no verifier", s256, "S256", ""},
		{"S256, the challenge as the verifier", s256, "S256", s256},
		{"plain, another verifier", verifier, "plain", other},
		{"no method (plain), the S256 challenge's verifier", s256, "", verifier},
		{"no challenge, a verifier", "", "", verifier},
		{"S256, a verifier too short", s256, "S256", "short"},
	} {
		q := url.Values{}
		if c.challenge != "" {
			q.Set("code_challenge", c.challenge)
		}
		if c.method != "" {
			q.Set("code_challenge_method", c.method)
		}
		code := codeFor(t, s, q)
		if status, body := exchange(ctx, t, s, code, c.verifier); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
			t.Errorf("%s: %d %s, want 400 invalid_grant", c.name, status, refusal(body))
		}
	}
	if status, body := exchange(ctx, t, s, "no-such-code", verifier); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Errorf("an unknown code: %d %s, want 400 invalid_grant", status, refusal(body))
	}
	code = codeFor(t, s, url.Values{"code_challenge": {verifier}, "code_challenge_method": {"plain"}})
	if status, body := exchange(ctx, t, s, code, verifier); status != http.StatusOK {
		t.Errorf("plain, the right verifier: %d %s", status, refusal(body))
	}

	// Two token requests race for one code: one token.
	code = codeFor(t, s, url.Values{"code_challenge": {s256}, "code_challenge_method": {"S256"}})
	statuses := make(chan int, 8)
	var wg sync.WaitGroup
	for range cap(statuses) {
		wg.Go(func() {
			status, _ := exchange(ctx, t, s, code, verifier)
			statuses <- status
		})
	}
	wg.Wait()
	close(statuses)
	won := 0
	for st := range statuses {
		switch st {
		case http.StatusOK:
			won++
		case http.StatusBadRequest:
		default:
			t.Errorf("a racing token request answered %d", st)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d racing token requests got a token for one code, want 1", won, cap(statuses))
	}
}

// TestRefuseResource: an Entra tenant whose Application ID URI is
// api://<app id> refuses the resource parameter wherever it comes: the
// authorization endpoint redirects the error to the registered callback
// (and to nowhere else), the token endpoint answers 400 invalid_target;
// without it, both go as Entra's do.
func TestRefuseResource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := NewWith(t, Options{ClientID: codeClient, RedirectURIs: []string{callback}, Profile: "entra",
		Audience: entraApp, AppIDURI: entraAppIDURI, RefuseResource: true})
	scope := entraAppIDURI + "/notes:read"

	for _, res := range []string{resource, entraAppIDURI} {
		loc := redirected(t, authorize(t, s, url.Values{"client_id": {codeClient}, "redirect_uri": {callback}, "state": {"st-3"},
			"scope": {scope}, "resource": {res}}))
		q := loc.Query()
		if !strings.HasPrefix(loc.String(), callback+"?") || q.Get("error") != "invalid_target" ||
			!strings.HasPrefix(q.Get("error_description"), "AADSTS9010010: ") || q.Get("code") != "" || q.Get("state") != "st-3" {
			t.Errorf("authorize with resource %s: redirected to %s, want error=invalid_target, AADSTS9010010, the state and no code", res, loc)
		}
	}
	mismatched(t, authorize(t, s, url.Values{"client_id": {codeClient}, "redirect_uri": {"https://evil.example.com/cb"}, "resource": {resource}}), "resource, unregistered")

	code := codeFor(t, s, url.Values{"scope": {scope}})
	status, body := token(ctx, t, s, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {codeClient},
		"redirect_uri": {callback}, "resource": {resource}})
	if status != http.StatusBadRequest || body["error"] != "invalid_target" {
		t.Errorf("token with resource: %d %s, want 400 invalid_target", status, refusal(body))
	}
	if _, err := s.Token(ctx, "svc-a", []string{scope}, resource); err == nil || !strings.Contains(err.Error(), "invalid_target") {
		t.Errorf("client_credentials with resource: %v, want a 400 invalid_target", err)
	}
	// The refusal spent nothing: the code still serves a request without
	// resource, whose token is Entra's.
	status, body = exchange(ctx, t, s, code, "")
	if status != http.StatusOK {
		t.Fatalf("token without resource: %d %s", status, refusal(body))
	}
	keys := jwks(t, s)
	if _, c := verify(t, body["access_token"].(string), keys); c["aud"] != entraApp || c["scp"] != "notes:read" || c["azp"] != codeClient {
		t.Errorf("claims %v, want aud %s, scp notes:read, azp %s", c, entraApp, codeClient)
	}
}

// noRedirects is a client that shows a redirect rather than follows it,
// as the tests must see where the provider would send the user.
func noRedirects() *http.Client {
	return &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// authorize sends an authorization request for a code with q and returns
// the answer, its body read into memory.
func authorize(t *testing.T, s *Server, q url.Values) *http.Response {
	t.Helper()
	q = maps.Clone(q)
	q.Set("response_type", "code")
	resp, err := noRedirects().Get(s.Issuer + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp
}

// redirected returns where resp redirects, failing t if it does not.
func redirected(t *testing.T, resp *http.Response) *url.URL {
	t.Helper()
	loc, err := resp.Location()
	if resp.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("authorize %s: %d (%v), want a redirect", resp.Request.URL.RawQuery, resp.StatusCode, err)
	}
	return loc
}

// mismatched fails t unless resp is a 400 redirect_mismatch without a
// Location, as a provider refuses an unregistered callback.
func mismatched(t *testing.T, resp *http.Response, what string) {
	t.Helper()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
		t.Errorf("redirect_uri %q: %d, Location %q; want 400 and no Location", what, resp.StatusCode, resp.Header.Get("Location"))
	}
	var body struct {
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error != "redirect_mismatch" {
		t.Errorf("redirect_uri %q: body error %q (%v), want redirect_mismatch", what, body.Error, err)
	}
}

// codeFor returns the code the authorization endpoint issues codeClient
// at callback for a request with q added.
func codeFor(t *testing.T, s *Server, q url.Values) string {
	t.Helper()
	q = maps.Clone(q)
	q.Set("client_id", codeClient)
	q.Set("redirect_uri", callback)
	loc := redirected(t, authorize(t, s, q))
	code := loc.Query().Get("code")
	if code == "" {
		t.Fatalf("redirected to %s, want a code", loc)
	}
	return code
}

// exchange is the token request for code as codeClient at callback,
// with verifier ("" for none) as code_verifier.
func exchange(ctx context.Context, t *testing.T, s *Server, code, verifier string) (int, map[string]any) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {codeClient}, "redirect_uri": {callback}}
	if verifier != "" {
		form.Set("code_verifier", verifier)
	}
	return token(ctx, t, s, form)
}

// token posts form to the token endpoint and returns the status and the
// JSON answer. It calls no t.Fatal, so that goroutines may use it.
func token(ctx context.Context, t *testing.T, s *Server, form url.Values) (int, map[string]any) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.TokenEndpoint(), strings.NewReader(form.Encode()))
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := noRedirects().Do(req)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Errorf("token answer %d: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, body
}

// refusal is what a token answer says, short: its error and description,
// or "a token" when it carries one.
func refusal(body map[string]any) string {
	if body["access_token"] != nil {
		return "a token"
	}
	return fmt.Sprintf("%v (%v)", body["error"], body["error_description"])
}
