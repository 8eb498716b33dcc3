package endpoint

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// An Entra ID application's identifiers, as the variables name them.
const (
	entraPrefix = "api://6e74172b-be56-4843-9ff4-e66a39bb12e3/"
	entraAppID  = "6e74172b-be56-4843-9ff4-e66a39bb12e3"
)

func TestLoadScopePrefixConfig(t *testing.T) {
	const iss = "https://login.microsoftonline.com/tenant/v2.0"
	c, err := LoadConfig(env(EnvAuthIssuer, iss, EnvAuthScopePrefix, entraPrefix,
		EnvAuthAudiences, " "+entraAppID+" , api://notes ,https://notes.example.com/api "))
	if err != nil {
		t.Fatal(err)
	}
	if c.AuthScopePrefix != entraPrefix {
		t.Errorf("AuthScopePrefix = %q, want %q", c.AuthScopePrefix, entraPrefix)
	}
	if want := []string{entraAppID, "api://notes", "https://notes.example.com/api"}; !reflect.DeepEqual(c.AuthAudiences, want) {
		t.Errorf("AuthAudiences = %q, want %q", c.AuthAudiences, want)
	}
	// Cognito's prefix: a resource server identifier and "/".
	if c, err := LoadConfig(env(EnvAuthIssuer, iss, EnvAuthScopePrefix, "notes/")); err != nil || c.AuthScopePrefix != "notes/" || c.AuthAudiences != nil {
		t.Errorf("a prefix alone: %q %q, %v", c.AuthScopePrefix, c.AuthAudiences, err)
	}
	// Unset, neither.
	if c, err := LoadConfig(env(EnvAuthIssuer, iss)); err != nil || c.AuthScopePrefix != "" || c.AuthAudiences != nil {
		t.Errorf("neither set: %q %q, %v", c.AuthScopePrefix, c.AuthAudiences, err)
	}

	tests := []struct {
		name string
		env  func(string) string
		want []string // the variables the error must name
	}{
		{"a prefix without an issuer", env(EnvAuthScopePrefix, entraPrefix), []string{EnvAuthScopePrefix, EnvAuthIssuer}},
		{"audiences without an issuer", env(EnvAuthAudiences, entraAppID), []string{EnvAuthAudiences, EnvAuthIssuer}},
		{"both without an issuer", env(EnvAuthScopePrefix, entraPrefix, EnvAuthAudiences, entraAppID), []string{EnvAuthScopePrefix, EnvAuthAudiences, EnvAuthIssuer}},
		{"a prefix without an issuer on Lambda, anonymous", env(EnvRuntimeAPI, "127.0.0.1:9001", EnvAllowAnonymous, "true", EnvAuthScopePrefix, "notes/"), []string{EnvAuthScopePrefix, EnvAuthIssuer}},
		{"a prefix with a space", env(EnvAuthIssuer, iss, EnvAuthScopePrefix, "api://notes /"), []string{EnvAuthScopePrefix}},
		{"a prefix with a leading space", env(EnvAuthIssuer, iss, EnvAuthScopePrefix, " notes/"), []string{EnvAuthScopePrefix}},
		{"a prefix with a quote", env(EnvAuthIssuer, iss, EnvAuthScopePrefix, `api://"notes"/`), []string{EnvAuthScopePrefix}},
		{"a prefix with a backslash", env(EnvAuthIssuer, iss, EnvAuthScopePrefix, `notes\`), []string{EnvAuthScopePrefix}},
		{"a prefix with a control character", env(EnvAuthIssuer, iss, EnvAuthScopePrefix, "notes/\t"), []string{EnvAuthScopePrefix}},
		{"an empty audience in the list", env(EnvAuthIssuer, iss, EnvAuthAudiences, entraAppID+",,api://notes"), []string{EnvAuthAudiences}},
		{"a trailing comma", env(EnvAuthIssuer, iss, EnvAuthAudiences, entraAppID+","), []string{EnvAuthAudiences}},
		{"an audience with a space inside", env(EnvAuthIssuer, iss, EnvAuthAudiences, "api://my notes"), []string{EnvAuthAudiences}},
		{"an audience with a quote", env(EnvAuthIssuer, iss, EnvAuthAudiences, `api://"notes"`), []string{EnvAuthAudiences}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadConfig(tt.env)
			if err == nil {
				t.Fatalf("loaded prefix %q, audiences %q", c.AuthScopePrefix, c.AuthAudiences)
			}
			for _, name := range tt.want {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("error %q does not name %s", err, name)
				}
			}
		})
	}
}

