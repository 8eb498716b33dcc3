package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
)

// hits reports the issuer's metadata and key set request counts.
func hits(f *fakeIssuer) (meta, jwks int32) { return f.metaHits.Load(), f.jwksHits.Load() }

func wantHits(t *testing.T, f *fakeIssuer, meta, jwks int32) {
	t.Helper()
	if m, j := hits(f); m != meta || j != jwks {
		t.Fatalf("metadata fetched %d times, key set %d; want %d and %d", m, j, meta, jwks)
	}
}

func wantClass(t *testing.T, err, class error) {
	t.Helper()
	if class == nil {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	if !errors.Is(err, class) {
		t.Fatalf("got %v, want %v", err, class)
	}
}

// TestUnknownKidRefresh: an unknown kid refreshes the key set once, then
// is refused; another unknown kid within MinRefresh fetches nothing; after
// MinRefresh a rotated-in key is found.
func TestUnknownKidRefresh(t *testing.T) {
	k := testKeys()
	f := newIssuer(t, "", jwk(k.rsa, "r1", nil))
	clk := newClock()
	v := f.verifier(t, clk, auth.Config{MinRefresh: time.Minute})
	ctx := context.Background()
	tokenClaims := claimsFor(f.issuer, epoch)
	ok := mint("RS256", k.rsa, map[string]any{"kid": "r1"}, tokenClaims)
	r2 := mint("RS256", k.rsa2, map[string]any{"kid": "r2"}, tokenClaims)

	wantHits(t, f, 0, 0) // New fetched nothing
	_, err := v.Verify(ctx, ok, audience)
	wantClass(t, err, nil)
	wantHits(t, f, 1, 1)

	_, err = v.Verify(ctx, r2, audience)
	wantClass(t, err, auth.ErrInvalid)
	wantHits(t, f, 1, 2) // exactly one refresh, no new discovery

	_, err = v.Verify(ctx, mint("RS256", k.rsa2, map[string]any{"kid": "r3"}, tokenClaims), audience)
	wantClass(t, err, auth.ErrInvalid)
	wantHits(t, f, 1, 2) // within MinRefresh: no fetch

	// The issuer rotates r2 in; until MinRefresh has passed it stays unknown.
	f.set(func(f *fakeIssuer) { f.keys = append(f.keys, jwk(k.rsa2, "r2", nil)) })
	clk.Advance(59 * time.Second)
	_, err = v.Verify(ctx, r2, audience)
	wantClass(t, err, auth.ErrInvalid)
	wantHits(t, f, 1, 2)

	clk.Advance(time.Second)
	_, err = v.Verify(ctx, r2, audience)
	wantClass(t, err, nil)
	wantHits(t, f, 1, 3)

	// Known keys never fetch.
	for _, tok := range []string{ok, r2} {
		_, err = v.Verify(ctx, tok, audience)
		wantClass(t, err, nil)
	}
	wantHits(t, f, 1, 3)
}

// TestKeyEndpointDown: with no keys held, an unreachable key set is
// ErrUnavailable, and the first request after it recovers succeeds. With
// keys held, a failed refresh keeps them.
func TestKeyEndpointDown(t *testing.T) {
	k := testKeys()
	ctx := context.Background()
	for _, broken := range []struct {
		name     string
		breakSet func(f *fakeIssuer)
	}{
		{"503", func(f *fakeIssuer) { f.jwksStatus = http.StatusServiceUnavailable }},
		{"404", func(f *fakeIssuer) { f.jwksStatus = http.StatusNotFound }},
		{"HTML", func(f *fakeIssuer) { f.jwksBody = "<html>maintenance</html>" }},
		{"not a key set", func(f *fakeIssuer) { f.jwksBody = `{"keys":"r1"}` }},
		{"no usable key", func(f *fakeIssuer) { f.jwksBody = `{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}` }},
		{"too large", func(f *fakeIssuer) { f.jwksBody = `{"keys":[],"pad":"` + strings.Repeat("x", 1<<20) + `"}` }},
	} {
		t.Run(broken.name, func(t *testing.T) {
			f := newIssuer(t, "", jwk(k.rsa, "r1", nil))
			clk := newClock()
			v := f.verifier(t, clk, auth.Config{MinRefresh: time.Minute})
			tokenClaims := claimsFor(f.issuer, epoch)
			ok := mint("RS256", k.rsa, map[string]any{"kid": "r1"}, tokenClaims)

			f.set(broken.breakSet)
			_, err := v.Verify(ctx, ok, audience)
			wantClass(t, err, auth.ErrUnavailable)
			if errors.Is(err, auth.ErrInvalid) {
				t.Fatalf("%v is also ErrInvalid", err)
			}
			checkNoTokenBytes(t, err, ok)
			// No keys held: the next request tries again, at once.
			_, err = v.Verify(ctx, ok, audience)
			wantClass(t, err, auth.ErrUnavailable)
			wantHits(t, f, 1, 2)

			f.set(func(f *fakeIssuer) { f.jwksStatus, f.jwksBody = 0, "" })
			_, err = v.Verify(ctx, ok, audience)
			wantClass(t, err, nil)
			wantHits(t, f, 1, 3)

			// Keys held, the key set breaks again: known keys keep working;
			// an unknown kid cannot be decided, so it is unavailable, and
			// stays so without a fetch until MinRefresh has passed.
			f.set(broken.breakSet)
			newKid := mint("RS256", k.rsa2, map[string]any{"kid": "r2"}, tokenClaims)
			_, err = v.Verify(ctx, newKid, audience)
			wantClass(t, err, auth.ErrUnavailable)
			wantHits(t, f, 1, 4)
			_, err = v.Verify(ctx, ok, audience)
			wantClass(t, err, nil)
			_, err = v.Verify(ctx, newKid, audience)
			wantClass(t, err, auth.ErrUnavailable)
			wantHits(t, f, 1, 4)

			f.set(func(f *fakeIssuer) {
				f.jwksStatus, f.jwksBody = 0, ""
				f.keys = append(f.keys, jwk(k.rsa2, "r2", nil))
			})
			clk.Advance(time.Minute)
			_, err = v.Verify(ctx, newKid, audience)
			wantClass(t, err, nil)
			_, err = v.Verify(ctx, ok, audience)
			wantClass(t, err, nil)
			wantHits(t, f, 1, 5)
		})
	}
}

// TestIssuerUnreachable: nothing listening at the issuer is ErrUnavailable.
func TestIssuerUnreachable(t *testing.T) {
	k := testKeys()
	f := newIssuer(t, "", jwk(k.rsa, "r1", nil))
	v := f.verifier(t, newClock(), auth.Config{})
	f.srv.Close()
	_, err := v.Verify(context.Background(), mint("RS256", k.rsa, map[string]any{"kid": "r1"}, claimsFor(f.issuer, epoch)), audience)
	wantClass(t, err, auth.ErrUnavailable)
	if !strings.Contains(err.Error(), "/.well-known/oauth-authorization-server") || !strings.Contains(err.Error(), "/.well-known/openid-configuration") {
		t.Errorf("error %q does not name both documents tried", err)
	}
}

// TestDiscoveryOtherIssuer: metadata that names another issuer is not
// used. That is the issuer's (or the configuration's) fault, not the
// token's: ErrUnavailable, and its key set is never fetched.
func TestDiscoveryOtherIssuer(t *testing.T) {
	k := testKeys()
	f := newIssuer(t, "", jwk(k.rsa, "r1", nil))
	f.set(func(f *fakeIssuer) { f.docIssuer = "https://attacker.example" })
	v := f.verifier(t, newClock(), auth.Config{})
	_, err := v.Verify(context.Background(), mint("RS256", k.rsa, map[string]any{"kid": "r1"}, claimsFor(f.issuer, epoch)), audience)
	wantClass(t, err, auth.ErrUnavailable)
	if errors.Is(err, auth.ErrInvalid) || !strings.Contains(err.Error(), "attacker.example") {
		t.Errorf("error %q", err)
	}
	wantHits(t, f, 2, 0) // both documents tried, neither used
}

// TestDiscoveryPaths: an issuer with a path is found at the RFC 8414 URL
// (well-known segment inserted before the path) and, when only OpenID
// Connect discovery is served, at the OIDC URL (appended).
func TestDiscoveryPaths(t *testing.T) {
	k := testKeys()
	for _, c := range []struct {
		name, path, serve string
		wantPaths         []string
	}{
		{"RFC 8414, no path", "", "rfc8414", []string{"/.well-known/oauth-authorization-server", "/keys"}},
		{"RFC 8414, path", "/tenant/one", "rfc8414", []string{"/.well-known/oauth-authorization-server/tenant/one", "/keys"}},
		{"OIDC fallback, no path", "", "oidc", []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration", "/keys"}},
		{"OIDC fallback, path", "/tenant/one", "oidc", []string{"/.well-known/oauth-authorization-server/tenant/one", "/tenant/one/.well-known/openid-configuration", "/keys"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newIssuer(t, c.path, jwk(k.rsa, "r1", nil))
			f.set(func(f *fakeIssuer) { f.serve = c.serve })
			v := f.verifier(t, newClock(), auth.Config{})
			_, err := v.Verify(context.Background(), mint("RS256", k.rsa, map[string]any{"kid": "r1"}, claimsFor(f.issuer, epoch)), audience)
			wantClass(t, err, nil)
			f.mu.Lock()
			defer f.mu.Unlock()
			if strings.Join(f.paths, " ") != strings.Join(c.wantPaths, " ") {
				t.Errorf("requested %q, want %q", f.paths, c.wantPaths)
			}
		})
	}
}

// TestConfiguredJWKSURL: with JWKSURL, no discovery.
func TestConfiguredJWKSURL(t *testing.T) {
	k := testKeys()
	f := newIssuer(t, "", jwk(k.rsa, "r1", nil))
	v := f.verifier(t, newClock(), auth.Config{JWKSURL: f.srv.URL + "/keys"})
	_, err := v.Verify(context.Background(), mint("RS256", k.rsa, map[string]any{"kid": "r1"}, claimsFor(f.issuer, epoch)), audience)
	wantClass(t, err, nil)
	wantHits(t, f, 0, 1)
}

// TestAmbiguousKidless: a token without kid is refused when two keys fit
// its alg, rather than tried against each.
func TestAmbiguousKidless(t *testing.T) {
	k := testKeys()
	f := newIssuer(t, "", jwk(k.rsa, "r1", nil), jwk(k.rsa2, "r2", nil))
	v := f.verifier(t, newClock(), auth.Config{})
	tok := mint("RS256", k.rsa, nil, claimsFor(f.issuer, epoch))
	_, err := v.Verify(context.Background(), tok, audience)
	wantClass(t, err, auth.ErrInvalid)
	if !strings.Contains(err.Error(), "several") {
		t.Errorf("error %q", err)
	}
}

// TestConcurrentNewKid: 100 concurrent verifications of a token with a new
// kid cause one key-set fetch; so do 100 concurrent first requests.
func TestConcurrentNewKid(t *testing.T) {
	k := testKeys()
	for _, cold := range []bool{false, true} {
		name := "warm"
		if cold {
			name = "cold"
		}
		t.Run(name, func(t *testing.T) {
			f := newIssuer(t, "", jwk(k.rsa, "r1", nil))
			v := f.verifier(t, newClock(), auth.Config{})
			ctx := context.Background()
			tokenClaims := claimsFor(f.issuer, epoch)
			var jwks int32 // key set fetches before the burst
			if !cold {
				_, err := v.Verify(ctx, mint("RS256", k.rsa, map[string]any{"kid": "r1"}, tokenClaims), audience)
				wantClass(t, err, nil)
				jwks = 1
			}
			gate := make(chan struct{})
			f.set(func(f *fakeIssuer) {
				f.keys = append(f.keys, jwk(k.ec, "e2", nil))
				f.gate = gate
			})
			tok := mint("ES256", k.ec, map[string]any{"kid": "e2"}, tokenClaims)

			const n = 100
			var started, done sync.WaitGroup
			errs := make(chan error, n)
			started.Add(n)
			done.Add(n)
			for range n {
				go func() {
					defer done.Done()
					started.Done()
					_, err := v.Verify(ctx, tok, audience)
					errs <- err
				}()
			}
			started.Wait()
			// Let the fetch start and the others pile up behind it.
			deadline := time.Now().Add(5 * time.Second)
			for f.jwksHits.Load() == jwks && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond)
			close(gate)
			done.Wait()
			close(errs)
			for err := range errs {
				wantClass(t, err, nil)
			}
			wantHits(t, f, 1, jwks+1)
		})
	}
}

// TestWaitEndsWithContext: a caller whose context ends while the key set
// is being fetched gets ErrUnavailable at once; the fetch goes on for the
// others.
func TestWaitEndsWithContext(t *testing.T) {
	k := testKeys()
	f := newIssuer(t, "", jwk(k.rsa, "r1", nil))
	gate := make(chan struct{})
	f.set(func(f *fakeIssuer) { f.gate = gate })
	v := f.verifier(t, newClock(), auth.Config{})
	tok := mint("RS256", k.rsa, map[string]any{"kid": "r1"}, claimsFor(f.issuer, epoch))

	patient := make(chan error, 1)
	go func() {
		_, err := v.Verify(context.Background(), tok, audience)
		patient <- err
	}()
	for f.jwksHits.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := v.Verify(ctx, tok, audience)
	wantClass(t, err, auth.ErrUnavailable)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap the context's", err)
	}
	close(gate)
	wantClass(t, <-patient, nil)
	wantHits(t, f, 1, 1)
}

