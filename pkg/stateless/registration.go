package stateless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
)

// Registration is the endpoint's registration facade, for clients that
// register themselves (OAuth 2.0 Dynamic Client Registration, RFC 7591)
// with a provider that offers no registration (Amazon Cognito, Microsoft
// Entra ID). With it the protected-resource metadata names the endpoint
// itself as its authorization server; the endpoint serves that server's
// metadata (RFC 8414), whose authorization and token endpoints are the
// provider's own, and a registration endpoint that answers every valid
// registration with one public client pre-registered at the provider.
//
// It grants nothing a client could not already have: the client id is
// public (every authorization URL shows it), the provider still
// authenticates the user, holds the client to the redirect URIs
// registered for it and issues the tokens, which are validated as
// before; PKCE (S256) binds each code to the client instance that asked
// for it. A registration asking for a redirect URI that is neither a
// loopback one (RFC 8252) nor one of RedirectURIs, for a confidential
// client, or for another grant is refused, so the facade never states a
// client the provider would not accept. docs/auth.md has the argument in
// full.
type Registration struct {
	// ClientID is the public client (no secret, PKCE) pre-registered at
	// the provider that every registration is answered with.
	ClientID string
	// AuthorizationEndpoint and TokenEndpoint are the provider's, which
	// the facade's metadata names.
	AuthorizationEndpoint, TokenEndpoint string
	// RedirectURIs are the redirect URIs accepted besides loopback ones
	// (http on 127.0.0.1, [::1] or localhost, any port and path), each
	// compared whole. Each must also be registered at the provider for
	// ClientID.
	RedirectURIs []string
}

// AuthorizationServerMetadataPath is where the facade's authorization
// server metadata is served: this path followed by the endpoint's path
// (RFC 8414's well-known URI for an issuer with a path; the issuer is
// the endpoint's canonical URL).
const AuthorizationServerMetadataPath = "/.well-known/oauth-authorization-server"

// RegistrationSuffix follows the endpoint's path in the facade's
// registration endpoint: POST /mcp/register.
const RegistrationSuffix = "/register"

// maxRegistration bounds a registration request's body: client metadata
// is a few hundred bytes.
const maxRegistration = 16 << 10

// AuthorizationServerMetadataURL returns the RFC 8414 well-known URL of
// the facade's metadata for the endpoint whose canonical URL is
// endpoint.
func AuthorizationServerMetadataURL(endpoint string) string {
	return wellKnownURL(endpoint, AuthorizationServerMetadataPath)
}

// authorizationServers are the issuers the protected-resource metadata of
// endpoint names: the endpoint itself when it has a registration facade.
func (a *AuthOptions) authorizationServers(endpoint string) []string {
	if a.Registration != nil {
		return []string{endpoint}
	}
	return a.AuthorizationServers
}

// AuthorizationServerMetadata answers a request for the registration
// facade's authorization server metadata (RFC 8414) of the endpoint whose
// canonical URL is endpoint: 404 when the endpoint has no facade.
func (s *Server) AuthorizationServerMetadata(endpoint string) *Response {
	reg := s.registration()
	if reg == nil || endpoint == "" {
		return oauthNotFound()
	}
	doc := struct {
		Issuer                            string   `json:"issuer"`
		AuthorizationEndpoint             string   `json:"authorization_endpoint"`
		TokenEndpoint                     string   `json:"token_endpoint"`
		RegistrationEndpoint              string   `json:"registration_endpoint"`
		ScopesSupported                   []string `json:"scopes_supported,omitempty"`
		ResponseTypesSupported            []string `json:"response_types_supported"`
		GrantTypesSupported               []string `json:"grant_types_supported"`
		TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
		CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	}{endpoint, reg.AuthorizationEndpoint, reg.TokenEndpoint, strings.TrimSuffix(endpoint, "/") + RegistrationSuffix,
		s.opts.Auth.ScopesSupported, []string{"code"}, registrableGrants, []string{"none"}, []string{"S256"}}
	b, _ := json.Marshal(doc) // strings and slices of strings: cannot fail
	return &Response{Status: http.StatusOK, Header: http.Header{
		"Content-Type":                {"application/json"},
		"Cache-Control":               {"public, max-age=300"},
		"Access-Control-Allow-Origin": {"*"},
	}, Body: b}
}

// registrableGrants are the grant types a registration may ask for.
var registrableGrants = []string{"authorization_code", "refresh_token"}

