//go:build unix && !integration

package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/oauthmock"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// The authorization tests: the real endpoint (functions/fixture) with
// MCP_AUTH_ISSUER naming a real third-party authorization server on
// loopback (internal/testenv/oauthmock), through local HTTP and through the
// Lambda path. The contract they check:
//
//   - the protected-resource metadata (RFC 9728) at both well-known URLs;
//   - 401 with a resource_metadata challenge for no token (or one in the
//     query string only), 401 invalid_token for a token that fails
//     validation, 403 insufficient_scope naming every scope a tool needs;
//   - notes_search and notes_digest need notes:read, notes_add and
//     notes_delete notes:write, which implies notes:read;
//   - the principal is jwt:<iss>#<sub>: notes, idempotency claims and
//     sealed state belong to it;
//   - the issuer's keys out of reach: the request fails closed, in band.
//
// They are unit tests: everything they start listens on 127.0.0.1 only,
// so they need no network namespace, and the integration build (-tags
// integration, run inside one) leaves them out rather than run them
// twice. They need the npm tools (the authorization server) and the
// emulator, which make installs; without them they fail, never skip.

// authTestTimeout bounds one authorization test's conversations.
const authTestTimeout = 2 * time.Minute

// The demo's scopes.
const (
	scopeRead  = "notes:read"
	scopeWrite = "notes:write"
)

// authContext returns a context that ends with the test or after
// authTestTimeout.
func authContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), authTestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// authRig is an authorization server and an endpoint that trusts it.
type authRig struct {
	AS *oauthmock.Server
	EP *authEndpoint
}

// newAuthRig starts an authorization server and, on target, the endpoint
// with MCP_AUTH_ISSUER naming it and env added.
func newAuthRig(t *testing.T, target authTarget, env ...string) *authRig {
	t.Helper()
	as := oauthmock.New(t)
	ep := target.reserve(t)
	ep.Start(append(ep.AuthEnv(as.Issuer), env...)...)
	return &authRig{AS: as, EP: ep}
}

