//go:build unix && !integration

package interop

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/smoke"
)

// smokeOrigin is the browser origin the smoke test's stack allows.
const smokeOrigin = "https://app.example"

// smokeStack is the emulated stack make smoke is checked against: the
// endpoint behind the HTTP API door (the authorization rig's Lambda
// path) and the same function behind the protected streaming door
// (reserveStreamREST: the Runtime API stand-in that streams, a custom
// domain, the function as authorizer); a token for each.
type smokeStack struct {
	Rig                *authRig
	StreamURL          string
	Token, StreamToken string
	// Client trusts both doors' certificates.
	Client *http.Client
}

// startSmokeStack starts the stack with the endpoint on target and the
// streaming door on stream.
func startSmokeStack(t *testing.T, target authTarget, stream func(*testing.T) *authEndpoint) *smokeStack {
	t.Helper()
	ctx := authContext(t)
	rig := newAuthRig(t, target, "MCP_ALLOWED_ORIGINS="+smokeOrigin)
	door := stream(t)
	door.Start(door.AuthEnv(rig.AS.Issuer)...)
	st := &smokeStack{Rig: rig, StreamURL: door.URL, Token: rig.token(ctx, t, "svc-smoke", scopeRead, scopeWrite)}
	pool := x509.NewCertPool()
	for _, ca := range []string{rig.EP.CAFile, door.CAFile} {
		b, err := os.ReadFile(ca)
		if err != nil || !pool.AppendCertsFromPEM(b) {
			t.Fatalf("the doors' certificates: %v", err)
		}
	}
	st.Client = &http.Client{Timeout: testTimeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	var err error
	if st.StreamToken, err = rig.AS.Token(ctx, "svc-smoke", []string{scopeRead, scopeWrite}, door.URL); err != nil {
		t.Fatal(err)
	}
	// A note behind the streaming door, so that its digest has something
	// to report progress on.
	door.call(ctx, t, st.StreamToken, addNote("counted by the smoke test")).result(t)
	return st
}

func (st *smokeStack) config() smoke.Config {
	return smoke.Config{URL: st.Rig.EP.URL, Token: st.Token, StreamURL: st.StreamURL, StreamToken: st.StreamToken,
		Origin: smokeOrigin, Client: st.Client}
}

// smokeChecks are the checks of a run with every option given.
var smokeChecks = []string{"unauthenticated", "challenge", "metadata", "authorization-server", "discover", "tools-list",
	"missing-meta", "unsupported-version", "keyed-call", "keyed-replay", "stream-discovery", "streaming", "cors-preflight", "conformance"}

// TestSmoke: make smoke passes every check against the emulated stack,
// each on one verdict line.
func TestSmoke(t *testing.T) {
	st := startSmokeStack(t, authTarget{"Lambda", reserveLambda}, reserveStreamREST)
	var out bytes.Buffer
	vs := smoke.Run(authContext(t), st.config(), &out)
	t.Logf("make smoke against the emulated stack:\n%s", out.String())
	var names []string
	for _, v := range vs {
		names = append(names, v.Check)
		// The conformance fixture is not in this stack: make conformance
		// runs that check against it (e2e/confrun).
		if v.Result != "PASS" && (v.Check != "conformance" || v.Result != "SKIP") {
			t.Errorf("%v", v)
		}
	}
	if !slices.Equal(names, smokeChecks) {
		t.Errorf("checks %q, want %q", names, smokeChecks)
	}
	if lines := strings.Count(out.String(), "\n"); lines != len(vs) {
		t.Errorf("%d lines for %d verdicts", lines, len(vs))
	}
}

// TestSmokeFailsNamingTheCheck: against endpoints that answer wrongly,
// make smoke fails the check that sees it, and names it.
func TestSmokeFailsNamingTheCheck(t *testing.T) {
	t.Run("a door that delivers no challenge", func(t *testing.T) {
		st := startSmokeStack(t, authTarget{"LambdaNoChallenge", reserveLambdaNoChallenge}, reserveStreamREST)
		failed := failedChecks(t, st.config())
		if !slices.Equal(failed, []string{"challenge"}) {
			t.Errorf("failed checks %q, want [challenge]", failed)
		}
	})
	t.Run("a door that drops the idempotency key", func(t *testing.T) {
		st := startSmokeStack(t, authTarget{"Lambda", reserveLambda}, reserveStreamREST)
		// A proxy in front of the endpoint that loses the key: the call
		// runs twice.
		c := st.config()
		base := c.Client.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		c.Client = &http.Client{Timeout: c.Client.Timeout, Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Del("Idempotency-Key")
			return base.RoundTrip(r)
		})}
		if failed := failedChecks(t, c); !slices.Equal(failed, []string{"keyed-replay"}) {
			t.Errorf("failed checks %q, want [keyed-replay]", failed)
		}
	})
	t.Run("a streaming door without the authorizer's challenges", func(t *testing.T) {
		st := startSmokeStack(t, authTarget{"Lambda", reserveLambda}, reserveStreamNoAuthorizer)
		if failed := failedChecks(t, st.config()); !slices.Equal(failed, []string{"stream-discovery"}) {
			t.Errorf("failed checks %q, want [stream-discovery]", failed)
		}
	})
	t.Run("a streaming door that delivers the stream whole", func(t *testing.T) {
		st := startSmokeStack(t, authTarget{"Lambda", reserveLambda}, reserveStreamBuffering)
		if failed := failedChecks(t, st.config()); !slices.Equal(failed, []string{"streaming"}) {
			t.Errorf("failed checks %q, want [streaming]", failed)
		}
	})
	t.Run("a streaming door with no progress", func(t *testing.T) {
		st := startSmokeStack(t, authTarget{"Lambda", reserveLambda}, reserveStreamREST)
		c := st.config()
		c.ProgressTool, c.ProgressArgs = "notes_search", "{}" // reports none
		if failed := failedChecks(t, c); !slices.Equal(failed, []string{"streaming"}) {
			t.Errorf("failed checks %q, want [streaming]", failed)
		}
	})
}

func failedChecks(t *testing.T, c smoke.Config) []string {
	t.Helper()
	var out bytes.Buffer
	vs := smoke.Run(authContext(t), c, &out)
	t.Logf("make smoke:\n%s", out.String())
	var failed []string
	for _, v := range vs {
		if v.Result == "FAIL" {
			failed = append(failed, v.Check)
			if !strings.Contains(out.String(), "FAIL "+v.Check) {
				t.Errorf("no verdict line names %s", v.Check)
			}
		}
	}
	return failed
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
