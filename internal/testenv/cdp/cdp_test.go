//go:build unix

package cdp

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// consentCSP is the consent page's policy: no script, no style, no
// frame may hold it. A form may still post (form-action does not fall
// back to default-src).
const consentCSP = "default-src 'none'; frame-ancestors 'none'"

// consentPage is a page whose own script the policy forbids: were it to
// run, the title would change and window.ran be set.
const consentPage = `<!doctype html>
<html><head><title>Consent</title>
<script>document.title = "the page's script ran"; window.ran = true;</script>
</head><body>
<form method="post" action="/submit">
<input type="hidden" name="consent" value="yes">
<button id="approve" type="submit">Approve</button>
<button id="noop" type="button">Nothing</button>
</form>
</body></html>`

// consentRig serves the consent page at /consent, takes its form at
// /submit and sends the browser on with a 303 to next (/done sets the
// consent cookie); /to-next redirects there too, and /to-dead to a port
// nobody listens on. It records the forms posted.
type consentRig struct {
	srv *httptest.Server

	mu     sync.Mutex
	posted []string
}

func newConsentRig(t *testing.T, next string) *consentRig {
	t.Helper()
	r := &consentRig{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /consent", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Security-Policy", consentCSP)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, consentPage)
	})
	mux.HandleFunc("POST /submit", func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.posted = append(r.posted, req.PostFormValue("consent"))
		r.mu.Unlock()
		http.Redirect(w, req, next, http.StatusSeeOther)
	})
	mux.HandleFunc("GET /done", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Add("Set-Cookie", "consent=granted; Path=/; Secure; HttpOnly; SameSite=Strict")
		w.Header().Add("Set-Cookie", "seen=1; Path=/done; Max-Age=600; SameSite=Lax")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Done</title><p id="done">granted</p>`)
	})
	// The same place as a redirect the browser is sent to directly.
	mux.HandleFunc("GET /to-next", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, next, http.StatusFound)
	})
	// A redirect to a loopback port nobody listens on, as to a client's
	// redirect_uri whose listener is gone.
	dead := deadPort(t)
	mux.HandleFunc("GET /to-dead", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, dead+"/callback?code=c-1", http.StatusFound)
	})
	r.srv = httptest.NewUnstartedServer(mux)
	r.srv.StartTLS()
	t.Cleanup(r.srv.Close)
	return r
}

// deadPort returns http://127.0.0.1:<port> for a port that was free a
// moment ago and that nothing listens on.
func deadPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String()
	ln.Close()
	return u
}

// TestConsentPage drives the consent page as a user would: it loads under
// its strict policy, the test's script runs there though the page's
// cannot, the approve button posts the form, the 303 leads to the page
// that sets the cookie, and the cookie is there with its attributes. At
// the end the browser closes, all of it.
func TestConsentPage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rig := newConsentRig(t, "/done?step=2")
	b := Start(t, WithCertificate(rig.srv.Certificate().Raw))
	p, err := b.NewPage(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if err := p.Navigate(ctx, rig.srv.URL+"/consent"); err != nil {
		t.Fatal(err)
	}
	if u, err := p.URL(ctx); err != nil || u != rig.srv.URL+"/consent" {
		t.Errorf("URL after Navigate: %q, %v", u, err)
	}

	// Eval under the CSP: values, a promise awaited, an exception.
	var page struct {
		Title  string `json:"title"`
		Ran    bool   `json:"ran"`
		Button string `json:"button"`
	}
	if err := p.Eval(ctx, `({title: document.title, ran: window.ran === true, button: document.querySelector("#approve").textContent})`, &page); err != nil {
		t.Fatal(err)
	}
	if page.Title != "Consent" || page.Ran || page.Button != "Approve" {
		t.Errorf("the consent page as evaluated: %+v; want its own title, its script not run, the button", page)
	}
	var n int
	if err := p.Eval(ctx, `new Promise(resolve => setTimeout(() => resolve(6 * 7), 10))`, &n); err != nil || n != 42 {
		t.Errorf("an awaited promise: %d, %v; want 42", n, err)
	}
	if err := p.Eval(ctx, `undefined`, &n); err != nil || n != 42 {
		t.Errorf("undefined: %d, %v; want out untouched and no error", n, err)
	}
	if err := p.Eval(ctx, `(() => { throw new Error("refused by the test") })()`, nil); err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Errorf("an exception: %v, want it as the error", err)
	}
	// The policy still holds for the page: a script element added to it
	// does not run.
	var injected bool
	if err := p.Eval(ctx, `(() => { const s = document.createElement("script"); s.textContent = "window.injected = true"; document.head.append(s); return window.injected === true })()`, &injected); err != nil || injected {
		t.Errorf("a script element added to the page: ran %v, %v; want it refused by the policy", injected, err)
	}

	// Click: no element is an error; a button that leads nowhere is
	// clicked and nothing loads; the approve button posts, and the chain
	// of the 303 ends at /done.
	if err := p.Click(ctx, "#no-such-button"); !errors.Is(err, ErrNoElement) {
		t.Errorf("clicking nothing: %v, want ErrNoElement", err)
	}
	if err := p.Click(ctx, "#noop"); err != nil {
		t.Errorf("clicking a button that leads nowhere: %v", err)
	}
	if u, err := p.URL(ctx); err != nil || u != rig.srv.URL+"/consent" {
		t.Errorf("URL after a click that leads nowhere: %q, %v", u, err)
	}
	if err := p.Click(ctx, "#approve"); err != nil {
		t.Fatal(err)
	}
	want := rig.srv.URL + "/done?step=2"
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	u, err := p.WaitURL(wctx, func(u string) bool { return u == want })
	wcancel()
	if err != nil || u != want {
		t.Fatalf("WaitURL: %q, %v; want %s", u, err, want)
	}
	var done string
	if err := p.Eval(ctx, `document.querySelector("#done").textContent`, &done); err != nil || done != "granted" {
		t.Errorf("the page the redirect led to: %q, %v", done, err)
	}
	rig.mu.Lock()
	posted := strings.Join(rig.posted, ",")
	rig.mu.Unlock()
	if posted != "yes" {
		t.Errorf("forms posted: %q, want one with consent=yes", posted)
	}

	cookies, err := p.Cookies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Cookie{}
	for _, c := range cookies {
		byName[c.Name] = c
	}
	if c := byName["consent"]; c.Value != "granted" || c.Domain != "127.0.0.1" || c.Path != "/" || !c.Secure || !c.HTTPOnly ||
		c.SameSite != "Strict" || !c.Expires.IsZero() {
		t.Errorf("consent cookie %+v, want granted, 127.0.0.1, /, Secure, HttpOnly, Strict, a session cookie", c)
	}
	if c := byName["seen"]; c.Value != "1" || c.Path != "/done" || c.Secure || c.HTTPOnly || c.SameSite != "Lax" ||
		c.Expires.Before(time.Now().Add(500*time.Second)) || c.Expires.After(time.Now().Add(700*time.Second)) {
		t.Errorf("seen cookie %+v, want 1, /done, Lax, expiring in 10 minutes", c)
	}

	// A WaitURL that never matches ends with its context.
	wctx, wcancel = context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = p.WaitURL(wctx, func(string) bool { return false })
	wcancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitURL past its deadline: %v", err)
	}

	// A redirect to a port nobody listens on: Navigate says so, and the
	// URL is the one the browser tried, as its address bar shows it.
	err = p.Navigate(ctx, rig.srv.URL+"/to-dead")
	if err == nil || !strings.Contains(err.Error(), "ERR_CONNECTION_REFUSED") {
		t.Errorf("a redirect to a dead port: %v, want ERR_CONNECTION_REFUSED", err)
	}
	if u, err := p.URL(ctx); err != nil || !strings.HasSuffix(u, "/callback?code=c-1") {
		t.Errorf("URL after a redirect to a dead port: %q, %v", u, err)
	}

	// Shutdown: the browser closes, and nothing of it runs after.
	pgid := b.cmd.Process.Pid
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if Running(pgid, b.profile) {
		t.Errorf("chromium's process group %d still runs after Close", pgid)
	}
	if _, err := p.URL(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("a command after Close: %v, want ErrClosed", err)
	}
}

// TestCertificates: a page on a TLS server whose certificate the browser
// was not handed does not load (when handed another); it does with
// certificate errors ignored. (TestConsentPage loads one with its own
// certificate handed over.)
func TestCertificates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>tls</title>`)
	}))
	defer srv.Close()
	other := selfSigned(t)

	for _, c := range []struct {
		name string
		opts []Option
		load bool
	}{
		{"another certificate", []Option{WithCertificate(other)}, false},
		{"errors ignored", []Option{IgnoreCertificateErrors()}, true},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			b := Start(t, c.opts...)
			p, err := b.NewPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Navigate(ctx, srv.URL+"/")
			if c.load && err != nil {
				t.Errorf("did not load: %v", err)
			}
			if !c.load && (err == nil || !strings.Contains(err.Error(), "ERR_CERT")) {
				t.Errorf("loaded, or failed otherwise: %v", err)
			}
		})
	}
}

