package auth

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// MetadataPath is where the protected-resource metadata (RFC 9728) is
// served: at this path (for clients that ask the origin) and at this path
// followed by the endpoint's path (RFC 9728's well-known URI for the
// endpoint).
const MetadataPath = "/.well-known/oauth-protected-resource"

// MetadataURL returns the RFC 9728 well-known URL of the metadata of the
// resource whose canonical URL is endpoint: the well-known segment goes
// between the origin and the endpoint's path. Every challenge names it.
func MetadataURL(endpoint string) string { return wellKnownURL(endpoint, MetadataPath) }

// wellKnownURL is the well-known URL wk for the resource or issuer whose
// URL is endpoint (RFC 9728, RFC 8414): the well-known segment between
// the origin and the path; "" for a URL without a host.
func wellKnownURL(endpoint, wk string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + wk + strings.TrimSuffix(u.EscapedPath(), "/")
}

// ProtectedResourceMetadata is the protected-resource metadata (RFC 9728)
// of the endpoint whose canonical URL is endpoint: the answer to its GET.
// It is public and the same for everyone, so any origin may read it. A
// nil Resource (an endpoint without authorization) has none: 404.
// [Documents] serves it, and reports it.
func (res *Resource) ProtectedResourceMetadata(endpoint string) *stateless.Response {
	if res == nil || endpoint == "" {
		return notFound()
	}
	doc := struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers"`
		ScopesSupported        []string `json:"scopes_supported,omitempty"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
		ResourceName           string   `json:"resource_name,omitempty"`
	}{endpoint, res.authorizationServers(endpoint), res.ScopesSupported, []string{"header"}, res.ResourceName}
	b, _ := json.Marshal(doc) // strings and slices of strings: cannot fail
	return publicDocument(b)
}

// authorizationServers are the issuers the protected-resource metadata of
// endpoint names: the endpoint itself when it has a registration facade.
func (res *Resource) authorizationServers(endpoint string) []string {
	if res.Registration != nil || res.Proxy != nil {
		return []string{endpoint}
	}
	return res.AuthorizationServers
}

// publicDocument is a 200 answer of a metadata document: the same for
// everyone, so cached and readable by any origin.
func publicDocument(b []byte) *stateless.Response {
	return &stateless.Response{Status: http.StatusOK, Header: http.Header{
		"Content-Type":                {"application/json"},
		"Cache-Control":               {"public, max-age=300"},
		"Access-Control-Allow-Origin": {"*"},
	}, Body: b}
}

// notFound is the answer for a document the endpoint does not have.
func notFound() *stateless.Response {
	return &stateless.Response{Status: http.StatusNotFound, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"error":"not_found"}`)}
}
