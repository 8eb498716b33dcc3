//go:build unix && !integration

package interop

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"html"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/loopback"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/oauthmock"
)

// proxyProfile is a provider the authorization proxy stands in front of:
// it knows one client of the endpoint's, whose only redirect URI is the
// endpoint's own callback.
type proxyProfile struct {
	name string
	as   func(endpoint string) oauthmock.Options
	env  func(endpoint string) []string
	// prefix is what the provider puts before the endpoint's scope names.
	prefix func(endpoint string) string
}

// entraAppIDURI is the Entra-profile API's Application ID URI, which is
// not the endpoint's URL: the resource the client sends is refused there
// (AADSTS9010010), and the proxy leaves it out.
const entraAppIDURI = "api://" + entraAppID

var proxyProfiles = []proxyProfile{
	{
		// Amazon Cognito: the app client's callback is the endpoint's
		// own, exactly; no registration, no client ID metadata documents.
		name: "cognito-proxy",
		as: func(endpoint string) oauthmock.Options {
			return oauthmock.Options{ClientID: publicClient, Profile: "cognito", RedirectURIs: []string{endpoint + "/callback"}}
		},
		env: func(endpoint string) []string {
			return []string{"MCP_AUTH_CLIENT_IDS=" + publicClient, "MCP_AUTH_SCOPE_PREFIX=" + endpoint + "/"}
		},
		prefix: func(endpoint string) string { return endpoint + "/" },
	},
	{
		// Entra ID with an Application ID URI of its own: the resource
		// parameter is refused, the scopes carry the URI, the token's aud
		// is the application id.
		name: "entra-proxy",
		as: func(endpoint string) oauthmock.Options {
			return oauthmock.Options{ClientID: publicClient, Profile: "entra", Audience: entraAppID, AppIDURI: entraAppIDURI,
				RedirectURIs: []string{endpoint + "/callback"}, RefuseResource: true}
		},
		env: func(string) []string {
			return []string{"MCP_AUTH_ACCEPTED_AUDIENCES=" + entraAppID, "MCP_AUTH_SCOPE_PREFIX=" + entraAppIDURI + "/", "MCP_AUTH_PROXY_OMIT_RESOURCE=true"}
		},
		prefix: func(string) string { return entraAppIDURI + "/" },
	},
}

// proxyClients are the clients of the journeys: self-registering ones
// with a loopback redirect on an IP address (VS Code's) and on localhost
// (Claude Code's), each on a random port, and one identified by a client
// ID metadata document.
var proxyClients = []struct {
	name, host string
	document   bool
}{
	{"loopback-ip", "127.0.0.1", false},
	{"loopback-localhost", "localhost", false},
	{"cimd", "127.0.0.1", true},
}

// testProxyJourneys runs every proxy journey: each profile with each
// client (the document's with Cognito's profile) through each door, with
// and without a step-up, printing `idp-journey: <profile> <client> <door> ok`.
func testProxyJourneys(t *testing.T) {
	for _, p := range proxyProfiles {
		for _, c := range proxyClients {
			if c.document && p.name != "cognito-proxy" {
				continue
			}
			for _, door := range append(slices.Clone(authTargets), authTarget{"StreamingDoor", reserveStreamREST}) {
				for _, stepUp := range []bool{false, true} {
					name := p.name + "/" + c.name + "/" + door.name
					profile := p.name
					if stepUp {
						name += "/StepUp"
						profile += "+step-up"
					}
					t.Run(name, func(t *testing.T) {
						testProxyJourney(t, p, c.host, c.document, door, stepUp)
						if !t.Failed() {
							fmt.Printf("idp-journey: %s %s %s ok\n", profile, c.name, journeyDoors[door.name])
						}
					})
				}
			}
		}
	}
}

