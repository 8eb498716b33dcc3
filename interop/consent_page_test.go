//go:build unix && !integration

package interop

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/cdp"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/oauthmock"
)

// clientListener is a client's loopback redirect URI, as a native client
// runs one: it records every authorization response that reaches it.
type clientListener struct {
	URL string
	mu  sync.Mutex
	got []url.Values
}

func newClientListener(t *testing.T) *clientListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &clientListener{URL: "http://" + ln.Addr().String() + "/callback"}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			// The browser's own requests of the origin (its icon).
			http.NotFound(w, r)
			return
		}
		l.mu.Lock()
		l.got = append(l.got, r.URL.Query())
		l.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>done</title><p>You may close this window.</p>")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return l
}

func (l *clientListener) answers() []url.Values {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]url.Values(nil), l.got...)
}

// register registers a client whose redirect is redirect at the proxy's
// registration endpoint and returns its id.
func register(t *testing.T, ep *authEndpoint, name, redirect string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"redirect_uris": []string{redirect}, "client_name": name, "token_endpoint_auth_method": "none"})
	resp, err := ep.Client.Post(ep.URL+"/register", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reg); err != nil || resp.StatusCode != http.StatusCreated || !strings.HasPrefix(reg.ClientID, "mcp-dcr:") {
		t.Fatalf("registration: %d %v %q", resp.StatusCode, err, reg.ClientID)
	}
	return reg.ClientID
}

// pkce is a verifier and its S256 challenge.
func pkce() (verifier, challenge string) {
	b := make([]byte, 32)
	rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	d := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(d[:])
}

// authorizeURL is an authorization request of client to the proxy.
func authorizeURL(ep *authEndpoint, client, redirect, state, challenge string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect}, "state": {state},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "scope": {ep.URL + "/" + scopeRead}, "resource": {ep.URL}}
	return ep.URL + "/authorize?" + q.Encode()
}

