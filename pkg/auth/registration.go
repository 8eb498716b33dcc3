package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
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

// MaxRegistrationBytes bounds a registration request's body: client
// metadata is a few hundred bytes. A longer body is refused
// invalid_client_metadata; a door reads no more than one byte beyond it.
const MaxRegistrationBytes = 16 << 10

// AuthorizationServerMetadataURL returns the RFC 8414 well-known URL of
// the facade's metadata for the endpoint whose canonical URL is
// endpoint.
func AuthorizationServerMetadataURL(endpoint string) string {
	return wellKnownURL(endpoint, AuthorizationServerMetadataPath)
}

// registration is the facade, or nil (a nil Resource has none). With a
// proxy it is the proxy's registration: the same checks, the redirect
// URIs the proxy accepts.
func (res *Resource) registration() *Registration {
	switch {
	case res == nil:
		return nil
	case res.Proxy != nil:
		return &Registration{ClientID: res.Proxy.ClientID, AuthorizationEndpoint: res.Proxy.AuthorizationEndpoint,
			TokenEndpoint: res.Proxy.TokenEndpoint, RedirectURIs: res.Proxy.RedirectURIs}
	}
	return res.Registration
}

// AuthorizationServerMetadata is the registration facade's authorization
// server metadata (RFC 8414) of the endpoint whose canonical URL is
// endpoint: the answer to its GET; 404 when the endpoint has no facade.
// [Documents] serves it, and reports it.
func (res *Resource) AuthorizationServerMetadata(endpoint string) *stateless.Response {
	reg := res.registration()
	if reg == nil || endpoint == "" {
		return notFound()
	}
	base := strings.TrimSuffix(endpoint, "/")
	authz, token := reg.AuthorizationEndpoint, reg.TokenEndpoint
	if res.Proxy != nil {
		authz, token = base+AuthorizeSuffix, base+TokenSuffix
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
		// The proxy's: it takes client ID metadata documents, and its
		// authorization responses name it (RFC 9207).
		ClientIDMetadataDocumentSupported bool `json:"client_id_metadata_document_supported,omitempty"`
		IssParameterSupported             bool `json:"authorization_response_iss_parameter_supported,omitempty"`
	}{endpoint, authz, token, base + RegistrationSuffix,
		res.ScopesSupported, []string{"code"}, registrableGrants, []string{"none"}, []string{"S256"}, res.Proxy != nil, res.Proxy != nil}
	b, _ := json.Marshal(doc) // strings and slices of strings: cannot fail
	return publicDocument(b)
}

// registrableGrants are the grant types a registration may ask for.
var registrableGrants = []string{"authorization_code", "refresh_token"}

// clientMetadata is what a registration request may say (RFC 7591 section
// 2); members not named here are ignored, as the RFC allows.
type clientMetadata struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	TokenEndpointAuthMethod *string  `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
}

// errRegistration is a registration the facade refuses: code is the RFC
// 7591 error (invalid_redirect_uri, invalid_client_metadata) and
// description names the member at fault, never its value.
type errRegistration struct{ code, description string }

func (e *errRegistration) Error() string {
	return "auth: registration refused: " + e.code + ": " + e.description
}

// Register answers a client registration request (RFC 7591) to the
// facade of the endpoint whose canonical URL is endpoint: 201 with the
// pre-registered client's id and the metadata registered, or 400 with
// invalid_redirect_uri or invalid_client_metadata and a description that
// names the member at fault (never its value); 404 when the endpoint has
// no facade. Nothing is stored: every registration is answered alike.
// [Documents] serves it, and reports it.
func (res *Resource) Register(endpoint string, body []byte) *stateless.Response {
	resp, _ := res.register(endpoint, body)
	return resp
}

// register is Register with the refusal's reason, a *errRegistration,
// for the report.
func (res *Resource) register(endpoint string, body []byte) (*stateless.Response, error) {
	reg := res.registration()
	if reg == nil || endpoint == "" {
		return notFound(), nil
	}
	md, err := reg.check(body)
	if err != nil {
		var e *errRegistration
		errors.As(err, &e)
		b, _ := json.Marshal(map[string]string{"error": e.code, "error_description": e.description})
		return &stateless.Response{Status: http.StatusBadRequest, Header: registrationHeader(), Body: b}, err
	}
	clientID := reg.ClientID
	if res.Proxy != nil {
		// The proxy's clients are their own: the id declares the
		// registration, checked again at each authorization request.
		clientID = encodeRegistered(registered{RedirectURIs: md.RedirectURIs, Name: md.ClientName})
	}
	b, _ := json.Marshal(struct {
		ClientID                string   `json:"client_id"`
		ClientName              string   `json:"client_name,omitempty"`
		RedirectURIs            []string `json:"redirect_uris"`
		TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
		GrantTypes              []string `json:"grant_types"`
		ResponseTypes           []string `json:"response_types"`
	}{clientID, md.ClientName, md.RedirectURIs, "none", md.GrantTypes, md.ResponseTypes})
	return &stateless.Response{Status: http.StatusCreated, Header: registrationHeader(), Body: b}, nil
}

// check reads and validates a registration request.
func (reg *Registration) check(body []byte) (*clientMetadata, error) {
	if len(body) > MaxRegistrationBytes {
		return nil, &errRegistration{"invalid_client_metadata", fmt.Sprintf("the request is over %d bytes", MaxRegistrationBytes)}
	}
	var md clientMetadata
	if err := jsonv2.Unmarshal(body, &md); err != nil {
		return nil, &errRegistration{"invalid_client_metadata", "the request is not a JSON object of client metadata (RFC 7591 section 2)"}
	}
	if len(md.RedirectURIs) == 0 {
		return nil, &errRegistration{"invalid_redirect_uri", "redirect_uris is missing: the authorization code grant needs one"}
	}
	if len(md.RedirectURIs) > maxRedirects {
		return nil, &errRegistration{"invalid_redirect_uri", fmt.Sprintf("redirect_uris: at most %d are registered", maxRedirects)}
	}
	if len(md.ClientName) > maxClientName {
		return nil, &errRegistration{"invalid_client_metadata", fmt.Sprintf("client_name: at most %d bytes", maxClientName)}
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

// acceptsRedirect reports whether the facade accepts redirect URI raw
// (see acceptsRedirect).
func (reg *Registration) acceptsRedirect(raw string) bool {
	return acceptsRedirect(reg.RedirectURIs, raw)
}

// acceptsRedirect reports whether a registration may declare redirect URI
// raw: a loopback URI on http without a fragment (RFC 8252 section 7.3:
// any port, any path), or one of allowed exactly.
func acceptsRedirect(allowed []string, raw string) bool {
	if slices.Contains(allowed, raw) {
		return true
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || strings.Contains(raw, "#") || u.User != nil || u.Opaque != "" {
		return false
	}
	switch strings.ToLower(u.Hostname()) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

func registrationHeader() http.Header {
	return http.Header{
		"Content-Type":                {"application/json"},
		"Cache-Control":               {"no-store"},
		"Access-Control-Allow-Origin": {"*"},
	}
}