// token gets a token for client with scopes, for the rig's endpoint.
func (r *authRig) token(ctx context.Context, t *testing.T, client string, scopes ...string) string {
	t.Helper()
	tok, err := r.AS.Token(ctx, client, scopes, r.EP.URL)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// variant gets a token for client made wrong as v says.
func (r *authRig) variant(ctx context.Context, t *testing.T, v oauthmock.Variant, client string, scopes ...string) string {
	t.Helper()
	tok, err := r.AS.TokenVariant(ctx, v, client, scopes, r.EP.URL)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// jwksFetches is how many times the authorization server has served its
// key set.
func (r *authRig) jwksFetches(ctx context.Context, t *testing.T) int {
	t.Helper()
	n, err := r.AS.Requests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n["/jwks"]
}

// addNote calls notes_add with text.
func addNote(text string) rpcCall {
	return rpcCall{Method: "tools/call", Tool: "notes_add", Args: `{"text":` + fmt.Sprintf("%q", text) + `}`}
}

var searchNotes = rpcCall{Method: "tools/call", Tool: "notes_search"}

// checkUnauthorized asserts a 401 with exactly the challenge want and a
// JSON-RPC error -32600 answering the request.
func checkUnauthorized(t *testing.T, r reply, want map[string]string) {
	t.Helper()
	if r.Status != http.StatusUnauthorized {
		t.Fatalf("want HTTP 401: %s", r)
	}
	checkChallenge(t, r.Header, want)
	checkRPCError(t, r, -32600)
}

// checkRPCError asserts a JSON-RPC 2.0 error with code answering r's
// request (or, when the request was not read, with a null id).
func checkRPCError(t *testing.T, r reply, code int) {
	t.Helper()
	if r.RPC.JSONRPC != "2.0" || r.RPC.Error == nil || r.RPC.Result != nil {
		t.Fatalf("want a JSON-RPC 2.0 error: %s", r)
	}
	if r.RPC.Error.Code != code {
		t.Errorf("JSON-RPC error code %d, want %d: %s", r.RPC.Error.Code, code, r)
	}
	if id := string(r.RPC.ID); id != fmt.Sprint(r.ID) && id != "null" {
		t.Errorf("JSON-RPC id %s, want %d (or null): %s", id, r.ID, r)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
}

// checkInsufficientScope asserts a 403 step-up challenge for scopes, with
// the JSON-RPC error naming them.
func checkInsufficientScope(t *testing.T, r reply, rm string, scopes ...string) {
	t.Helper()
	if r.Status != http.StatusForbidden {
		t.Fatalf("want HTTP 403: %s", r)
	}
	checkChallenge(t, r.Header, map[string]string{"error": "insufficient_scope", "scope": strings.Join(scopes, " "), "resource_metadata": rm})
	if r.RPC.JSONRPC != "2.0" || r.RPC.Error == nil || r.RPC.Result != nil {
		t.Fatalf("want a JSON-RPC 2.0 error: %s", r)
	}
	t.Logf("403 JSON-RPC error code %d", r.RPC.Error.Code)
	d := r.RPC.Error.Data
	var got []string
	if rs, ok := d["requiredScopes"].([]any); ok {
		for _, s := range rs {
			got = append(got, fmt.Sprint(s))
		}
	}
	if d["type"] != "insufficient_scope" || !slices.Equal(got, scopes) {
		t.Errorf("error data %v, want type insufficient_scope and requiredScopes %q", d, scopes)
	}
}

// TestAuthRefusals is the refusal matrix at the endpoint, on both paths:
// each row's status, challenge and JSON-RPC answer; then the step-up, the
// scope hierarchy and the isolation of principals.
func TestAuthRefusals(t *testing.T) {
	for _, target := range authTargets {
		t.Run(target.name, func(t *testing.T) { testAuthRefusals(t, target) })
	}
}

func testAuthRefusals(t *testing.T, target authTarget) {
	ctx := authContext(t)
	rig := newAuthRig(t, target)
	ep := rig.EP
	rm := ep.MetadataURL()
	// Every refused row is svc-refused's; it must own no note at the end.
	const refused = "svc-refused"
	challengeInvalid := map[string]string{"resource_metadata": rm, "scope": scopeWrite, "error": "invalid_token"}

	t.Run("Metadata", func(t *testing.T) {
		for _, u := range []string{rm, ep.Origin + "/.well-known/oauth-protected-resource"} {
			var doc struct {
				Resource               string   `json:"resource"`
				AuthorizationServers   []string `json:"authorization_servers"`
				ScopesSupported        []string `json:"scopes_supported"`
				BearerMethodsSupported []string `json:"bearer_methods_supported"`
			}
			h := getJSONDoc(ctx, t, ep.Client, u, &doc)
			if doc.Resource != ep.URL || !slices.Equal(doc.AuthorizationServers, []string{rig.AS.Issuer}) ||
				!slices.Equal(doc.ScopesSupported, []string{scopeRead, scopeWrite}) || !slices.Equal(doc.BearerMethodsSupported, []string{"header"}) {
				t.Errorf("GET %s: %+v, want resource %s, authorization_servers [%s], scopes_supported [notes:read notes:write], bearer_methods_supported [header]",
					u, doc, ep.URL, rig.AS.Issuer)
			}
			if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("GET %s: Content-Type %q", u, ct)
			}
		}
	})

	t.Run("ValidToken", func(t *testing.T) {
		r := ep.call(ctx, t, rig.token(ctx, t, "svc-valid", scopeWrite), addNote("valid"))
		if id, _ := structuredOf(t, r.result(t))["id"].(string); id == "" {
			t.Errorf("no note id: %s", r)
		}
	})

	t.Run("NoToken", func(t *testing.T) {
		checkUnauthorized(t, ep.call(ctx, t, "", addNote("no token")), map[string]string{"resource_metadata": rm, "scope": scopeWrite})
	})
	t.Run("NoTokenToolsList", func(t *testing.T) {
		checkUnauthorized(t, ep.call(ctx, t, "", rpcCall{Method: "tools/list"}), map[string]string{"resource_metadata": rm})
	})
	t.Run("TokenInQueryString", func(t *testing.T) {
		tok := rig.token(ctx, t, refused, scopeWrite)
		r := ep.call(ctx, t, "", rpcCall{Method: "tools/call", Tool: "notes_add", Args: `{"text":"query"}`, Query: "access_token=" + url.QueryEscape(tok)})
		checkUnauthorized(t, r, map[string]string{"resource_metadata": rm, "scope": scopeWrite})
	})

	rows := []struct {
		name  string
		token func(t *testing.T) string
	}{
		{"Malformed", func(*testing.T) string { return "not-a-jwt" }},
		{"BadSignature", func(t *testing.T) string { return rig.variant(ctx, t, oauthmock.BadSignature, refused, scopeWrite) }},
		{"OtherIssuer", func(t *testing.T) string { return rig.variant(ctx, t, oauthmock.OtherIssuer, refused, scopeWrite) }},
		{"OtherAudience", func(t *testing.T) string {
			tok, err := rig.AS.Token(ctx, refused, []string{scopeWrite}, "https://other.example.com/mcp")
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}},
		{"OtherResourceSameOrigin", func(t *testing.T) string {
			tok, err := rig.AS.Token(ctx, refused, []string{scopeWrite}, ep.Origin+"/other")
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}},
		{"NoAudience", func(t *testing.T) string {
			tok, err := rig.AS.Token(ctx, refused, []string{scopeWrite}, "")
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}},
		{"Expired", func(t *testing.T) string { return rig.variant(ctx, t, oauthmock.Expired, refused, scopeWrite) }},
		{"NotYetValid", func(t *testing.T) string { return rig.variant(ctx, t, oauthmock.NotYetValid, refused, scopeWrite) }},
		{"AlgNone", func(t *testing.T) string { return rig.variant(ctx, t, oauthmock.AlgNone, refused, scopeWrite) }},
		{"HS256WithPublicKey", func(t *testing.T) string { return rig.variant(ctx, t, oauthmock.HS256PublicKey, refused, scopeWrite) }},
		{"NoSubject", func(t *testing.T) string { return rig.variant(ctx, t, oauthmock.NoSubject, refused, scopeWrite) }},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			checkUnauthorized(t, ep.call(ctx, t, row.token(t), addNote(row.name)), challengeInvalid)
		})
	}

	t.Run("UnknownKid", func(t *testing.T) {
		tok := rig.variant(ctx, t, oauthmock.UnknownKid, refused, scopeWrite)
		before := rig.jwksFetches(ctx, t)
		checkUnauthorized(t, ep.call(ctx, t, tok, addNote("unknown kid")), challengeInvalid)
		if n := rig.jwksFetches(ctx, t) - before; n != 1 {
			t.Errorf("the endpoint fetched the key set %d times for an unknown kid, want once", n)
		}
		// Again: refused; how often the keys are fetched again is the
		// endpoint's policy (logged, not asserted).
		before = rig.jwksFetches(ctx, t)
		checkUnauthorized(t, ep.call(ctx, t, tok, addNote("unknown kid again")), challengeInvalid)
		t.Logf("a second unknown-kid request fetched the key set %d more times", rig.jwksFetches(ctx, t)-before)
	})

	t.Run("StepUp", func(t *testing.T) {
		checkInsufficientScope(t, ep.call(ctx, t, rig.token(ctx, t, refused, scopeRead), addNote("read only")), rm, scopeWrite)
		checkInsufficientScope(t, ep.call(ctx, t, rig.token(ctx, t, refused, scopeRead),
			rpcCall{Method: "tools/call", Tool: "notes_delete", Args: `{"id":"n0"}`, Caps: `{"elicitation":{}}`}), rm, scopeWrite)
		r := ep.call(ctx, t, rig.token(ctx, t, "svc-stepped-up", scopeRead, scopeWrite), addNote("stepped up"))
		if id, _ := structuredOf(t, r.result(t))["id"].(string); id == "" {
			t.Errorf("no note id: %s", r)
		}
	})

	t.Run("ScopeHierarchy", func(t *testing.T) {
		write, read, none := rig.token(ctx, t, "svc-h", scopeWrite), rig.token(ctx, t, "svc-h", scopeRead), rig.token(ctx, t, "svc-h")
		ep.call(ctx, t, write, searchNotes).result(t) // notes:write implies notes:read
		ep.call(ctx, t, read, searchNotes).result(t)
		ep.call(ctx, t, read, rpcCall{Method: "tools/call", Tool: "notes_digest"}).result(t)
		checkInsufficientScope(t, ep.call(ctx, t, none, searchNotes), rm, scopeRead)
		checkInsufficientScope(t, ep.call(ctx, t, none, rpcCall{Method: "tools/call", Tool: "notes_digest"}), rm, scopeRead)
		// Methods without a tool need a valid token and no scope.
		for _, m := range []string{"tools/list", "server/discover"} {
			ep.call(ctx, t, none, rpcCall{Method: m}).result(t)
			checkUnauthorized(t, ep.call(ctx, t, "", rpcCall{Method: m}), map[string]string{"resource_metadata": rm})
		}
	})

	t.Run("PrincipalIsolation", func(t *testing.T) { testPrincipalIsolation(ctx, t, rig) })

	t.Run("NoRefusedCallRan", func(t *testing.T) {
		if ids := noteIDs(t, ep.call(ctx, t, rig.token(ctx, t, refused, scopeRead), searchNotes).result(t)); len(ids) != 0 {
			t.Errorf("%s, refused every time, owns notes %v", refused, ids)
		}
	})
}

