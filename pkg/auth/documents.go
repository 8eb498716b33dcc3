package auth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// The Methods the answers of the documents are reported with
// (stateless.Outcome.Method, with OwnMethod): names of the endpoint's
// own, one per document, which no MCP request carries, so that a request
// line and the Method metric tell them apart. The peer's path is never
// one.
const (
	// MethodProtectedResourceMetadata: a GET of the protected-resource
	// metadata (RFC 9728).
	MethodProtectedResourceMetadata = "oauth/protected-resource-metadata"
	// MethodAuthorizationServerMetadata: a GET of the registration
	// facade's authorization server metadata (RFC 8414).
	MethodAuthorizationServerMetadata = "oauth/authorization-server-metadata"
	// MethodRegister: a POST to the facade's registration endpoint (RFC
	// 7591).
	MethodRegister = "oauth/register"
	// MethodRegisterPreflight: an OPTIONS of the registration endpoint, a
	// browser's CORS preflight of the POST.
	MethodRegisterPreflight = "oauth/register-preflight"
	// MethodAuthorize: a GET of the proxy's authorization endpoint (an
	// authorization request: the consent page, or the way to the
	// provider).
	MethodAuthorize = "oauth/authorize"
	// MethodConsent: a POST of the consent page's form.
	MethodConsent = "oauth/consent"
	// MethodCallback: a GET of the proxy's callback, the provider's
	// answer.
	MethodCallback = "oauth/callback"
	// MethodToken: a POST to the proxy's token endpoint.
	MethodToken = "oauth/token"
	// MethodTokenPreflight: an OPTIONS of the token endpoint, a browser's
	// CORS preflight of the POST.
	MethodTokenPreflight = "oauth/token-preflight"
)

// DefaultEndpointPath is the endpoint's path when a request for a
// well-known document does not name one (the template routes the
// endpoint at /mcp), and the path the registration endpoint follows.
const DefaultEndpointPath = "/mcp"

// Documents is the routing table of the endpoint's OAuth documents, the
// one both doors call before they hand a request to the MCP endpoint
// (package runner's local HTTP server through [Documents.Handler],
// package apigw's Lambda handler through [Documents.Serve]):
//
//	GET     [prefix]/.well-known/oauth-protected-resource[/endpoint path]    the protected-resource metadata (RFC 9728)
//	GET     [prefix]/.well-known/oauth-authorization-server[/endpoint path]  the facade's authorization server metadata (RFC 8414)
//	POST    [prefix]/mcp/register                                            a registration (RFC 7591)
//	OPTIONS [prefix]/mcp/register                                            the registration's CORS preflight
//
// where prefix is a stage's (an API Gateway REST API's invoke URL) and
// the endpoint's path is DefaultEndpointPath when none follows. Every
// answer, a refusal or an absent document included, leaves through one
// exit that reports it as an MCP answer is reported (the server's
// Options.Observe, and the log line of a refusal): an Outcome whose Method
// names the document (MethodProtectedResourceMetadata, ...), with the
// status, the duration and, for a refusal, its kind ("not_found",
// "method_not_allowed", the RFC 7591 error, the preflight's
// "forbidden_origin").
//
// The metadata and the registration's answers may be read by any origin
// (Access-Control-Allow-Origin: *): they are public, and the same for
// everyone. The registration's preflight is answered by the endpoint's
// own Origin rule (stateless.Server.Preflight), so a page on an origin
// the endpoint refuses never sends the registration.
type Documents struct {
	// Server, which must be set, is the endpoint's server: it reports
	// every answer, and its Origin rule answers the registration's
	// preflight.
	Server *stateless.Server
	// Resource is what the documents say. nil is an endpoint without
	// authorization, whose documents are absent: 404, reported.
	Resource *Resource
}

// EndpointLocator names endpoints as a door establishes them.
type EndpointLocator interface {
	// EndpointAt returns the canonical URL of the endpoint at path (a
	// stage's prefix and the endpoint's own path), or "" when it cannot
	// say.
	EndpointAt(path string) string
}

// document is a route of the table.
type document uint8

const (
	noDocument document = iota
	protectedResourceMetadata
	authorizationServerMetadata
	register
	registerPreflight
	authorize
	consentForm
	callback
	token
	tokenPreflight
)

