//go:build unix && !integration

package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/oauthmock"
)

// idpProfile is an identity provider as the journeys meet it: how the
// pinned authorization server is shaped, and what the endpoint is told,
// both for the endpoint's URL.
type idpProfile struct {
	name string
	as   func(endpoint string) oauthmock.Options
	env  func(as *oauthmock.Server, endpoint string) []string
	// providerRegisters: the provider registers clients itself (RFC
	// 7591), so the endpoint has no facade and the client registers
	// there; else the facade hands out publicClient.
	providerRegisters bool
	// unprefixed: the provider issues the endpoint's scope names as they
	// are; else as "<endpoint URL>/<name>".
	unprefixed bool
}

// publicClient is the public client (PKCE, no secret) registered by hand
// at a provider without registration, which the endpoint's registration
// facade hands out.
const publicClient = "mcp-public-client"

// entraAppID is the app registration's application (client) id, which
// Entra ID puts in a v2.0 access token's aud.
const entraAppID = "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"

// facadeEnv is the registration facade's configuration for as's public
// client.
func facadeEnv(as *oauthmock.Server) []string {
	return []string{
		"MCP_AUTH_REGISTRATION_CLIENT_ID=" + publicClient,
		"MCP_AUTH_AUTHORIZATION_ENDPOINT=" + as.Issuer + "/authorize",
		"MCP_AUTH_TOKEN_ENDPOINT=" + as.Issuer + "/token",
	}
}

// The provider profiles the journeys run against.
var idpProfiles = []idpProfile{
	{
		// Auth0 or Keycloak with dynamic registration on: the client
		// registers with the provider, which issues it an id of its own;
		// tokens name the endpoint's URL in aud (RFC 8707) and carry the
		// scopes by their names. The endpoint needs only the issuer.
		name:              "dcr-audience",
		as:                func(string) oauthmock.Options { return oauthmock.Options{Registration: true} },
		env:               func(*oauthmock.Server, string) []string { return nil },
		providerRegisters: true,
		unprefixed:        true,
	},
	{
		// Amazon Cognito: no dynamic registration, no client ID metadata
		// documents; a resource server (identifier: the endpoint's URL)
		// whose scopes are "<identifier>/<name>"; access tokens carry no
		// aud, only client_id. The endpoint admits the app client's tokens
		// (MCP_AUTH_CLIENT_IDS), names its scopes with the identifier
		// (MCP_AUTH_SCOPE_PREFIX), and its facade hands that client to
		// self-registering clients.
		name: "cognito-no-registration",
		as: func(string) oauthmock.Options {
			return oauthmock.Options{ClientID: publicClient, Profile: "cognito"}
		},
		env: func(as *oauthmock.Server, endpoint string) []string {
			return append(facadeEnv(as), "MCP_AUTH_CLIENT_IDS="+publicClient, "MCP_AUTH_SCOPE_PREFIX="+endpoint+"/")
		},
	},
	{
		// Microsoft Entra ID (v2.0 tokens): no registration; the API's
		// Application ID URI is the endpoint's URL, so its scopes are
		// "<URL>/<name>" and match the resource the client sends; the
		// token's aud is the app registration's id, its scp the bare
		// names. The endpoint accepts that aud (MCP_AUTH_ACCEPTED_AUDIENCES).
		name: "entra-no-registration",
		as: func(endpoint string) oauthmock.Options {
			return oauthmock.Options{ClientID: publicClient, Profile: "entra", Audience: entraAppID, AppIDURI: endpoint}
		},
		env: func(as *oauthmock.Server, endpoint string) []string {
			return append(facadeEnv(as), "MCP_AUTH_ACCEPTED_AUDIENCES="+entraAppID, "MCP_AUTH_SCOPE_PREFIX="+endpoint+"/")
		},
	},
}

// journeyDoors name the doors as the template deploys them.
var journeyDoors = map[string]string{"Local": "local", "Lambda": "http-api", "StreamingDoor": "streaming"}