// testPrincipalIsolation checks that two subjects of the same issuer
// never see each other's notes, keyed-call replays or sealed state.
func testPrincipalIsolation(ctx context.Context, t *testing.T, rig *authRig) {
	ep := rig.EP
	alice, bob := rig.token(ctx, t, "svc-alice", scopeWrite), rig.token(ctx, t, "svc-bob", scopeWrite)

	var aliceNote string
	t.Run("Notes", func(t *testing.T) {
		aliceNote, _ = structuredOf(t, ep.call(ctx, t, alice, addNote("alice's")).result(t))["id"].(string)
		if ids := noteIDs(t, ep.call(ctx, t, alice, searchNotes).result(t)); !slices.Equal(ids, []string{aliceNote}) {
			t.Errorf("alice's notes %v, want [%s]", ids, aliceNote)
		}
		if ids := noteIDs(t, ep.call(ctx, t, bob, searchNotes).result(t)); len(ids) != 0 {
			t.Errorf("bob sees notes %v", ids)
		}
	})

	t.Run("KeyedReplays", func(t *testing.T) {
		keyed := addNote("keyed")
		keyed.Header = http.Header{"Idempotency-Key": {"isolation-key-1"}}
		first := ep.call(ctx, t, alice, keyed).result(t)
		again := ep.call(ctx, t, alice, keyed).result(t)
		meta, _ := again["_meta"].(map[string]any)
		if meta[stateless.MetaReplay] != true || structuredOf(t, again)["id"] != structuredOf(t, first)["id"] {
			t.Fatalf("alice's own retry is not her replay: %v after %v", again, first)
		}
		other := ep.call(ctx, t, bob, keyed).result(t)
		meta, _ = other["_meta"].(map[string]any)
		if meta[stateless.MetaReplay] == true || structuredOf(t, other)["id"] == structuredOf(t, first)["id"] {
			t.Errorf("bob, with alice's key, got her replay: %v", other)
		}
	})

	t.Run("SealedState", func(t *testing.T) {
		if aliceNote == "" {
			t.Fatal("no note of alice's: the Notes subtest failed")
		}
		del := rpcCall{Method: "tools/call", Tool: "notes_delete", Args: `{"id":"` + aliceNote + `"}`, Caps: `{"elicitation":{}}`}
		first := ep.call(ctx, t, alice, del).result(t)
		state, _ := first["requestState"].(string)
		if first["resultType"] != "input_required" || state == "" {
			t.Fatalf("notes_delete did not ask: %v", first)
		}
		answer := del
		answer.Extra = `"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":"` + state + `"`
		r := ep.call(ctx, t, bob, answer)
		if r.RPC.Error == nil || r.RPC.Error.Code != -32602 {
			t.Errorf("bob answered alice's question with her state: %s, want JSON-RPC error -32602", r)
		}
		if done := ep.call(ctx, t, alice, answer); done.Status != http.StatusOK || done.RPC.Error != nil || structuredOf(t, done.RPC.Result)["deleted"] != true {
			t.Errorf("alice's own answer after bob's attempt: %s, want the note deleted", done)
		}
	})
}

