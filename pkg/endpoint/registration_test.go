package endpoint

import (
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// facadeEnv is a complete registration facade's configuration, with
// kv's pairs added (an empty value unsets a variable).
func facadeEnv(kv ...string) func(string) string {
	return env(append([]string{
		EnvAuthIssuer, "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Abc",
		EnvAuthRegistrationClientID, "4f1b2c3d5e6f7a8b9c0d",
		EnvAuthAuthorizationEndpoint, "https://auth.example.com/oauth2/authorize",
		EnvAuthTokenEndpoint, "https://auth.example.com/oauth2/token",
		EnvAuthRegistrationRedirectURIs, " https://app.example.com/cb , https://claude.ai/api/mcp/auth_callback",
	}, kv...)...)
}

func TestLoadRegistrationConfig(t *testing.T) {
	c, err := LoadConfig(facadeEnv())
	if err != nil {
		t.Fatal(err)
	}
	want := &auth.Registration{ClientID: "4f1b2c3d5e6f7a8b9c0d",
		AuthorizationEndpoint: "https://auth.example.com/oauth2/authorize", TokenEndpoint: "https://auth.example.com/oauth2/token",
		RedirectURIs: []string{"https://app.example.com/cb", "https://claude.ai/api/mcp/auth_callback"}}
	if !reflect.DeepEqual(c.AuthRegistration, want) {
		t.Errorf("AuthRegistration = %+v\nwant %+v", c.AuthRegistration, want)
	}
	// Redirect URIs are optional (loopback ones are always accepted).
	c, err = LoadConfig(facadeEnv(EnvAuthRegistrationRedirectURIs, ""))
	if err != nil || c.AuthRegistration == nil || c.AuthRegistration.RedirectURIs != nil {
		t.Errorf("without redirect URIs: %+v, %v", c, err)
	}
	// Loopback http endpoints, for tests against a local provider.
	if _, err := LoadConfig(facadeEnv(EnvAuthAuthorizationEndpoint, "http://127.0.0.1:9999/authorize", EnvAuthTokenEndpoint, "http://localhost:9999/token")); err != nil {
		t.Errorf("loopback http endpoints: %v", err)
	}
	// Nothing set, no facade.
	c, err = LoadConfig(env(EnvAuthIssuer, "https://issuer.example.com"))
	if err != nil || c.AuthRegistration != nil {
		t.Errorf("no facade configured: %+v, %v", c.AuthRegistration, err)
	}

	tests := []struct {
		name string
		env  func(string) string
		want []string // the variables the error must name
	}{
		{"a client id without an issuer", facadeEnv(EnvAuthIssuer, ""), []string{EnvAuthRegistrationClientID, EnvAuthIssuer}},
		{"a client id alone: the provider's endpoints are missing", env(EnvAuthIssuer, "https://i.example.com", EnvAuthRegistrationClientID, "abc"),
			[]string{EnvAuthRegistrationClientID, EnvAuthAuthorizationEndpoint}},
		{"an authorization endpoint without the client id", env(EnvAuthIssuer, "https://i.example.com", EnvAuthAuthorizationEndpoint, "https://auth.example.com/authorize"),
			[]string{EnvAuthRegistrationClientID}},
		{"a token endpoint without the client id", env(EnvAuthIssuer, "https://i.example.com", EnvAuthTokenEndpoint, "https://auth.example.com/token"),
			[]string{EnvAuthRegistrationClientID}},
		{"redirect URIs without the client id", env(EnvAuthIssuer, "https://i.example.com", EnvAuthRegistrationRedirectURIs, "https://app.example.com/cb"),
			[]string{EnvAuthRegistrationClientID}},
		{"the provider's endpoints without the client id", facadeEnv(EnvAuthRegistrationClientID, ""), []string{EnvAuthRegistrationClientID}},
		{"no token endpoint", facadeEnv(EnvAuthTokenEndpoint, ""), []string{EnvAuthTokenEndpoint}},
		{"no authorization endpoint", facadeEnv(EnvAuthAuthorizationEndpoint, ""), []string{EnvAuthAuthorizationEndpoint}},
		{"an http authorization endpoint", facadeEnv(EnvAuthAuthorizationEndpoint, "http://auth.example.com/oauth2/authorize"), []string{EnvAuthAuthorizationEndpoint}},
		{"an http token endpoint", facadeEnv(EnvAuthTokenEndpoint, "http://auth.example.com/oauth2/token"), []string{EnvAuthTokenEndpoint}},
		{"a relative token endpoint", facadeEnv(EnvAuthTokenEndpoint, "/oauth2/token"), []string{EnvAuthTokenEndpoint}},
		{"a token endpoint with a fragment", facadeEnv(EnvAuthTokenEndpoint, "https://auth.example.com/oauth2/token#x"), []string{EnvAuthTokenEndpoint}},
		{"a redirect URI with a fragment", facadeEnv(EnvAuthRegistrationRedirectURIs, "https://app.example.com/cb#frag"), []string{EnvAuthRegistrationRedirectURIs}},
		{"a redirect URI with an empty fragment", facadeEnv(EnvAuthRegistrationRedirectURIs, "https://app.example.com/cb#"), []string{EnvAuthRegistrationRedirectURIs}},
		{"a relative redirect URI", facadeEnv(EnvAuthRegistrationRedirectURIs, "https://app.example.com/cb,/cb"), []string{EnvAuthRegistrationRedirectURIs}},
		{"a client id that is not one", facadeEnv(EnvAuthRegistrationClientID, "a b"), []string{EnvAuthRegistrationClientID}},
		{"the facade and anonymous access", facadeEnv(EnvAuthIssuer, "", EnvAllowAnonymous, "true"), []string{EnvAuthRegistrationClientID, EnvAuthIssuer}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadConfig(tt.env)
			if err == nil {
				t.Fatalf("loaded %+v", c.AuthRegistration)
			}
			for _, name := range tt.want {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("error %q does not name %s", err, name)
				}
			}
		})
	}
}