// clientMetadata is what a registration request may say (RFC 7591 section
// 2); members not named here are ignored, as the RFC allows.
type clientMetadata struct {
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod *string  `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
}

// errRegistration is a registration the facade refuses, with the RFC
// 7591 error code.
type errRegistration struct{ code, description string }

func (e *errRegistration) Error() string { return e.code + ": " + e.description }

// Register answers a client registration request (RFC 7591) to the
// facade of the endpoint whose canonical URL is endpoint: 201 with the
// pre-registered client's id and the metadata registered, or 400 with
// invalid_redirect_uri or invalid_client_metadata and a description
// that names the member at fault (never its value); 404 when the endpoint
// has no facade. Nothing is stored: every registration is answered alike.
func (s *Server) Register(endpoint string, body []byte) *Response {
	reg := s.registration()
	if reg == nil || endpoint == "" {
		return oauthNotFound()
	}
	md, err := reg.check(body)
	if err != nil {
		var e *errRegistration
		errors.As(err, &e)
		b, _ := json.Marshal(map[string]string{"error": e.code, "error_description": e.description})
		return &Response{Status: http.StatusBadRequest, Header: registrationHeader(), Body: b}
	}
	b, _ := json.Marshal(struct {
		ClientID                string   `json:"client_id"`
		RedirectURIs            []string `json:"redirect_uris"`
		TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
		GrantTypes              []string `json:"grant_types"`
		ResponseTypes           []string `json:"response_types"`
	}{reg.ClientID, md.RedirectURIs, "none", md.GrantTypes, md.ResponseTypes})
	return &Response{Status: http.StatusCreated, Header: registrationHeader(), Body: b}
}

// RegistrationPreflight answers a CORS preflight of the facade's
// registration endpoint (OPTIONS, with Origin and
// Access-Control-Request-Method) by the endpoint's own Origin rule
// (Options.AllowedOrigins and the loopback rule): an allowed origin is
// echoed, with POST, the one method the endpoint takes, and the requested
// headers the endpoint admits; a refused origin or another method gets
// the forbidden-origin refusal without Access-Control-* headers, so the
// browser never sends the registration. Another OPTIONS is answered 405,
// and an endpoint without a facade 404. It is reported as every answer
// is.
func (s *Server) RegistrationPreflight(ctx context.Context, r *Request) *Response {
	start := time.Now()
	o := &Outcome{}
	ctx = s.observing(ctx, r.Header, o)
	var resp *Response
	switch {
	case s.registration() == nil:
		resp = oauthNotFound()
	case !isPreflight(r):
		resp = &Response{Status: http.StatusMethodNotAllowed, Header: http.Header{"Content-Type": {"application/json"}, "Allow": {"OPTIONS, POST"}},
			Body: []byte(`{"error":"method_not_allowed"}`)}
	default:
		resp = preflightFor(s, r, o, registrationMethods, http.MethodPost)
	}
	s.reportSince(ctx, o, resp.Status, start)
	return resp
}

// registrationMethods are the methods the registration endpoint takes.
var registrationMethods = []string{http.MethodPost}

// ServeRegistrationPreflight serves the CORS preflight of the facade's
// registration endpoint (Server.RegistrationPreflight); mount it where
// ServeRegister is, for OPTIONS.
func (h *HTTPHandler) ServeRegistrationPreflight(w http.ResponseWriter, r *http.Request) {
	writeResponse(w, h.Server.RegistrationPreflight(r.Context(), &Request{Method: r.Method, Header: r.Header, Host: r.Host, Endpoint: h.Endpoint}))
}

// check reads and validates a registration request.
func (reg *Registration) check(body []byte) (*clientMetadata, error) {
	if len(body) > maxRegistration {
		return nil, &errRegistration{"invalid_client_metadata", fmt.Sprintf("the request is over %d bytes", maxRegistration)}
	}
	var md clientMetadata
	if err := jsonv2.Unmarshal(body, &md); err != nil {
		return nil, &errRegistration{"invalid_client_metadata", "the request is not a JSON object of client metadata (RFC 7591 section 2)"}
	}
	if len(md.RedirectURIs) == 0 {
		return nil, &errRegistration{"invalid_redirect_uri", "redirect_uris is missing: the authorization code grant needs one"}
	}
	for i, u := range md.RedirectURIs {
		if !reg.acceptsRedirect(u) {
			return nil, &errRegistration{"invalid_redirect_uri", fmt.Sprintf("redirect_uris[%d] is neither a loopback URI (http://127.0.0.1, http://[::1] or http://localhost, any port) nor one this endpoint accepts", i)}
		}
	}
	if m := md.TokenEndpointAuthMethod; m != nil && *m != "none" {
		return nil, &errRegistration{"invalid_client_metadata", `token_endpoint_auth_method: this endpoint registers public clients only ("none"), which prove themselves with PKCE`}
	}
	if md.GrantTypes == nil {
		md.GrantTypes = []string{"authorization_code"}
	}
	for _, g := range md.GrantTypes {
		if !slices.Contains(registrableGrants, g) {
			return nil, &errRegistration{"invalid_client_metadata", "grant_types: only authorization_code and refresh_token are registered"}
		}
	}
	if !slices.Contains(md.GrantTypes, "authorization_code") {
		return nil, &errRegistration{"invalid_client_metadata", "grant_types: the client registered is one of the authorization code grant, which grant_types must name"}
	}
	if md.ResponseTypes == nil {
		md.ResponseTypes = []string{"code"}
	}
	if len(md.ResponseTypes) == 0 {
		return nil, &errRegistration{"invalid_client_metadata", `response_types: the authorization code grant needs "code"`}
	}
	for _, r := range md.ResponseTypes {
		if r != "code" {
			return nil, &errRegistration{"invalid_client_metadata", `response_types: only "code" is registered`}
		}
	}
	return &md, nil
}

// acceptsRedirect reports whether the facade accepts redirect URI raw: a
// loopback URI on http without a fragment (RFC 8252 section 7.3: any
// port, any path), or one of RedirectURIs exactly.
func (reg *Registration) acceptsRedirect(raw string) bool {
	if slices.Contains(reg.RedirectURIs, raw) {
		return true
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || strings.Contains(raw, "#") || u.User != nil || u.Opaque != "" {
		return false
	}
	h := strings.ToLower(u.Hostname())
	return (h == "localhost" || h == "127.0.0.1" || h == "::1") && isLoopbackHost(u.Host)
}

func (s *Server) registration() *Registration {
	if s.opts.Auth == nil {
		return nil
	}
	return s.opts.Auth.Registration
}

func registrationHeader() http.Header {
	return http.Header{
		"Content-Type":                {"application/json"},
		"Cache-Control":               {"no-store"},
		"Access-Control-Allow-Origin": {"*"},
	}
}

func oauthNotFound() *Response {
	return &Response{Status: http.StatusNotFound, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"error":"not_found"}`)}
}