// TestAuthKeysDown: with the issuer out of reach, a request fails closed,
// in band (HTTP 200, -32603 dependency_failure, retryable), and no tool
// runs. The token is minted before the server stops; the endpoint starts
// after, so that it has no key cached.
func TestAuthKeysDown(t *testing.T) {
	for _, target := range authTargets {
		t.Run(target.name, func(t *testing.T) {
			ctx := authContext(t)
			as := oauthmock.New(t)
			ep := target.reserve(t)
			tok, err := as.Token(ctx, "svc-down", []string{scopeWrite}, ep.URL)
			if err != nil {
				t.Fatal(err)
			}
			as.Stop()
			ep.Start(ep.AuthEnv(as.Issuer)...)

			r := ep.call(ctx, t, tok, addNote("while the keys are down"))
			if r.Status != http.StatusOK || len(r.Header.Values("WWW-Authenticate")) != 0 {
				t.Errorf("want HTTP 200 and no challenge: %s", r)
			}
			checkRPCError(t, r, -32603)
			if d := r.RPC.Error; d != nil && (d.Data["type"] != "dependency_failure" || d.Data["retryable"] != true) {
				t.Errorf("error data %v, want type dependency_failure, retryable true", d.Data)
			}

			// Back up, the same issuer and keys: the call above added
			// nothing.
			if err := as.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			var last reply
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
				if last = ep.call(ctx, t, tok, searchNotes); last.Status == http.StatusOK && last.RPC.Error == nil {
					break
				}
			}
			if ids := noteIDs(t, last.result(t)); len(ids) != 0 {
				t.Errorf("the refused call added notes %v", ids)
			}
		})
	}
}