// failingTransport fails the test on any request.
type failingTransport struct{ t *testing.T }

func (f failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.t.Errorf("unexpected request to %s", r.URL)
	return nil, errors.New("no network")
}

func TestNew(t *testing.T) {
	noNet := &http.Client{Transport: failingTransport{t}}
	for _, c := range []struct {
		name string
		cfg  auth.Config
		want string // "" accepts
	}{
		{"https issuer", auth.Config{Issuer: "https://as.example.com"}, ""},
		{"issuer with a path", auth.Config{Issuer: "https://as.example.com/tenant/1"}, ""},
		{"loopback http", auth.Config{Issuer: "http://127.0.0.1:9000"}, ""},
		{"localhost http", auth.Config{Issuer: "http://localhost:9000"}, ""},
		{"IPv6 loopback http", auth.Config{Issuer: "http://[::1]:9000"}, ""},
		{"all settings", auth.Config{Issuer: "https://as.example.com", JWKSURL: "https://keys.example.com/jwks.json",
			Algorithms: []string{"RS256", "ES256", "RS256"}, Leeway: 5 * time.Minute, MinRefresh: time.Hour}, ""},
		{"no issuer", auth.Config{}, "Issuer"},
		{"relative issuer", auth.Config{Issuer: "/issuer"}, "Issuer"},
		{"http issuer", auth.Config{Issuer: "http://as.example.com"}, "Issuer"},
		{"ftp issuer", auth.Config{Issuer: "ftp://as.example.com"}, "Issuer"},
		{"issuer with query", auth.Config{Issuer: "https://as.example.com?tenant=1"}, "Issuer"},
		{"issuer with fragment", auth.Config{Issuer: "https://as.example.com#x"}, "Issuer"},
		{"issuer with user", auth.Config{Issuer: "https://me@as.example.com"}, "Issuer"},
		{"http key set", auth.Config{Issuer: "https://as.example.com", JWKSURL: "http://keys.example.com/jwks"}, "JWKSURL"},
		{"alg none", auth.Config{Issuer: "https://as.example.com", Algorithms: []string{"RS256", "none"}}, "unsigned"},
		{"alg NONE", auth.Config{Issuer: "https://as.example.com", Algorithms: []string{"NONE"}}, "unsigned"},
		{"HS256", auth.Config{Issuer: "https://as.example.com", Algorithms: []string{"HS256"}}, "symmetric"},
		{"hs512", auth.Config{Issuer: "https://as.example.com", Algorithms: []string{"hs512"}}, "symmetric"},
		{"unknown alg", auth.Config{Issuer: "https://as.example.com", Algorithms: []string{"RS1"}}, "unknown"},
		{"negative leeway", auth.Config{Issuer: "https://as.example.com", Leeway: -time.Second}, "Leeway"},
		{"leeway too long", auth.Config{Issuer: "https://as.example.com", Leeway: 5*time.Minute + 1}, "Leeway"},
		{"negative MinRefresh", auth.Config{Issuer: "https://as.example.com", MinRefresh: -1}, "MinRefresh"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.HTTPClient = noNet
			v, err := auth.New(c.cfg)
			if c.want == "" {
				if err != nil || v == nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %q", err, c.want)
			}
		})
	}
}

func TestPrincipal(t *testing.T) {
	if p := auth.Principal(&auth.Token{Issuer: "https://as.example.com", Subject: "alice"}); p != "jwt:https://as.example.com#alice" {
		t.Errorf("principal %q", p)
	}
	if p := auth.Principal(nil); p != "" {
		t.Errorf("nil principal %q", p)
	}
}

// TestRedirectToPlainHTTP: the default client follows redirects only to
// URLs an issuer could have: never to plain http off loopback.
func TestRedirectToPlainHTTP(t *testing.T) {
	srv := httptest.NewServer(http.RedirectHandler("http://keys.example.net/jwks", http.StatusFound))
	defer srv.Close()
	v, err := auth.New(auth.Config{Issuer: srv.URL, Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	k := testKeys()
	_, err = v.Verify(context.Background(), mint("RS256", k.rsa, map[string]any{"kid": "r1"}, claimsFor(srv.URL, epoch)), audience)
	wantClass(t, err, auth.ErrUnavailable)
	if !strings.Contains(err.Error(), "neither https nor http on a loopback host") {
		t.Errorf("error %q", err)
	}
}