// TestConsentPage drives the proxy's consent page in headless Chromium,
// on the HTTP API door behind its TLS front (so the cookies are the
// deployed ones: __Host-, Secure): approving it brings the code to the
// client, denying it brings access_denied, and a provider URL captured
// from an attacker's approved flow (CVE-2026-27124) goes nowhere in the
// victim's browser. Each verified case prints `consent-page: <case> ok`.
func TestConsentPage(t *testing.T) {
	ctx := authContext(t)
	ep := reserveLambda(t)
	as := oauthmock.NewWith(t, oauthmock.Options{ClientID: publicClient, Profile: "cognito", RedirectURIs: []string{ep.URL + "/callback"}})
	// The browser meets the provider over https, as it would: Chromium
	// warns before a form on an https page leads to an http one.
	asURL, _ := url.Parse(as.Issuer)
	asFront := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(asURL))
	t.Cleanup(asFront.Close)
	env := append(ep.AuthEnv(as.Issuer), "MCP_AUTH_CLIENT_IDS="+publicClient, "MCP_AUTH_SCOPE_PREFIX="+ep.URL+"/",
		"MCP_AUTH_PROXY=true", "MCP_AUTH_REGISTRATION_CLIENT_ID="+publicClient,
		"MCP_AUTH_AUTHORIZATION_ENDPOINT="+asFront.URL+"/authorize", "MCP_AUTH_TOKEN_ENDPOINT="+as.Issuer+"/token")
	ep.Start(env...)
	browser := cdp.Start(t, cdp.IgnoreCertificateErrors())

	t.Run("approve", func(t *testing.T) {
		app := newClientListener(t)
		client := register(t, ep, "Consent <i>Approver</i>", app.URL)
		verifier, challenge := pkce()
		page, err := browser.NewPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := page.Navigate(ctx, authorizeURL(ep, client, app.URL, "st-approve", challenge)); err != nil {
			t.Fatal(err)
		}
		var text string
		if err := page.Eval(ctx, `document.body.innerText`, &text); err != nil {
			t.Fatal(err)
		}
		// The client's name as text (escaped, not markup), the redirect's
		// host and the scope.
		if !strings.Contains(text, "Consent <i>Approver</i>") || !strings.Contains(text, strings.TrimPrefix(strings.Split(app.URL, "/callback")[0], "http://")) ||
			!strings.Contains(text, scopeRead) {
			t.Fatalf("the consent page says:\n%s", text)
		}
		var scripts int
		if err := page.Eval(ctx, `document.scripts.length`, &scripts); err != nil || scripts != 0 {
			t.Errorf("the consent page has %d scripts (%v)", scripts, err)
		}
		if err := page.Click(ctx, "#approve"); err != nil {
			t.Fatal(err)
		}
		if _, err := page.WaitURL(ctx, func(u string) bool { return strings.HasPrefix(u, app.URL) }); err != nil {
			t.Fatal(err)
		}
		got := app.answers()
		if len(got) != 1 || got[0].Get("code") == "" || got[0].Get("state") != "st-approve" || got[0].Get("iss") != ep.URL {
			t.Fatalf("the client received %v", got)
		}
		cookies, err := page.Cookies(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var consent *cdp.Cookie
		for i, c := range cookies {
			if c.Name == "__Host-mcp-consent" {
				consent = &cookies[i]
			}
		}
		if consent == nil || !consent.Secure || !consent.HTTPOnly || consent.SameSite != "Lax" || consent.Path != "/" {
			t.Errorf("the consent cookie: %+v (all: %+v)", consent, cookies)
		}
		// The code works once, with the verifier.
		form := url.Values{"grant_type": {"authorization_code"}, "code": {got[0].Get("code")}, "client_id": {client},
			"redirect_uri": {app.URL}, "code_verifier": {verifier}}
		for i, want := range []int{http.StatusOK, http.StatusBadRequest} {
			resp, err := ep.Client.PostForm(ep.URL+"/token", form)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("token request %d answered %d, want %d", i, resp.StatusCode, want)
			}
		}
		if !t.Failed() {
			fmt.Println("consent-page: approve ok")
		}
	})

	t.Run("deny", func(t *testing.T) {
		app := newClientListener(t)
		client := register(t, ep, "Consent Denier", app.URL)
		_, challenge := pkce()
		page, err := browser.NewPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := page.Navigate(ctx, authorizeURL(ep, client, app.URL, "st-deny", challenge)); err != nil {
			t.Fatal(err)
		}
		if err := page.Click(ctx, "#deny"); err != nil {
			t.Fatal(err)
		}
		if _, err := page.WaitURL(ctx, func(u string) bool { return strings.HasPrefix(u, app.URL) }); err != nil {
			t.Fatal(err)
		}
		got := app.answers()
		if len(got) != 1 || got[0].Get("error") != "access_denied" || got[0].Get("state") != "st-deny" || got[0].Get("code") != "" {
			t.Fatalf("the client received %v", got)
		}
		if !t.Failed() {
			fmt.Println("consent-page: deny ok")
		}
	})

	t.Run("captured-url", func(t *testing.T) {
		// The attacker's flow, for the attacker's client, approved in the
		// attacker's browser; the provider URL it is sent to is captured.
		evil := newClientListener(t)
		client := register(t, ep, "Evil", evil.URL)
		_, challenge := pkce()
		jar, _ := cookiejar.New(nil)
		attacker := &http.Client{Transport: ep.Client.Transport, Timeout: testTimeout, Jar: jar,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := attacker.Get(authorizeURL(ep, client, evil.URL, "st-evil", challenge))
		if err != nil {
			t.Fatal(err)
		}
		page := readAll(resp)
		form := url.Values{"decision": {"approve"}}
		for _, m := range hiddenInput.FindAllStringSubmatch(page, -1) {
			form.Set(m[1], htmlUnescape(m[2]))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL+"/authorize", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", ep.Origin)
		resp, err = attacker.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		captured := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(captured, asFront.URL+"/authorize") {
			t.Fatalf("the attacker's approval answered %d to %q", resp.StatusCode, captured)
		}
		// The victim, signed in at the provider (which approves at once),
		// opens it in their own browser.
		victim, err := browser.NewPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := victim.Navigate(ctx, captured); err != nil {
			t.Fatal(err)
		}
		at, err := victim.WaitURL(ctx, func(u string) bool { return strings.HasPrefix(u, ep.URL+"/callback") || strings.HasPrefix(u, evil.URL) })
		if err != nil {
			t.Fatal(err)
		}
		var text string
		if err := victim.Eval(ctx, `document.body.innerText`, &text); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(at, ep.URL+"/callback") || !strings.Contains(text, "started in another browser") {
			t.Errorf("the victim's browser ended at %s saying %q", at, text)
		}
		if got := evil.answers(); len(got) != 0 {
			t.Errorf("the attacker's redirect received %v", got)
		}
		if !t.Failed() {
			fmt.Println("consent-page: captured-url ok")
		}
	})
}

// htmlUnescape undoes html/template's attribute escaping of a sealed
// value (base64url and dots, so only a few entities).
func htmlUnescape(s string) string {
	return strings.NewReplacer("&#43;", "+", "&#34;", `"`, "&#39;", "'", "&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(s)
}