// TestAuthKeyRotation: a token signed with a key the issuer published
// after the endpoint cached its keys is accepted (the endpoint fetches the
// keys again).
func TestAuthKeyRotation(t *testing.T) {
	for _, target := range authTargets {
		t.Run(target.name, func(t *testing.T) {
			ctx := authContext(t)
			rig := newAuthRig(t, target)
			rig.EP.call(ctx, t, rig.token(ctx, t, "svc-rot", scopeRead), searchNotes).result(t)
			before := rig.jwksFetches(ctx, t)
			if _, err := rig.AS.Rotate(ctx); err != nil {
				t.Fatal(err)
			}
			rig.EP.call(ctx, t, rig.token(ctx, t, "svc-rot", scopeRead), searchNotes).result(t)
			t.Logf("the rotated key cost %d key-set fetches", rig.jwksFetches(ctx, t)-before)
		})
	}
}

// TestAuthLambdaEndpointFromEvent: on the Lambda path with no audience
// configured, the canonical URL is https://<domainName><path> from the
// event, here the front's https://127.0.0.1:<port>/mcp: the metadata
// names it, the challenge points at its metadata, and a token issued for
// it is accepted.
func TestAuthLambdaEndpointFromEvent(t *testing.T) {
	ctx := authContext(t)
	as := oauthmock.New(t)
	ep := reserveLambda(t)
	ep.Start("MCP_AUTH_ISSUER=" + as.Issuer)

	var doc struct {
		Resource string `json:"resource"`
	}
	getJSONDoc(ctx, t, ep.Client, ep.MetadataURL(), &doc)
	if doc.Resource != ep.URL {
		t.Errorf("metadata resource %q, want %q", doc.Resource, ep.URL)
	}
	checkUnauthorized(t, ep.call(ctx, t, "", searchNotes), map[string]string{"resource_metadata": ep.MetadataURL(), "scope": scopeRead})
	tok, err := as.Token(ctx, "svc-event", []string{scopeRead}, ep.URL)
	if err != nil {
		t.Fatal(err)
	}
	ep.call(ctx, t, tok, searchNotes).result(t)
}