// journeyRedirect is where the client's authorization response goes: a
// loopback URI, as a native client's (RFC 8252).
const journeyRedirect = "http://127.0.0.1:33418/callback"

// TestIdPJourneys: a self-registering client — go-sdk v1.8.0's
// AuthorizationCodeHandler with dynamic client registration, and no
// client id of its own — goes from nothing to a notes_add through each
// door, against each provider profile: a 401, the protected-resource
// metadata, the authorization server's metadata, a registration (at the
// provider when it registers clients; else at the endpoint's facade,
// answered with the pre-registered public client), an authorization code
// with PKCE (S256) at the provider, the token at the provider, the call;
// with a 403 step-up to notes:write when the metadata lists only
// notes:read. Each verified journey prints
// `idp-journey: <profile> <client> <door> ok` (the client is go-sdk;
// the door local, http-api (the template's buffered HTTP API) or
// streaming (its REST API streaming door, protected, on a custom domain)).
func TestIdPJourneys(t *testing.T) {
	for _, p := range idpProfiles {
		for _, door := range append(slices.Clone(authTargets), authTarget{"StreamingDoor", reserveStreamREST}) {
			for _, stepUp := range []bool{false, true} {
				name := p.name + "/" + door.name
				if stepUp {
					name += "/StepUp"
				}
				t.Run(name, func(t *testing.T) {
					testIdPJourney(t, p, door, stepUp)
					if t.Failed() {
						return
					}
					profile := p.name
					if stepUp {
						profile += "+step-up"
					}
					fmt.Printf("idp-journey: %s go-sdk %s ok\n", profile, journeyDoors[door.name])
				})
			}
		}
	}
	testProxyJourneys(t)
}