// methods are the documents' reported Methods.
var methods = [...]string{
	protectedResourceMetadata:   MethodProtectedResourceMetadata,
	authorizationServerMetadata: MethodAuthorizationServerMetadata,
	register:                    MethodRegister,
	registerPreflight:           MethodRegisterPreflight,
	authorize:                   MethodAuthorize,
	consentForm:                 MethodConsent,
	callback:                    MethodCallback,
	token:                       MethodToken,
	tokenPreflight:              MethodTokenPreflight,
}

// proxyRoutes are the proxy's documents by the suffix after the
// endpoint's path and the method.
var proxyRoutes = []struct {
	suffix, method string
	doc            document
}{
	{AuthorizeSuffix, http.MethodGet, authorize},
	{AuthorizeSuffix, http.MethodPost, consentForm},
	{CallbackSuffix, http.MethodGet, callback},
	{TokenSuffix, http.MethodPost, token},
	{TokenSuffix, http.MethodOptions, tokenPreflight},
}

// route finds the document a request asks for by its method and path, and
// the path of the endpoint it is about: for a well-known document, the
// prefix before the well-known segment and the path after it
// (DefaultEndpointPath when nothing follows); for the registration
// endpoint, the path before RegistrationSuffix.
func route(method, path string) (document, string) {
	switch method {
	case http.MethodGet:
		if p, ok := wellKnownPath(path, MetadataPath); ok {
			return protectedResourceMetadata, p
		}
		if p, ok := wellKnownPath(path, AuthorizationServerMetadataPath); ok {
			return authorizationServerMetadata, p
		}
	case http.MethodPost, http.MethodOptions:
		p, ok := strings.CutSuffix(path, RegistrationSuffix)
		if !ok || !strings.HasSuffix(p, DefaultEndpointPath) {
			break
		}
		if method == http.MethodPost {
			return register, p
		}
		return registerPreflight, p
	}
	for _, r := range proxyRoutes {
		if p, ok := strings.CutSuffix(path, r.suffix); ok && r.method == method && strings.HasSuffix(p, DefaultEndpointPath) {
			return r.doc, p
		}
	}
	return noDocument, ""
}

// readsBody reports whether doc's request has a body the door reads (up
// to maxBody).
func (doc document) readsBody() (maxBody int64, ok bool) {
	switch doc {
	case register:
		return MaxRegistrationBytes, true
	case consentForm, token:
		return MaxProxyFormBytes, true
	}
	return 0, false
}

// wellKnownPath finds the well-known path wk in path, on its own or
// followed by the endpoint's path, after a stage's prefix if any, and
// returns the endpoint's path it names: the prefix and the endpoint's
// path (DefaultEndpointPath when none follows).
func wellKnownPath(path, wk string) (string, bool) {
	i := strings.Index(path, wk)
	if i < 0 {
		return "", false
	}
	prefix, rest := path[:i], path[i+len(wk):]
	if rest != "" && rest[0] != '/' {
		return "", false
	}
	if rest == "" || rest == "/" {
		rest = DefaultEndpointPath
	}
	return prefix + rest, true
}

// Serve answers r, a request a door read, when it asks for one of the
// documents, and reports the answer; ok is false for any other request,
// which the door serves as an MCP request (nothing is reported then), and
// for every request when d is nil. path is the path r was sent to, with a
// stage's prefix (API Gateway's request context path, the local server's
// URL path); endpoint, the canonical URL of the endpoint the documents
// describe when the door knows it (configured, or the local server's),
// whatever the path names; else at, when set, names the endpoint at the
// path the request names as the door establishes it (an apigw.Request
// names it from API Gateway's domain name, never the Host header: an
// EndpointLocator). Without either the documents are absent. The
// parameters are plain types so that a door takes a Documents as an
// interface of its own, and links nothing of this package.
func (d *Documents) Serve(ctx context.Context, r *stateless.Request, path, endpoint string, at interface{ EndpointAt(path string) string }) (resp *stateless.Response, ok bool) {
	if d == nil {
		return nil, false
	}
	doc, path := route(r.Method, path)
	if doc == noDocument {
		return nil, false
	}
	start := time.Now()
	if endpoint == "" && at != nil {
		endpoint = at.EndpointAt(path)
	}
	o := &stateless.Outcome{Method: methods[doc], OwnMethod: true}
	res := d.Resource
	switch doc {
	case protectedResourceMetadata:
		resp = res.ProtectedResourceMetadata(endpoint)
	case authorizationServerMetadata:
		resp = res.AuthorizationServerMetadata(endpoint)
	case register:
		var err error
		if resp, err = res.register(endpoint, r.Body); err != nil {
			var e *errRegistration
			if errors.As(err, &e) {
				o.Kind = e.code
			}
			o.Err = err
		}
	case registerPreflight, tokenPreflight:
		switch {
		case doc == registerPreflight && res.registration() == nil, doc == tokenPreflight && res.proxy() == nil:
			resp = notFound()
		case !isPreflight(r):
			resp = &stateless.Response{Status: http.StatusMethodNotAllowed,
				Header: http.Header{"Content-Type": {"application/json"}, "Allow": {"OPTIONS, POST"}},
				Body:   []byte(`{"error":"method_not_allowed"}`)}
			o.Kind = "method_not_allowed"
		default:
			resp = d.Server.Preflight(r, o, http.MethodPost)
		}
	default:
		resp = d.serveProxy(ctx, r, doc, endpoint, o)
	}
	if resp.Status == http.StatusNotFound {
		o.Kind = "not_found"
	}
	d.Server.Answered(ctx, r, resp, o, start)
	return resp, true
}