func testProxyJourney(t *testing.T, p proxyProfile, host string, document bool, door authTarget, stepUp bool) {
	ctx := authContext(t)
	ep := door.reserve(t)
	as := oauthmock.NewWith(t, p.as(ep.URL))
	env := append(ep.AuthEnv(as.Issuer), p.env(ep.URL)...)
	env = append(env, "MCP_AUTH_PROXY=true", "MCP_AUTH_REGISTRATION_CLIENT_ID="+publicClient,
		"MCP_AUTH_AUTHORIZATION_ENDPOINT="+as.Issuer+"/authorize", "MCP_AUTH_TOKEN_ENDPOINT="+as.Issuer+"/token")
	prefix := p.prefix(ep.URL)
	if stepUp {
		env = append(env, "MCP_AUTH_SCOPES_SUPPORTED="+prefix+scopeRead)
	}
	port, err := loopback.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	redirect := fmt.Sprintf("http://%s:%d/callback", host, port)
	var docURL string
	if document {
		docURL, env = serveClientDocument(t, redirect, env)
	}
	ep.Start(env...)

	rec := &journeyLog{base: ep.Client.Transport}
	if rec.base == nil {
		rec.base = http.DefaultTransport
	}
	hc := &http.Client{Transport: rec, Timeout: testTimeout}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &proxyBrowser{client: &http.Client{Transport: rec, Timeout: testTimeout, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, redirect: redirect}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: b.fetch,
		Client:                   hc,
	}
	if document {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: docURL}
	} else {
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, ClientName: "proxy journey", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code"}, ResponseTypes: []string{"code"},
		}}
	}
	handler, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addThroughJourney(ctx, t, ep, hc, handler, rec, "through the proxy")

	// The journey as the client, the browser and the provider saw it.
	var consents, authorizes, callbacks, upstream, tokens, upTokens []journeyExchange
	for _, x := range rec.all() {
		switch {
		case strings.HasPrefix(x.url, ep.URL+"/authorize") && x.method == http.MethodGet:
			if x.status == http.StatusOK {
				consents = append(consents, x)
			}
			authorizes = append(authorizes, x)
		case strings.HasPrefix(x.url, ep.URL+"/callback"):
			callbacks = append(callbacks, x)
		case strings.HasPrefix(x.url, as.Issuer+"/authorize"):
			upstream = append(upstream, x)
		case x.url == ep.URL+"/token":
			tokens = append(tokens, x)
		case x.url == as.Issuer+"/token":
			upTokens = append(upTokens, x)
		}
	}
	rounds := 1
	if stepUp {
		rounds = 2
	}
	if len(upstream) != rounds || len(callbacks) != rounds || len(tokens) != rounds {
		t.Fatalf("%d authorizations at the provider, %d callbacks, %d token requests at the endpoint; want %d of each", len(upstream), len(callbacks), len(tokens), rounds)
	}
	if len(authorizes) != rounds {
		t.Errorf("%d authorization requests at the endpoint, want %d", len(authorizes), rounds)
	}
	if len(upTokens) != 0 {
		t.Errorf("the client's own side sent %d token requests to the provider; the proxy makes them", len(upTokens))
	}
	// One consent: the step-up's second authorization is of a client this
	// browser consented to already.
	if len(consents) != 1 {
		t.Errorf("%d consent pages, want 1", len(consents))
	}
	for i, a := range upstream {
		u, _ := url.Parse(a.url)
		q := u.Query()
		if q.Get("client_id") != publicClient || q.Get("redirect_uri") != ep.URL+"/callback" || q.Get("code_challenge_method") != "S256" {
			t.Errorf("authorization %d at the provider: %v; want the endpoint's client, its callback and PKCE S256", i, q)
		}
		if _, has := q["resource"]; has == (p.name == "entra-proxy") {
			t.Errorf("authorization %d at the provider: resource %q (profile %s)", i, q.Get("resource"), p.name)
		}
	}
	for i, c := range callbacks {
		if c.status != http.StatusFound {
			t.Errorf("callback %d answered %d", i, c.status)
		}
	}
	for i, tk := range tokens {
		if tk.status != http.StatusOK {
			t.Errorf("token request %d answered %d: %s", i, tk.status, tk.body)
		}
	}
	u, _ := url.Parse(upstream[0].url)
	if first := u.Query().Get("scope"); !stepUp && !sameScopes(first, prefix+scopeRead+" "+prefix+scopeWrite) || stepUp && first != prefix+scopeRead {
		t.Errorf("the first authorization asked for %q", first)
	}
	if stepUp {
		u, _ := url.Parse(upstream[1].url)
		if !sameScopes(u.Query().Get("scope"), prefix+scopeRead+" "+prefix+scopeWrite) {
			t.Errorf("the step-up asked for %q", u.Query().Get("scope"))
		}
	}
}

