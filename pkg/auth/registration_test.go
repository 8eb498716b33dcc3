package auth_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// The registration facade's fixture: a provider without registration
// (its endpoints), the public client pre-registered there and one https
// redirect URI besides loopback ones.
const (
	facadeClientID  = "4f1b2c3d5e6f7a8b9c0d"
	facadeAuthorize = "https://auth.example.com/oauth2/authorize"
	facadeToken     = "https://auth.example.com/oauth2/token"
	facadeRedirect  = "https://app.example.com/oauth/callback"
	facadeASM       = "https://api.example.com/.well-known/oauth-authorization-server/mcp"
	// maxRegistration is the package's bound on a registration body.
	maxRegistration = 16 << 10
)

func facadeRegistration() *auth.Registration {
	return &auth.Registration{ClientID: facadeClientID, AuthorizationEndpoint: facadeAuthorize, TokenEndpoint: facadeToken,
		RedirectURIs: []string{facadeRedirect}}
}

// newFacade is a protected endpoint's Resource; with reg set it has the
// registration facade.
func newFacade(reg *auth.Registration) *auth.Resource {
	return &auth.Resource{
		Tokens:               tokens{},
		AuthorizationServers: []string{"https://issuer.example.com"},
		ScopesSupported:      []string{"notes:read", "notes:write"},
		Registration:         reg,
	}
}

// newFacadeServer is the server res protects, and its documents.
func newFacadeServer(res *auth.Resource) (*stateless.Server, *auth.Documents) {
	s := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Auth: &stateless.AuthOptions{Authenticator: res}})
	return s, &auth.Documents{Server: s, Resource: res}
}