// TestNewServesTheFacade: an endpoint composed from a facade's
// configuration serves it: its protected-resource metadata names the
// endpoint as its authorization server, whose metadata names the
// provider's endpoints, and a registration is answered with the client.
func TestNewServesTheFacade(t *testing.T) {
	const mcp = "https://mcp.example.com/mcp"
	cfg, err := LoadConfig(facadeEnv())
	if err != nil {
		t.Fatal(err)
	}
	ep, err := New(cfg, Options{Implementation: stateless.Implementation{Name: "t", Version: "1"}, Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	resp := ep.Auth.ProtectedResourceMetadata(mcp)
	var prm struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal(resp.Body, &prm); err != nil || resp.Status != 200 || !reflect.DeepEqual(prm.AuthorizationServers, []string{mcp}) {
		t.Errorf("protected-resource metadata: %d %s", resp.Status, resp.Body)
	}
	resp = ep.Auth.AuthorizationServerMetadata(mcp)
	var asm struct {
		Issuer                string `json:"issuer"`
		AuthorizationEndpoint string `json:"authorization_endpoint"`
		TokenEndpoint         string `json:"token_endpoint"`
	}
	if err := json.Unmarshal(resp.Body, &asm); err != nil || resp.Status != 200 || asm.Issuer != mcp ||
		asm.AuthorizationEndpoint != "https://auth.example.com/oauth2/authorize" || asm.TokenEndpoint != "https://auth.example.com/oauth2/token" {
		t.Errorf("authorization server metadata: %d %s", resp.Status, resp.Body)
	}
	resp = ep.Auth.Register(mcp, []byte(`{"redirect_uris":["https://claude.ai/api/mcp/auth_callback"]}`))
	if resp.Status != 201 || !strings.Contains(string(resp.Body), `"client_id":"4f1b2c3d5e6f7a8b9c0d"`) {
		t.Errorf("a registration: %d %s", resp.Status, resp.Body)
	}

	// Without the facade the issuer is the authorization server, and
	// there is no facade to serve.
	cfg, err = LoadConfig(env(EnvAuthIssuer, "https://issuer.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	if ep, err = New(cfg, Options{Implementation: stateless.Implementation{Name: "t", Version: "1"}, Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	resp = ep.Auth.ProtectedResourceMetadata(mcp)
	if err := json.Unmarshal(resp.Body, &prm); err != nil || !reflect.DeepEqual(prm.AuthorizationServers, []string{"https://issuer.example.com"}) {
		t.Errorf("protected-resource metadata without a facade: %s", resp.Body)
	}
	if resp := ep.Auth.AuthorizationServerMetadata(mcp); resp.Status != 404 {
		t.Errorf("authorization server metadata without a facade: %d %s", resp.Status, resp.Body)
	}
}