func testIdPJourney(t *testing.T, p idpProfile, door authTarget, stepUp bool) {
	ctx := authContext(t)
	ep := door.reserve(t)
	as := oauthmock.NewWith(t, p.as(ep.URL))
	env := append(ep.AuthEnv(as.Issuer), p.env(as, ep.URL)...)
	prefix := ep.URL + "/"
	if p.unprefixed {
		prefix = ""
	}
	if stepUp {
		// The metadata lists only the read scope, as the provider names
		// it: the client asks for more when a tool needs it.
		env = append(env, "MCP_AUTH_SCOPES_SUPPORTED="+prefix+scopeRead)
	}
	ep.Start(env...)

	rec := &journeyLog{base: ep.Client.Transport}
	if rec.base == nil {
		rec.base = http.DefaultTransport
	}
	hc := &http.Client{Transport: rec, Timeout: testTimeout}
	// The user's browser: it follows the authorization URL to the
	// provider, which approves at once and redirects to the client's
	// loopback URI with the code.
	browser := &http.Client{Transport: rec, Timeout: testTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{journeyRedirect}, ClientName: "idp journey", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code"}, ResponseTypes: []string{"code"},
		}},
		RedirectURL: journeyRedirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
			if err != nil {
				return nil, err
			}
			resp, err := browser.Do(req)
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
			loc, err := url.Parse(resp.Header.Get("Location"))
			if err != nil || resp.StatusCode/100 != 3 || !strings.HasPrefix(loc.String(), journeyRedirect) {
				return nil, fmt.Errorf("the provider answered the authorization request %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
			}
			q := loc.Query()
			if e := q.Get("error"); e != "" {
				return nil, fmt.Errorf("the provider refused the authorization request: %s", e)
			}
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
		Client: hc,
	})
	if err != nil {
		t.Fatal(err)
	}
	addThroughJourney(ctx, t, ep, hc, handler, rec, "registered my way in")

	// The journey, as the client and the browser made it.
	registrationURL, where := strings.TrimSuffix(ep.URL, "/")+"/register", "the endpoint's facade"
	if p.providerRegisters {
		registrationURL, where = as.Issuer+"/register", "the provider"
	}
	var regs, authorizes, tokens []journeyExchange
	for _, x := range rec.all() {
		switch {
		case x.method == http.MethodPost && x.url == registrationURL:
			regs = append(regs, x)
		case strings.HasPrefix(x.url, as.Issuer+"/authorize"):
			authorizes = append(authorizes, x)
		case x.url == as.Issuer+"/token":
			tokens = append(tokens, x)
		}
	}
	// go-sdk v1.8.0 registers afresh before each authorization, the
	// step-up's included; through the facade every registration gets the
	// same public client, at the provider each a client of its own.
	wantRounds := 1
	if stepUp {
		wantRounds = 2
	}
	if len(regs) != wantRounds {
		t.Fatalf("%d registrations at %s, want %d", len(regs), where, wantRounds)
	}
	clients := make([]string, len(regs))
	for i, r := range regs {
		var registered struct {
			ClientID string `json:"client_id"`
		}
		err := json.Unmarshal(r.body, &registered)
		clients[i] = registered.ClientID
		if err != nil || r.status != http.StatusCreated || registered.ClientID == "" || !p.providerRegisters && registered.ClientID != publicClient {
			t.Errorf("registration %d at %s answered %d, client %q (%v)", i, where, r.status, registered.ClientID, err)
		}
	}
	if len(authorizes) != wantRounds || len(tokens) != wantRounds {
		t.Fatalf("%d authorization requests and %d token requests at the provider, want %d of each", len(authorizes), len(tokens), wantRounds)
	}
	for i, a := range authorizes {
		u, _ := url.Parse(a.url)
		q := u.Query()
		if q.Get("client_id") != clients[i] || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("redirect_uri") != journeyRedirect {
			t.Errorf("authorization request %d: %v; want the client registered (%s), PKCE S256 and the loopback redirect", i, q, clients[i])
		}
		if tokens[i].status != http.StatusOK {
			t.Errorf("token request %d answered %d", i, tokens[i].status)
		}
	}
	// The scopes asked for are the provider's names of the endpoint's.
	u, _ := url.Parse(authorizes[0].url)
	if first := u.Query().Get("scope"); !stepUp && !sameScopes(first, prefix+scopeRead+" "+prefix+scopeWrite) || stepUp && first != prefix+scopeRead {
		t.Errorf("the first authorization asked for %q", first)
	}
	if stepUp {
		u, _ := url.Parse(authorizes[1].url)
		if !sameScopes(u.Query().Get("scope"), prefix+scopeRead+" "+prefix+scopeWrite) {
			t.Errorf("the step-up asked for %q, want %s%s and %s%s", u.Query().Get("scope"), prefix, scopeRead, prefix, scopeWrite)
		}
	}
}

// addThroughJourney connects go-sdk's client to ep through hc with
// handler (which authorizes it) and adds a note, failing t otherwise; the
// journey's exchanges (rec) are logged when t fails.
func addThroughJourney(ctx context.Context, t *testing.T, ep *authEndpoint, hc *http.Client, handler auth.OAuthHandler, rec *journeyLog, text string) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			for i, x := range rec.all() {
				t.Logf("exchange %d: %s %s -> %d %.300s", i, x.method, x.url, x.status, x.body)
			}
		}
	})
	cs, err := mcp.NewClient(goSDKClientInfo, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ep.URL, HTTPClient: hc, OAuthHandler: handler}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notes_add", Arguments: map[string]any{"text": text}})
	if err != nil || res.IsError {
		t.Fatalf("notes_add: %v %+v", err, res)
	}
}

// journeyExchange is one request a journey's client or browser made, and its
// answer.
type journeyExchange struct {
	method, url string
	status      int
	body        []byte
}

// journeyLog records every exchange made through it.
type journeyLog struct {
	base http.RoundTripper
	mu   sync.Mutex
	log  []journeyExchange
}

func (l *journeyLog) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	l.mu.Lock()
	l.log = append(l.log, journeyExchange{req.Method, req.URL.String(), resp.StatusCode, body})
	l.mu.Unlock()
	return resp, nil
}

func (l *journeyLog) all() []journeyExchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.log)
}