// serveClientDocument serves the client ID metadata document of a client
// whose redirect URI is redirect, on a TLS server on loopback, and
// returns its URL and env with what lets the endpoint fetch it there:
// its host among the private ones, its certificate trusted.
func serveClientDocument(t *testing.T, redirect string, env []string) (string, []string) {
	t.Helper()
	var docURL string
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/client.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=60")
		json.NewEncoder(w).Encode(map[string]any{"client_id": docURL, "client_name": "Journey <b>CIMD</b> client",
			"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none",
			"grant_types": []string{"authorization_code"}, "response_types": []string{"code"}})
	}))
	t.Cleanup(ts.Close)
	docURL = ts.URL + "/client.json"
	ca := filepath.Join(t.TempDir(), "client-doc.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(ts.URL)
	return docURL, append(env, "MCP_AUTH_CLIENT_METADATA_PRIVATE_HOSTS="+u.Hostname(), "SSL_CERT_FILE="+ca)
}

// proxyBrowser is the user's browser in a proxy journey: it follows the
// authorization URL through the endpoint's consent page (approving it),
// the provider, and the endpoint's callback, to the client's redirect,
// keeping cookies as a browser does.
type proxyBrowser struct {
	client   *http.Client
	redirect string
}

var (
	hiddenInput = regexp.MustCompile(`<input type="hidden" name="(ticket|csrf)" value="([^"]*)">`)
	formAction  = regexp.MustCompile(`<form method="post" action="([^"]*)">`)
)

func (b *proxyBrowser) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	next, method, form := args.URL, http.MethodGet, url.Values(nil)
	for range 12 {
		var body *strings.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		} else {
			body = strings.NewReader("")
		}
		req, err := http.NewRequestWithContext(ctx, method, next, body)
		if err != nil {
			return nil, err
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			u, _ := url.Parse(next)
			req.Header.Set("Origin", u.Scheme+"://"+u.Host)
		}
		resp, err := b.client.Do(req)
		if err != nil {
			return nil, err
		}
		page := readAll(resp)
		switch {
		case resp.StatusCode/100 == 3:
			loc, err := resp.Location()
			if err != nil {
				return nil, err
			}
			if strings.HasPrefix(loc.String(), b.redirect) {
				q := loc.Query()
				if e := q.Get("error"); e != "" {
					return nil, fmt.Errorf("the authorization was refused: %s", e)
				}
				return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
			}
			next, method, form = loc.String(), http.MethodGet, nil
		case resp.StatusCode == http.StatusOK && strings.Contains(page, `name="ticket"`):
			// The consent page: approve, as the user would.
			form = url.Values{"decision": {"approve"}}
			for _, m := range hiddenInput.FindAllStringSubmatch(page, -1) {
				form.Set(m[1], html.UnescapeString(m[2]))
			}
			m := formAction.FindStringSubmatch(page)
			if m == nil {
				return nil, fmt.Errorf("the consent page has no form: %.300s", page)
			}
			next, method = html.UnescapeString(m[1]), http.MethodPost
		default:
			return nil, fmt.Errorf("%s %s answered %d: %.300s", method, next, resp.StatusCode, page)
		}
	}
	return nil, fmt.Errorf("the authorization did not reach %s", b.redirect)
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil || sb.Len() > 1<<20 {
			return sb.String()
		}
	}
}