// TestNewListsPrefixedDefaultScopes: the function's DefaultScopes are its
// own names, so the metadata lists them with the provider's prefix;
// MCP_AUTH_SCOPES_SUPPORTED names the provider's scopes already and is
// listed as it is. The server's challenges name a tool's scopes prefixed.
func TestNewListsPrefixedDefaultScopes(t *testing.T) {
	const (
		mcp = "https://mcp.example.com/mcp"
		iss = "https://login.microsoftonline.com/tenant/v2.0"
	)
	tests := []struct {
		name string
		env  func(string) string
		want []string
	}{
		{"default scopes take the prefix", env(EnvAuthIssuer, iss, EnvAuthScopePrefix, entraPrefix),
			[]string{entraPrefix + "notes:read", entraPrefix + "notes:write"}},
		{"configured scopes are listed verbatim", env(EnvAuthIssuer, iss, EnvAuthScopePrefix, entraPrefix, EnvAuthScopes, "offline_access "+entraPrefix+"notes:read"),
			[]string{"offline_access", entraPrefix + "notes:read"}},
		{"no prefix, the default scopes as they are", env(EnvAuthIssuer, iss),
			[]string{"notes:read", "notes:write"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := LoadConfig(tt.env)
			if err != nil {
				t.Fatal(err)
			}
			ep, err := New(cfg, Options{Implementation: stateless.Implementation{Name: "t", Version: "1"}, Stdout: io.Discard,
				DefaultScopes: []string{"notes:read", "notes:write"}})
			if err != nil {
				t.Fatal(err)
			}
			resp := ep.Auth.ProtectedResourceMetadata(mcp)
			var prm struct {
				ScopesSupported []string `json:"scopes_supported"`
			}
			if err := json.Unmarshal(resp.Body, &prm); err != nil || resp.Status != 200 || !reflect.DeepEqual(prm.ScopesSupported, tt.want) {
				t.Errorf("protected-resource metadata: %d %s\nwant scopes_supported %q", resp.Status, resp.Body, tt.want)
			}

			// The 401 names the scope the tool needs as clients must ask
			// for it.
			addScopedTool(ep.Server, "add", "notes:write")
			resp = callTool(ep.Server, mcp, "add", "")
			want := `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="` + cfg.AuthScopePrefix + `notes:write"`
			if got := resp.Header.Get("WWW-Authenticate"); resp.Status != 401 || got != want {
				t.Errorf("no token: %d %s\nwant 401 %s", resp.Status, got, want)
			}
		})
	}
}

// TestNewAcceptsTheConfiguredAudiences: end to end through the composed
// endpoint and a real verifier, against an issuer on loopback. A token
// whose "aud" is the application id is accepted only with
// MCP_AUTH_ACCEPTED_AUDIENCES naming it, and its prefixed scope grants
// the tool's scope with MCP_AUTH_SCOPE_PREFIX.
func TestNewAcceptsTheConfiguredAudiences(t *testing.T) {
	const mcp = "https://mcp.example.com/mcp"
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	iss := srv.URL
	doc := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": iss + "/keys"})
	}
	mux.HandleFunc("/.well-known/oauth-authorization-server", doc)
	mux.HandleFunc("/.well-known/openid-configuration", doc)
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}}, (&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	mint := func(aud any, scp []string) string {
		now := time.Now()
		payload, err := json.Marshal(map[string]any{"iss": iss, "sub": "user-1", "aud": aud, "scp": scp,
			"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()})
		if err != nil {
			t.Fatal(err)
		}
		obj, err := signer.Sign(payload)
		if err != nil {
			t.Fatal(err)
		}
		s, err := obj.CompactSerialize()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	compose := func(kv ...string) *stateless.Server {
		cfg, err := LoadConfig(env(append([]string{EnvAuthIssuer, iss}, kv...)...))
		if err != nil {
			t.Fatal(err)
		}
		ep, err := New(cfg, Options{Implementation: stateless.Implementation{Name: "t", Version: "1"}, Stdout: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		addScopedTool(ep.Server, "add", "notes:write")
		return ep.Server
	}
	entra := compose(EnvAuthScopePrefix, entraPrefix, EnvAuthAudiences, "api://other, "+entraAppID)
	strict := compose()

	tests := []struct {
		name      string
		s         *stateless.Server
		token     string
		status    int
		challenge string // "" none expected
	}{
		{"the application id, listed; a prefixed scope", entra, mint(entraAppID, []string{entraPrefix + "notes:write"}), 200, ""},
		{"the application id, listed; a bare scope", entra, mint(entraAppID, []string{"notes:write"}), 200, ""},
		{"the endpoint's URL, still", entra, mint(mcp, []string{"notes:write"}), 200, ""},
		{"the application id without MCP_AUTH_ACCEPTED_AUDIENCES", strict, mint(entraAppID, []string{"notes:write"}), 401,
			`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="notes:write", error="invalid_token"`},
		{"an audience not listed", entra, mint("00000003-0000-0000-c000-000000000000", []string{"notes:write"}), 401,
			`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="` + entraPrefix + `notes:write", error="invalid_token"`},
		{"another application's prefix", entra, mint(entraAppID, []string{"api://other/notes:write"}), 403,
			`Bearer error="insufficient_scope", scope="` + entraPrefix + `notes:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := callTool(tt.s, mcp, "add", tt.token)
			if resp.Status != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.Status, tt.status, resp.Body)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate = %s\nwant               %s", got, tt.challenge)
			}
			if r := wire.DecodeRPC(t, resp.Body); tt.status == 200 && r.Error != nil {
				t.Errorf("error %+v", r.Error)
			}
		})
	}
}

// addScopedTool adds a tool that needs scopes and does nothing.
func addScopedTool(s *stateless.Server, name string, scopes ...string) {
	stateless.AddTool(s, &stateless.Tool{Name: name, Scopes: scopes, Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *stateless.ToolRequest, struct{}) (*stateless.CallToolResult, struct{}, error) {
			return nil, struct{}{}, nil
		})
}

// callTool calls tool on s, the endpoint mcp, with token as the bearer
// token ("" none).
func callTool(s *stateless.Server, mcp, tool, token string) *stateless.Response {
	h := wire.ModernHeaders("tools/call", tool)
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},"_meta":` + wire.MetaJSON(`{}`) + `}}`
	return s.Handle(context.Background(), &stateless.Request{Method: "POST", Header: h, Endpoint: mcp, Body: []byte(body)})
}