// TestAuthDiscoveryGoSDK runs go-sdk v1.8.0's client-credentials client
// from nothing to a notes_add: the 401, the protected-resource metadata,
// the authorization server's metadata, a token for the endpoint, the
// retry with it; and, when the metadata advertises notes:read only, the
// 403 step-up to notes:write.
func TestAuthDiscoveryGoSDK(t *testing.T) {
	// Through the local, HTTP API and streaming doors, with and without a
	// step-up, the client's discovery is a cell of the client matrix
	// (matrix_test.go: oauth-discovery, oauth-step-up). Through a door
	// that delivers no challenge, the client probes the well-known URL and
	// asks for the metadata's scopes_supported. (A step-up needs the 403's
	// challenge: the template's doors set it.)
	t.Run("LambdaNoChallenge/AllScopes", func(t *testing.T) {
		testAuthDiscovery(t, authTarget{"LambdaNoChallenge", reserveLambdaNoChallenge}, nil, false, scopeRead+" "+scopeWrite)
	})
}

func testAuthDiscovery(t *testing.T, target authTarget, env []string, stepUp bool, firstAsk string) {
	ctx := authContext(t)
	rig := newAuthRig(t, target, env...)
	ep := rig.EP
	j := &journey{base: ep.Client.Transport, tokenURL: rig.AS.TokenEndpoint()}
	if j.base == nil {
		j.base = http.DefaultTransport
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, s := range j.Steps() {
				t.Logf("client step %d: %s", i, s)
			}
			if ep.Front != nil {
				for i, e := range ep.Front.Entries() {
					t.Logf("front %d: %s %s %d, authorization %.12q, challenge %q", i, e.Method, e.Path, e.Status, e.Authorization, e.Challenge)
				}
			}
		}
	})
	hc := &http.Client{Transport: j, Timeout: testTimeout}
	const clientID = "svc-discovery"
	handler, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{ClientID: clientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: "secret-of-" + clientID}},
		HTTPClient:  hc,
	})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(goSDKClientInfo, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ep.URL, HTTPClient: hc, OAuthHandler: handler}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notes_add", Arguments: map[string]any{"text": "found my way in"}})
	if err != nil || res.IsError {
		t.Fatalf("notes_add: %v %+v", err, res)
	}
	var added struct {
		ID string `json:"id"`
	}
	remarshal(t, res.StructuredContent, &added)
	if added.ID == "" {
		t.Fatalf("notes_add answered no id: %+v", res.StructuredContent)
	}

	// The journey as the client made it.
	steps := j.Steps()
	if len(steps) == 0 {
		t.Fatal("the client made no request through its HTTP client")
	}
	labels := make([]string, 0, len(steps))
	for _, s := range steps {
		if l := s.label(ep, rig.AS); len(labels) == 0 || l != "as" || labels[len(labels)-1] != "as" {
			labels = append(labels, l)
		}
	}
	want := []string{"mcp server/discover 401 anonymous", "prm 200", "as", "token 200", "mcp server/discover 200 bearer"}
	if stepUp {
		want = append(want, "mcp tools/call 403 bearer", "prm 200", "as", "token 200")
	}
	want = append(want, "mcp tools/call 200 bearer")
	if !slices.Equal(labels, want) {
		t.Errorf("the client's journey:\n got %q\nwant %q", labels, want)
	}
	first := steps[0]
	if target.name == "LambdaNoChallenge" {
		if first.Challenge != "" {
			t.Errorf("first challenge %q through a door that delivers none", first.Challenge)
		}
	} else if _, p, err := parseChallenge(first.Challenge); err != nil || p["resource_metadata"] != ep.MetadataURL() {
		t.Errorf("first challenge %q (%v): want resource_metadata %s", first.Challenge, err, ep.MetadataURL())
	}
	var tokens []journeyStep
	for _, s := range steps {
		if s.Form != nil {
			tokens = append(tokens, s)
		}
	}
	asks := []string{firstAsk}
	if stepUp {
		asks = append(asks, scopeRead+" "+scopeWrite)
	}
	if len(tokens) != len(asks) {
		t.Fatalf("%d token requests, want %d", len(tokens), len(asks))
	}
	for i, s := range tokens {
		// The scopes as a set: go-sdk unions the old and the challenged
		// scopes in no particular order.
		if s.Form.Get("grant_type") != "client_credentials" || !sameScopes(s.Form.Get("scope"), asks[i]) || s.Form.Get("resource") != ep.URL {
			t.Errorf("token request %d: %v, want client_credentials, scope %q, resource %s", i, s.Form, asks[i], ep.URL)
		}
		// The token the client got is the one its next MCP request carries.
		var tr struct {
			AccessToken string `json:"access_token"`
		}
		_ = json.Unmarshal(s.Body, &tr)
		idx := slices.IndexFunc(steps, func(x journeyStep) bool { return x.Seq > s.Seq && x.RPC != "" })
		if tr.AccessToken == "" || idx < 0 || steps[idx].Authorization != "Bearer "+tr.AccessToken {
			t.Errorf("after token request %d, the next MCP request does not carry its token", i)
		}
	}
	if sent := j.SDKResources(); slices.Contains(sent, "") {
		t.Logf("go-sdk v1.8.0's ClientCredentialsHandler sent no RFC 8707 resource parameter (%q); "+
			"the test's transport added the one the client discovered in the metadata", sent)
	}

	// At the front (the Lambda path): the same journey, as API Gateway
	// would have seen it.
	if ep.Front != nil {
		var got []string
		for _, e := range ep.Front.Entries() {
			auth := "anonymous"
			if strings.HasPrefix(e.Authorization, "Bearer ") {
				auth = "bearer"
			}
			got = append(got, fmt.Sprintf("%s %s %d %s", e.Method, e.Path, e.Status, auth))
		}
		want := []string{"POST /mcp 401 anonymous", "GET /.well-known/oauth-protected-resource/mcp 200 anonymous", "POST /mcp 200 bearer"}
		if stepUp {
			want = append(want, "POST /mcp 403 bearer", "GET /.well-known/oauth-protected-resource/mcp 200 anonymous")
		}
		want = append(want, "POST /mcp 200 bearer")
		if !slices.Equal(got, want) {
			t.Errorf("requests at the front:\n got %q\nwant %q", got, want)
		}
	}

	// The note is the client's, jwt:<issuer>#svc-discovery: visible to
	// that subject, not to another client of the same issuer.
	if ids := noteIDs(t, ep.call(ctx, t, rig.token(ctx, t, clientID, scopeRead), searchNotes).result(t)); !slices.Equal(ids, []string{added.ID}) {
		t.Errorf("%s's notes %v, want [%s]", clientID, ids, added.ID)
	}
	if ids := noteIDs(t, ep.call(ctx, t, rig.token(ctx, t, "svc-other", scopeRead), searchNotes).result(t)); len(ids) != 0 {
		t.Errorf("another client sees notes %v", ids)
	}
}