// selfSigned returns a certificate of a key of its own for 127.0.0.1,
// which no server here presents (httptest's servers all share one).
func selfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "another"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// TestRedirectToCallback is the end of an authorization: the consent page,
// on a name of its own that resolves to loopback, posts, and its 303 sends
// the browser to another site, a client's loopback redirect_uri, whose
// listener gets the code. Any other name resolves to nothing.
func TestRedirectToCallback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got := make(chan string, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case got <- req.URL.RawQuery:
		default:
		}
		fmt.Fprint(w, `<!doctype html><title>signed in</title>`)
	}))
	defer cb.Close()
	callback := cb.URL + "/callback?code=c-2&state=s-2"
	rig := newConsentRig(t, callback)
	b := Start(t, ResolveToLoopback("consent.test"), IgnoreCertificateErrors())
	p, err := b.NewPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(rig.srv.Listener.Addr().String())
	if err := p.Navigate(ctx, "https://consent.test:"+port+"/consent"); err != nil {
		t.Fatal(err)
	}
	if err := p.Click(ctx, "#approve"); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	u, err := p.WaitURL(wctx, func(u string) bool { return strings.HasPrefix(u, cb.URL+"/callback?") })
	wcancel()
	if err != nil || u != callback {
		t.Fatalf("WaitURL: %q, %v; want %s", u, err, callback)
	}
	select {
	case q := <-got:
		if q != "code=c-2&state=s-2" {
			t.Errorf("the callback got %q", q)
		}
	case <-ctx.Done():
		t.Fatal("the callback got nothing")
	}
	var title string
	if err := p.Eval(ctx, `document.title`, &title); err != nil || title != "signed in" {
		t.Errorf("the callback's page: %q, %v", title, err)
	}

	// Navigate follows a redirect to the other site to its end too.
	if err := p.Navigate(ctx, "about:blank"); err != nil {
		t.Fatal(err)
	}
	if err := p.Navigate(ctx, "https://consent.test:"+port+"/to-next"); err != nil {
		t.Fatal(err)
	}
	if u, err := p.URL(ctx); err != nil || u != callback {
		t.Errorf("URL after Navigate through a redirect to the callback: %q, %v", u, err)
	}
	if err := p.Eval(ctx, `document.title`, &title); err != nil || title != "signed in" {
		t.Errorf("the callback's page after Navigate: %q, %v", title, err)
	}

	if err := p.Navigate(ctx, "http://elsewhere.example/"); err == nil || !strings.Contains(err.Error(), "ERR_NAME_NOT_RESOLVED") {
		t.Errorf("a name not mapped to loopback: %v, want ERR_NAME_NOT_RESOLVED", err)
	}
}