// TestFacadeProtectedResourceMetadata: with a facade the endpoint is its
// own (only) authorization server; without one the configured issuers
// are.
func TestFacadeProtectedResourceMetadata(t *testing.T) {
	servers := func(s *auth.Resource) []string {
		t.Helper()
		resp := s.ProtectedResourceMetadata(endpoint)
		if resp.Status != http.StatusOK {
			t.Fatalf("%d %s", resp.Status, resp.Body)
		}
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if err := json.Unmarshal(resp.Body, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Resource != endpoint {
			t.Errorf("resource %q", doc.Resource)
		}
		return doc.AuthorizationServers
	}
	if got := servers(newFacade(facadeRegistration())); !slices.Equal(got, []string{endpoint}) {
		t.Errorf("with a facade: authorization_servers %q, want [%s]", got, endpoint)
	}
	if got := servers(newFacade(nil)); !slices.Equal(got, []string{"https://issuer.example.com"}) {
		t.Errorf("without a facade: authorization_servers %q, want the issuer", got)
	}
	// The issuer the metadata names is where a client finds the
	// facade's own metadata (RFC 8414 section 3).
	if got := auth.AuthorizationServerMetadataURL(endpoint); got != facadeASM {
		t.Errorf("AuthorizationServerMetadataURL(%s) = %s, want %s", endpoint, got, facadeASM)
	}
	for in, want := range map[string]string{
		"https://api.example.com/prod/mcp/": "https://api.example.com/.well-known/oauth-authorization-server/prod/mcp",
		"https://api.example.com":           "https://api.example.com/.well-known/oauth-authorization-server",
		"http://127.0.0.1:8080/mcp":         "http://127.0.0.1:8080/.well-known/oauth-authorization-server/mcp",
		"/mcp":                              "",
	} {
		if got := auth.AuthorizationServerMetadataURL(in); got != want {
			t.Errorf("AuthorizationServerMetadataURL(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestAuthorizationServerMetadata(t *testing.T) {
	s := newFacade(facadeRegistration())
	resp := s.AuthorizationServerMetadata(endpoint)
	if resp.Status != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("%d %v %s", resp.Status, resp.Header, resp.Body)
	}
	var doc struct {
		Issuer                            string   `json:"issuer"`
		AuthorizationEndpoint             string   `json:"authorization_endpoint"`
		TokenEndpoint                     string   `json:"token_endpoint"`
		RegistrationEndpoint              string   `json:"registration_endpoint"`
		ScopesSupported                   []string `json:"scopes_supported"`
		ResponseTypesSupported            []string `json:"response_types_supported"`
		GrantTypesSupported               []string `json:"grant_types_supported"`
		TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
		CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	}
	if err := json.Unmarshal(resp.Body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"issuer", doc.Issuer, endpoint},
		{"authorization_endpoint", doc.AuthorizationEndpoint, facadeAuthorize},
		{"token_endpoint", doc.TokenEndpoint, facadeToken},
		{"registration_endpoint", doc.RegistrationEndpoint, endpoint + "/register"},
		{"scopes_supported", doc.ScopesSupported, []string{"notes:read", "notes:write"}},
		{"response_types_supported", doc.ResponseTypesSupported, []string{"code"}},
		{"grant_types_supported", doc.GrantTypesSupported, []string{"authorization_code", "refresh_token"}},
		{"token_endpoint_auth_methods_supported", doc.TokenEndpointAuthMethodsSupported, []string{"none"}},
		{"code_challenge_methods_supported", doc.CodeChallengeMethodsSupported, []string{"S256"}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if !strings.HasSuffix(endpoint+auth.RegistrationSuffix, "/mcp/register") {
		t.Errorf("RegistrationSuffix %q", auth.RegistrationSuffix)
	}
	// A trailing slash on the endpoint does not double the registration
	// endpoint's.
	var slashed struct {
		RegistrationEndpoint string `json:"registration_endpoint"`
	}
	_ = json.Unmarshal(s.AuthorizationServerMetadata(endpoint+"/").Body, &slashed)
	if slashed.RegistrationEndpoint != endpoint+"/register" {
		t.Errorf("registration_endpoint of %s/ = %q", endpoint, slashed.RegistrationEndpoint)
	}

	// Without a facade the metadata is absent: the same 404 as the
	// protected-resource metadata's of an open endpoint, whether the
	// endpoint has no Auth at all or Auth without a facade (a facade
	// that is off answers as one that does not exist).
	var open *auth.Resource // an endpoint without authorization
	absent := open.ProtectedResourceMetadata(endpoint)
	if absent.Status != http.StatusNotFound {
		t.Fatalf("an open endpoint's protected-resource metadata: %d", absent.Status)
	}
	for name, resp := range map[string]*stateless.Response{
		"no Auth: metadata":                   open.AuthorizationServerMetadata(endpoint),
		"Auth without a facade: metadata":     newFacade(nil).AuthorizationServerMetadata(endpoint),
		"no Auth: registration":               open.Register(endpoint, []byte(`{"redirect_uris":["http://127.0.0.1/cb"]}`)),
		"Auth without a facade: registration": newFacade(nil).Register(endpoint, []byte(`{"redirect_uris":["http://127.0.0.1/cb"]}`)),
		"a facade without an endpoint URL":    s.AuthorizationServerMetadata(""),
	} {
		if resp.Status != absent.Status || !reflect.DeepEqual(resp.Header, absent.Header) || !bytes.Equal(resp.Body, absent.Body) {
			t.Errorf("%s: %d %v %s, want %d %v %s", name, resp.Status, resp.Header, resp.Body, absent.Status, absent.Header, absent.Body)
		}
	}
}

// TestRegister pins the facade's answer to each registration: the one
// pre-registered client for every valid one, a refusal with the RFC 7591
// error for the rest, and never a word of the offending URI.
func TestRegister(t *testing.T) {
	s := newFacade(facadeRegistration())
	overBound := `{"redirect_uris":["http://127.0.0.1/cb"]}` + strings.Repeat(" ", maxRegistration)
	atBound := `{"redirect_uris":["http://127.0.0.1/cb"]}`
	atBound += strings.Repeat(" ", maxRegistration-len(atBound))
	tests := []struct {
		name   string
		body   string
		status int
		error  string   // the error code of a 400
		uris   []string // the redirect_uris of a 201
		grants []string
		types  []string
		leak   string // text the body must not contain
	}{
		{"loopback IPv4 with a port", `{"redirect_uris":["http://127.0.0.1:49152/cb"]}`, 201, "", []string{"http://127.0.0.1:49152/cb"}, nil, nil, ""},
		{"loopback IPv6", `{"redirect_uris":["http://[::1]:8080/x"]}`, 201, "", []string{"http://[::1]:8080/x"}, nil, nil, ""},
		{"localhost", `{"redirect_uris":["http://localhost:33418/"]}`, 201, "", []string{"http://localhost:33418/"}, nil, nil, ""},
		{"loopback without a port", `{"redirect_uris":["http://127.0.0.1/cb"]}`, 201, "", []string{"http://127.0.0.1/cb"}, nil, nil, ""},
		{"localhost without a port or path", `{"redirect_uris":["http://localhost"]}`, 201, "", []string{"http://localhost"}, nil, nil, ""},
		{"loopback with a query", `{"redirect_uris":["http://127.0.0.1:1234/cb?x=1"]}`, 201, "", []string{"http://127.0.0.1:1234/cb?x=1"}, nil, nil, ""},
		{"the configured https redirect", `{"redirect_uris":["` + facadeRedirect + `"]}`, 201, "", []string{facadeRedirect}, nil, nil, ""},
		{"several, all accepted", `{"redirect_uris":["http://127.0.0.1:1/a","` + facadeRedirect + `","http://[::1]/b"]}`, 201, "",
			[]string{"http://127.0.0.1:1/a", facadeRedirect, "http://[::1]/b"}, nil, nil, ""},
		{"a typical client's full request", `{"client_name":"Some Client","redirect_uris":["http://127.0.0.1:6274/oauth/callback"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"],"scope":"notes:read"}`, 201, "",
			[]string{"http://127.0.0.1:6274/oauth/callback"}, []string{"authorization_code", "refresh_token"}, []string{"code"}, ""},
		{"explicit nulls take the defaults", `{"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":null,"grant_types":null,"response_types":null}`, 201, "",
			[]string{"http://127.0.0.1/cb"}, nil, nil, ""},
		{"a body at the bound", atBound, 201, "", []string{"http://127.0.0.1/cb"}, nil, nil, ""},

		{"the configured redirect with a trailing slash", `{"redirect_uris":["` + facadeRedirect + `/"]}`, 400, "invalid_redirect_uri", nil, nil, nil, facadeRedirect + "/"},
		{"the configured redirect in another case", `{"redirect_uris":["https://APP.example.com/oauth/callback"]}`, 400, "invalid_redirect_uri", nil, nil, nil, "APP.example.com"},
		{"the configured redirect's path in another case", `{"redirect_uris":["https://app.example.com/OAuth/callback"]}`, 400, "invalid_redirect_uri", nil, nil, nil, "OAuth"},
		{"another https host", `{"redirect_uris":["https://evil.example/cb"]}`, 400, "invalid_redirect_uri", nil, nil, nil, "evil.example"},
		{"localhost as a subdomain's label", `{"redirect_uris":["http://localhost.evil.example/cb"]}`, 400, "invalid_redirect_uri", nil, nil, nil, "evil.example"},
		{"a loopback address as a subdomain's labels", `{"redirect_uris":["http://127.0.0.1.evil.example/"]}`, 400, "invalid_redirect_uri", nil, nil, nil, "evil.example"},
		{"userinfo", `{"redirect_uris":["http://user@127.0.0.1/cb"]}`, 400, "invalid_redirect_uri", nil, nil, nil, "user@"},
		{"a fragment", `{"redirect_uris":["http://127.0.0.1/cb#frag"]}`, 400, "invalid_redirect_uri", nil, nil, nil, "frag"},
		{"an empty fragment", `{"redirect_uris":["http://127.0.0.1/cb#"]}`, 400, "invalid_redirect_uri", nil, nil, nil, "/cb#"},
		{"https loopback, not configured", `{"redirect_uris":["https://127.0.0.1/cb"]}`, 400, "invalid_redirect_uri", nil, nil, nil, "https://127.0.0.1"},
		{"another loopback address", `{"redirect_uris":["http://127.0.0.2/cb"]}`, 400, "invalid_redirect_uri", nil, nil, nil, "127.0.0.2"},
		{"opaque", `{"redirect_uris":["http:127.0.0.1/cb"]}`, 400, "invalid_redirect_uri", nil, nil, nil, "http:127"},
		{"a custom scheme", `{"redirect_uris":["com.example.app:/cb"]}`, 400, "invalid_redirect_uri", nil, nil, nil, "com.example.app"},
		{"an empty string", `{"redirect_uris":[""]}`, 400, "invalid_redirect_uri", nil, nil, nil, ""},
		{"one bad among good ones", `{"redirect_uris":["http://127.0.0.1/cb","https://evil.example/cb"]}`, 400, "invalid_redirect_uri", nil, nil, nil, "evil.example"},
		{"an empty list", `{"redirect_uris":[]}`, 400, "invalid_redirect_uri", nil, nil, nil, ""},
		{"no redirect_uris", `{"client_name":"x"}`, 400, "invalid_redirect_uri", nil, nil, nil, ""},
		{"an empty object", `{}`, 400, "invalid_redirect_uri", nil, nil, nil, ""},

		{"a confidential client", `{"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, 400, "invalid_client_metadata", nil, nil, nil, ""},
		{"the password grant", `{"redirect_uris":["http://127.0.0.1/cb"],"grant_types":["password"]}`, 400, "invalid_client_metadata", nil, nil, nil, ""},
		{"the client credentials grant", `{"redirect_uris":["http://127.0.0.1/cb"],"grant_types":["client_credentials"]}`, 400, "invalid_client_metadata", nil, nil, nil, ""},
		{"a grant beside authorization_code", `{"redirect_uris":["http://127.0.0.1/cb"],"grant_types":["authorization_code","implicit"]}`, 400, "invalid_client_metadata", nil, nil, nil, ""},
		{"the token response type", `{"redirect_uris":["http://127.0.0.1/cb"],"response_types":["token"]}`, 400, "invalid_client_metadata", nil, nil, nil, ""},
		{"not JSON", `redirect_uris=http://127.0.0.1/cb`, 400, "invalid_client_metadata", nil, nil, nil, ""},
		{"a JSON array", `[{"redirect_uris":["http://127.0.0.1/cb"]}]`, 400, "invalid_client_metadata", nil, nil, nil, ""},
		{"a JSON string", `"http://127.0.0.1/cb"`, 400, "invalid_client_metadata", nil, nil, nil, ""},
		{"redirect_uris not a list", `{"redirect_uris":"http://127.0.0.1/cb"}`, 400, "invalid_client_metadata", nil, nil, nil, ""},
		{"trailing garbage", `{"redirect_uris":["http://127.0.0.1/cb"]} x`, 400, "invalid_client_metadata", nil, nil, nil, ""},
		{"an empty body", ``, 400, "invalid_client_metadata", nil, nil, nil, ""},
		{"a body over 16 KiB", overBound, 400, "invalid_client_metadata", nil, nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := s.Register(endpoint, []byte(tt.body))
			if resp.Status != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.Status, tt.status, resp.Body)
			}
			if cc, ct := resp.Header.Get("Cache-Control"), resp.Header.Get("Content-Type"); cc != "no-store" || ct != "application/json" {
				t.Errorf("Cache-Control %q, Content-Type %q", cc, ct)
			}
			if tt.status == http.StatusBadRequest {
				var e struct {
					Error       string `json:"error"`
					Description string `json:"error_description"`
				}
				if err := json.Unmarshal(resp.Body, &e); err != nil {
					t.Fatalf("%v: %s", err, resp.Body)
				}
				if e.Error != tt.error || e.Description == "" {
					t.Errorf("error %q (%q), want %q", e.Error, e.Description, tt.error)
				}
				if tt.leak != "" && strings.Contains(string(resp.Body), tt.leak) {
					t.Errorf("the refusal repeats %q: %s", tt.leak, resp.Body)
				}
				var sent struct {
					RedirectURIs []string `json:"redirect_uris"`
				}
				_ = json.Unmarshal([]byte(tt.body), &sent)
				for _, u := range sent.RedirectURIs {
					q, _ := json.Marshal(u)
					if u != "" && (strings.Contains(string(resp.Body), u) || strings.Contains(string(resp.Body), string(q[1:len(q)-1]))) {
						t.Errorf("the refusal repeats the redirect URI %q: %s", u, resp.Body)
					}
				}
				return
			}
			var got struct {
				ClientID                string   `json:"client_id"`
				ClientSecret            *string  `json:"client_secret"`
				RedirectURIs            []string `json:"redirect_uris"`
				TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
				GrantTypes              []string `json:"grant_types"`
				ResponseTypes           []string `json:"response_types"`
			}
			if err := json.Unmarshal(resp.Body, &got); err != nil {
				t.Fatalf("%v: %s", err, resp.Body)
			}
			grants, types := tt.grants, tt.types
			if grants == nil {
				grants = []string{"authorization_code"}
			}
			if types == nil {
				types = []string{"code"}
			}
			if got.ClientID != facadeClientID || got.ClientSecret != nil || got.TokenEndpointAuthMethod != "none" ||
				!slices.Equal(got.RedirectURIs, tt.uris) || !slices.Equal(got.GrantTypes, grants) || !slices.Equal(got.ResponseTypes, types) {
				t.Errorf("registered %s\nwant client %s, redirect_uris %q, grant_types %q, response_types %q", resp.Body, facadeClientID, tt.uris, grants, types)
			}
		})
	}
}

// TestFacadeOverHTTP: the net/http handler serves the facade, and a
// registration over the bound is a refused registration, not a transport
// failure.
func TestFacadeOverHTTP(t *testing.T) {
	_, docs := newFacadeServer(newFacade(facadeRegistration()))
	h := docs.Handler(endpoint)
	if maxRegistration != auth.MaxRegistrationBytes {
		t.Errorf("MaxRegistrationBytes %d, want %d", auth.MaxRegistrationBytes, maxRegistration)
	}

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-authorization-server/mcp", nil))
	var doc struct {
		Issuer string `json:"issuer"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); w.Code != http.StatusOK || err != nil || doc.Issuer != endpoint ||
		w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("metadata: %d %v %s", w.Code, w.Header(), w.Body)
	}

	register := func(body string, length int64) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/mcp/register", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.ContentLength = length
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	valid := `{"redirect_uris":["http://127.0.0.1:8123/callback"]}`
	if w := register(valid, int64(len(valid))); w.Code != http.StatusCreated || !strings.Contains(w.Body.String(), `"client_id":"`+facadeClientID+`"`) ||
		w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("a registration: %d %v %s", w.Code, w.Header(), w.Body)
	}
	if w := register(valid, -1); w.Code != http.StatusCreated {
		t.Errorf("a registration of unknown length: %d %s", w.Code, w.Body)
	}
	big := `{"redirect_uris":["http://127.0.0.1/cb"],"x":"` + strings.Repeat("a", maxRegistration) + `"}`
	for name, length := range map[string]int64{"announced": int64(len(big)), "of unknown length": -1} {
		w := register(big, length)
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &e); w.Code != http.StatusBadRequest || err != nil || e.Error != "invalid_client_metadata" {
			t.Errorf("a body over the bound, %s: %d %s", name, w.Code, w.Body)
		}
	}

	// Without a facade both are absent.
	_, docs = newFacadeServer(newFacade(nil))
	h = docs.Handler(endpoint)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-authorization-server/mcp", nil))
	if w.Code != http.StatusNotFound {
		t.Errorf("metadata without a facade: %d %s", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp/register", strings.NewReader(valid)))
	if w.Code != http.StatusNotFound {
		t.Errorf("registration without a facade: %d %s", w.Code, w.Body)
	}
}

// acceptedRedirect is the facade's rule for a redirect URI, written
// apart from it: one of the configured ones exactly, or http on a
// loopback host (127.0.0.1, [::1], localhost), without userinfo or a
// fragment.
func acceptedRedirect(raw string, configured []string) bool {
	if slices.Contains(configured, raw) {
		return true
	}
	u, err := url.Parse(raw)
	if err != nil || !strings.EqualFold(u.Scheme, "http") || u.User != nil || u.Opaque != "" || strings.Contains(raw, "#") {
		return false
	}
	switch u.Host {
	case "127.0.0.1", "[::1]", "localhost":
		return true
	}
	host, port, ok := strings.Cut(u.Host, "]:")
	if ok {
		return host == "[::1" && strings.Trim(port, "0123456789") == ""
	}
	host, port, ok = strings.Cut(u.Host, ":")
	return ok && (host == "127.0.0.1" || host == "localhost") && strings.Trim(port, "0123456789") == ""
}

// FuzzRegister: whatever a client sends, the facade answers 201 or 400
// with a JSON body; a 201 hands out the configured client for redirect
// URIs the facade accepts, a 400 names an RFC 7591 error.
func FuzzRegister(f *testing.F) {
	for _, seed := range []string{
		`{"redirect_uris":["http://127.0.0.1:8080/cb"]}`,
		`{"redirect_uris":["http://[::1]/x","` + facadeRedirect + `"],"grant_types":["authorization_code","refresh_token"],"token_endpoint_auth_method":"none"}`,
		`{"redirect_uris":["http://localhost.evil.example/cb"]}`,
		`{"redirect_uris":["http://user@127.0.0.1/cb#f"]}`,
		`{"redirect_uris":["http://127.0.0.1/cb"],"response_types":["token"]}`,
		`[]`,
		`"x"`,
		`null`,
	} {
		f.Add([]byte(seed))
	}
	reg := facadeRegistration()
	s := newFacade(reg)
	f.Fuzz(func(t *testing.T, body []byte) {
		resp := s.Register(endpoint, body)
		if !json.Valid(resp.Body) {
			t.Fatalf("status %d, body not JSON: %q", resp.Status, resp.Body)
		}
		switch resp.Status {
		case http.StatusCreated:
			var got struct {
				ClientID     string   `json:"client_id"`
				RedirectURIs []string `json:"redirect_uris"`
			}
			if err := json.Unmarshal(resp.Body, &got); err != nil {
				t.Fatal(err)
			}
			if got.ClientID != facadeClientID || len(got.RedirectURIs) == 0 {
				t.Fatalf("registered %s", resp.Body)
			}
			for _, u := range got.RedirectURIs {
				if !acceptedRedirect(u, reg.RedirectURIs) {
					t.Fatalf("registered the redirect URI %q: %s", u, resp.Body)
				}
			}
		case http.StatusBadRequest:
			var e struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal(resp.Body, &e); err != nil {
				t.Fatal(err)
			}
			if e.Error != "invalid_redirect_uri" && e.Error != "invalid_client_metadata" {
				t.Fatalf("error %q", e.Error)
			}
		default:
			t.Fatalf("status %d: %s", resp.Status, resp.Body)
		}
	})
}