// sameScopes reports whether two space-separated scope lists name the
// same scopes.
func sameScopes(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// journey is the HTTP client's transport in the discovery test: it
// records every request the go-sdk client makes (to the endpoint and to
// the authorization server). It also makes up for one gap of go-sdk
// v1.8.0's ClientCredentialsHandler, which sends no RFC 8707 resource
// parameter: a token request without one gets the resource of the
// protected-resource metadata the client fetched last, which is what the
// MCP specification has clients send.
type journey struct {
	base     http.RoundTripper
	tokenURL string

	mu           sync.Mutex
	steps        []journeyStep
	prmResource  string
	sdkResources []string
}

// journeyStep is one request of the client's and what it got.
type journeyStep struct {
	Seq           int
	Method, URL   string
	RPC           string     // the JSON-RPC method of a request to the endpoint
	Authorization string     // of a request to the endpoint
	Form          url.Values // of a token request, as sent
	Status        int
	Challenge     string
	Body          []byte // the answer, unless it is an event stream
}

// label names the step for the journey comparison.
func (s journeyStep) label(ep *authEndpoint, as *oauthmock.Server) string {
	switch {
	case s.URL == ep.URL:
		auth := "anonymous"
		if strings.HasPrefix(s.Authorization, "Bearer ") {
			auth = "bearer"
		}
		return fmt.Sprintf("mcp %s %d %s", s.RPC, s.Status, auth)
	case strings.HasPrefix(s.URL, ep.Origin+"/.well-known/oauth-protected-resource"):
		return fmt.Sprintf("prm %d", s.Status)
	case s.URL == as.TokenEndpoint():
		return fmt.Sprintf("token %d", s.Status)
	case strings.HasPrefix(s.URL, as.Issuer+"/.well-known/"):
		return "as"
	}
	return s.Method + " " + s.URL
}

func (s journeyStep) String() string {
	return fmt.Sprintf("%s %s rpc=%q auth=%t form=%v -> %d %q %.300s", s.Method, s.URL, s.RPC, s.Authorization != "", s.Form, s.Status, s.Challenge, s.Body)
}

// Steps returns a copy of the recorded steps.
func (j *journey) Steps() []journeyStep {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]journeyStep(nil), j.steps...)
}