// isPreflight reports whether r is a CORS preflight: an OPTIONS request
// from a browser page (it has an Origin) that names the method it means
// to send. Any other OPTIONS of the registration endpoint is answered
// 405.
func isPreflight(r *stateless.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != ""
}

// Handler serves the documents over net/http for the endpoint whose
// canonical URL is endpoint, whatever path a request names: package
// runner's local server mounts it beside the MCP endpoint. A request for
// none of them is 404, unreported (it is no answer of the endpoint's). A
// registration's body is read up to one byte past MaxRegistrationBytes,
// so that a longer one is refused as one, not cut.
func (d *Documents) Handler(endpoint string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		doc, _ := route(hr.Method, hr.URL.Path)
		if doc == noDocument {
			http.NotFound(w, hr)
			return
		}
		r := &stateless.Request{Method: hr.Method, Header: hr.Header, Host: hr.Host, Endpoint: endpoint, Query: hr.URL.RawQuery}
		if max, ok := doc.readsBody(); ok {
			body, err := io.ReadAll(io.LimitReader(hr.Body, max+1))
			if err == nil {
				r.Body = body // else no body arrived: an empty one
			}
		}
		resp, ok := d.Serve(hr.Context(), r, hr.URL.Path, endpoint, nil)
		if !ok { // a nil d serves no document
			http.NotFound(w, hr)
			return
		}
		h := w.Header()
		for k, v := range resp.Header {
			h[k] = v
		}
		w.WriteHeader(resp.Status)
		_, _ = w.Write(resp.Body)
	})
}

// proxy is the authorization proxy, or nil (a nil Resource has none).
func (res *Resource) proxy() *Proxy {
	if res == nil {
		return nil
	}
	return res.Proxy
}

// serveProxy answers a request for one of the proxy's documents (404
// without a proxy, or without an endpoint to speak for), noting its
// refusal's kind and reason in o.
func (d *Documents) serveProxy(ctx context.Context, r *stateless.Request, doc document, endpoint string, o *stateless.Outcome) *stateless.Response {
	p := d.Resource.proxy()
	if p == nil || endpoint == "" {
		return notFound()
	}
	query, err := url.ParseQuery(r.Query)
	if err != nil {
		query = nil
	}
	var a proxyAnswer
	switch {
	case doc == authorize && query == nil, doc == callback && query == nil:
		a = refusedPage(http.StatusBadRequest, "invalid_request", &errClient{"the query is not well formed"})
	case doc == authorize:
		a = p.authorize(ctx, r, endpoint, query)
	case doc == consentForm:
		a = p.consent(ctx, r, endpoint)
	case doc == callback:
		a = p.callback(ctx, r, endpoint, query)
	case doc == token:
		a = p.token(ctx, r, endpoint)
		if a.resp.Header.Get("Access-Control-Allow-Origin") == "" {
			// A browser-based client reads the token answer: CORS as the
			// endpoint's Origin rule allows (its preflight is answered so).
			d.Server.AllowOrigin(r, a.resp)
		}
	}
	o.Kind, o.Err = a.kind, a.err
	return a.resp
}