// SDKResources returns the resource parameter of each token request as
// the client sent it ("" for none).
func (j *journey) SDKResources() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.sdkResources...)
}

// RoundTrip implements http.RoundTripper.
func (j *journey) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	s := journeyStep{Method: req.Method, URL: req.URL.String()}
	if req.Method == http.MethodPost && s.URL == j.tokenURL {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, err
		}
		j.mu.Lock()
		j.sdkResources = append(j.sdkResources, form.Get("resource"))
		if form.Get("resource") == "" && j.prmResource != "" {
			form.Set("resource", j.prmResource)
			body = []byte(form.Encode())
		}
		j.mu.Unlock()
		s.Form = form
	} else if len(body) > 0 {
		var m struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &m)
		s.RPC, s.Authorization = m.Method, req.Header.Get("Authorization")
	}
	out := req.Clone(req.Context())
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	if req.Body == nil {
		out.Body, out.GetBody = nil, nil
	}
	resp, err := j.base.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	s.Status, s.Challenge = resp.StatusCode, resp.Header.Get("WWW-Authenticate")
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body, s.Body = io.NopCloser(bytes.NewReader(b)), b
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if req.Method == http.MethodGet && resp.StatusCode == http.StatusOK && strings.Contains(req.URL.Path, "/.well-known/oauth-protected-resource") {
		var prm struct {
			Resource string `json:"resource"`
		}
		if json.Unmarshal(s.Body, &prm) == nil && prm.Resource != "" {
			j.prmResource = prm.Resource
		}
	}
	s.Seq = len(j.steps)
	j.steps = append(j.steps, s)
	return resp, nil
}

// TestAuthDiscoveryTypeScript runs the TypeScript MCP client 2.4.0's
// client-credentials provider (tools/oauth-walk.mjs) from nothing to a
// notes_add through the template's HTTP API door as the tests hold it to
// AWS (the function's WWW-Authenticate renamed, the challenge set by API
// Gateway from the relay), with and without the 403 step-up, and through
// a door that delivers no challenge.
func TestAuthDiscoveryTypeScript(t *testing.T) {
	// Through the local, HTTP API and streaming doors, with and without a
	// step-up, the walk is a cell of the client matrix (matrix_test.go);
	// here, through a door that delivers no challenge.
	ctx := authContext(t)
	rig := newAuthRig(t, authTarget{"LambdaNoChallenge", reserveLambdaNoChallenge})
	tsOAuthWalk(ctx, t, rig, false)
}

// tsOAuthWalk runs the TypeScript client's client-credentials walk
// (tools/oauth-walk.mjs, with extra arguments) from nothing to a
// notes_add at rig's endpoint; stepUp: the front (when there is one) must
// have seen the 403.
func tsOAuthWalk(ctx context.Context, t *testing.T, rig *authRig, stepUp bool, extra ...string) {
	t.Helper()
	node, err := filepath.Abs("../tools/node_modules/.bin/node")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, node, append([]string{"oauth-walk.mjs", rig.EP.URL, "svc-typescript", "secret-of-svc-typescript", rig.AS.Issuer}, extra...)...)
	cmd.Dir = "../tools"
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+rig.EP.CAFile)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "oauth-walk: ok") {
		t.Fatalf("the TypeScript client's walk: %v\n%s", err, out)
	}
	if rig.EP.Front == nil {
		return
	}
	var got []string
	for _, e := range rig.EP.Front.Entries() {
		got = append(got, fmt.Sprintf("%s %s %d", e.Method, e.Path, e.Status))
	}
	if stepUp && !slices.Contains(got, "POST /mcp 403") {
		t.Errorf("no step-up at the front: %q", got)
	}
}
