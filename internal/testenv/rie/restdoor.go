package rie

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/runtimeapi"
	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
)

// REST is what the template deploys on its REST door beyond what every
// REST API does (the zero value: the invoke URL, no authorizer, no
// metadata).
type REST struct {
	// Domain says the stage is mapped at the root of a custom domain (the
	// template's StreamingCertificateArn): paths carry no stage, so RFC
	// 9728's well-known URLs are routable.
	Domain bool
	// Metadata, if set, is the document API Gateway's mock integrations
	// answer at the well-known URLs (TemplateMetadata), without invoking
	// the function.
	Metadata []byte
	// ASMetadata, if set, is the registration facade's authorization
	// server metadata that a mock integration answers at
	// /.well-known/oauth-authorization-server/mcp
	// (TemplateAuthorizationServerMetadata), and POST /mcp/register and
	// its CORS preflight go to the function outside the authorizer
	// (StreamRegisterMethod, StreamRegisterPreflightMethod).
	ASMetadata []byte
	// Proxy says the authorization proxy is on (the template's
	// AuthProxy): its authorization server metadata, its authorization
	// endpoint (GET and POST /mcp/authorize), its callback (GET
	// /mcp/callback), its token endpoint (POST and OPTIONS /mcp/token)
	// and the registration go to the function outside the authorizer
	// (the template's StreamProxy* methods); ASMetadata is unused.
	Proxy bool
	// Authorizer, if set, puts a Lambda REQUEST authorizer with caching
	// off in front of /mcp, and answers its refusals with these gateway
	// responses (TemplateGatewayResponses).
	Authorizer GatewayResponses
	// AuthorizerFunction, if set, is the function the authorizer invokes:
	// the template's StreamAuthorizerFunction, the same binary as a
	// function of its own, whose failed invocations (every refused token)
	// are its own. Unset: the door's function itself.
	AuthorizerFunction Invoker
}

// GatewayResponse is a REST API's gateway response (API Gateway developer
// guide, "Gateway responses in API Gateway"): its status, the headers its
// parameter mappings set (static values: API Gateway sets them itself,
// so no renaming applies), and a body template in which $context
// variables are substituted.
type GatewayResponse struct {
	Status  int
	Headers map[string]string
	Body    string
}

// GatewayResponses are a REST API's gateway responses, by response type
// (UNAUTHORIZED, ACCESS_DENIED, AUTHORIZER_CONFIGURATION_ERROR, ...).
type GatewayResponses map[string]GatewayResponse

// defaultGatewayResponses are API Gateway's own for the types an
// authorizer meets ("Gateway response types": 401, 403, 500), with its
// {"message": ...} body.
var defaultGatewayResponses = GatewayResponses{
	"UNAUTHORIZED":                   {Status: http.StatusUnauthorized, Body: `{"message":"Unauthorized"}`},
	"ACCESS_DENIED":                  {Status: http.StatusForbidden, Body: `{"message":"User is not authorized to access this resource with an explicit deny"}`},
	"AUTHORIZER_CONFIGURATION_ERROR": {Status: http.StatusInternalServerError, Body: `{"message":null}`},
}

// TemplateMetadata is the protected-resource metadata document the
// template's mock integrations answer (StreamMetadataMethod), for the
// endpoint resource, the authorization server it names (the issuer, or
// the endpoint itself with the registration facade) and the scopes
// (AuthScopesSupported). The template test in deploy/ holds the template
// to this text.
func TemplateMetadata(resource, authServer string, scopes []string) []byte {
	return []byte(`{"resource":"` + resource + `","authorization_servers":["` + authServer + `"],"scopes_supported":["` +
		strings.Join(scopes, `","`) + `"],"bearer_methods_supported":["header"]}`)
}

// TemplateAuthorizationServerMetadata is the registration facade's
// authorization server metadata the template's mock integration answers
// on the streaming door (StreamASMetadataMcpMethod), for the endpoint,
// the provider's authorization and token endpoints and the scopes. The
// template test holds the template to this text, and this package's
// tests hold it to what the function serves on the other doors.
func TemplateAuthorizationServerMetadata(endpoint, authorizationEndpoint, tokenEndpoint string, scopes []string) []byte {
	return []byte(`{"issuer":"` + endpoint + `","authorization_endpoint":"` + authorizationEndpoint + `","token_endpoint":"` + tokenEndpoint +
		`","registration_endpoint":"` + endpoint + `/register","scopes_supported":["` + strings.Join(scopes, `","`) +
		`"],"response_types_supported":["code"],"grant_types_supported":["authorization_code","refresh_token"],` +
		`"token_endpoint_auth_methods_supported":["none"],"code_challenge_methods_supported":["S256"]}`)
}

// TemplateGatewayResponses are the gateway responses the template gives
// the REST door when an issuer protects it, for the endpoint's metadata
// URL and the scopes its 403 asks a client to step up to
// (AuthStepUpScopes): the challenges API Gateway itself sends, since the
// function's WWW-Authenticate does not survive a REST API. The template
// test in deploy/ holds the template to these.
func TemplateGatewayResponses(metadataURL string, stepUpScopes []string) GatewayResponses {
	const jsonType = "application/json"
	// Which of the two a failed authorizer function gets is not said:
	// both answer that a retry can succeed.
	retry := GatewayResponse{Status: http.StatusServiceUnavailable, Headers: map[string]string{"Retry-After": "1", "Content-Type": jsonType},
		Body: `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"The token could not be checked: retry","data":{"type":"dependency_failure","retryable":true}}}`}
	return GatewayResponses{
		"UNAUTHORIZED": {Status: http.StatusUnauthorized, Headers: map[string]string{
			"WWW-Authenticate": `Bearer resource_metadata="` + metadataURL + `"`, "Content-Type": jsonType},
			Body: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Unauthorized"}}`},
		"ACCESS_DENIED": {Status: http.StatusForbidden, Headers: map[string]string{
			"WWW-Authenticate": `Bearer error="insufficient_scope", scope="` + strings.Join(stepUpScopes, " ") + `", resource_metadata="` + metadataURL + `"`,
			"Content-Type":     jsonType},
			Body: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Insufficient scope","data":{"type":"insufficient_scope","requiredScopes":"$context.authorizer.requiredScopes"}}}`},
		"AUTHORIZER_CONFIGURATION_ERROR": retry,
		"AUTHORIZER_FAILURE":             retry,
	}
}

// restRoute is where a request to the REST door goes.
type restRoute int

const (
	routeNone       restRoute = iota // no resource: 403 Missing Authentication Token
	routeFunction                    // /mcp, the function's integration
	routeMetadata                    // a well-known URL's mock integration
	routeASMetadata                  // the facade's metadata, a mock integration
	routeRegister                    // POST and OPTIONS /mcp/register (and the proxy's resources), the function outside the authorizer
)

// route finds the resource of a request path: with the stage first on an
// invoke URL, at the root of a custom domain.
func (rest REST) route(r *http.Request) (path string, to restRoute) {
	path = r.URL.Path
	if !rest.Domain {
		rest, inStage := strings.CutPrefix(path, "/"+RESTStage+"/")
		if !inStage {
			return "", routeNone
		}
		path = "/" + rest
	}
	switch {
	case path == restResource:
		return path, routeFunction
	case rest.Metadata != nil && r.Method == http.MethodGet && (path == auth.MetadataPath || path == auth.MetadataPath+restResource):
		return path, routeMetadata
	case rest.ASMetadata != nil && r.Method == http.MethodGet && path == auth.AuthorizationServerMetadataPath+restResource:
		return path, routeASMetadata
	case rest.Proxy && proxyRoute(r.Method, path):
		return path, routeRegister
	case rest.ASMetadata != nil && (r.Method == http.MethodPost || r.Method == http.MethodOptions) && path == restResource+auth.RegistrationSuffix:
		return path, routeRegister
	}
	return "", routeNone
}

// proxyRoute reports whether a request is one of the authorization
// proxy's resources, which the template routes to the function outside
// the authorizer.
func proxyRoute(method, path string) bool {
	switch path {
	case auth.AuthorizationServerMetadataPath + restResource:
		return method == http.MethodGet
	case restResource + auth.AuthorizeSuffix:
		return method == http.MethodGet || method == http.MethodPost
	case restResource + auth.CallbackSuffix:
		return method == http.MethodGet
	case restResource + auth.TokenSuffix, restResource + auth.RegistrationSuffix:
		return method == http.MethodPost || method == http.MethodOptions
	}
	return false
}

// write answers with the gateway response of type typ (or API Gateway's
// default for it), substituting $context.authorizer.<key> from facts.
func (g GatewayResponses) write(w http.ResponseWriter, typ string, facts map[string]string) {
	resp, ok := g[typ]
	if !ok {
		resp = defaultGatewayResponses[typ]
	}
	body := resp.Body
	for k, v := range facts {
		body = strings.ReplaceAll(body, "$context.authorizer."+k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(resp.Status)
	w.Write([]byte(body))
}

// authorizerEvent is a REST API's Lambda REQUEST authorizer event (API
// Gateway developer guide, "Input to an API Gateway Lambda authorizer"):
// the request's headers and no body.
type authorizerEvent struct {
	Type      string `json:"type"`
	MethodArn string `json:"methodArn"`
	v1Request
}

// authorizerAnswer is an authorizer's output, or a failed invocation's
// error.
type authorizerAnswer struct {
	ErrorMessage   *string `json:"errorMessage"`
	PrincipalID    string  `json:"principalId"`
	PolicyDocument struct {
		Statement []struct {
			Action   any    `json:"Action"`
			Effect   string `json:"Effect"`
			Resource any    `json:"Resource"`
		} `json:"Statement"`
	} `json:"policyDocument"`
	Context map[string]any `json:"context"`
}

// restMethodArn is the ARN of the method a REST door request invokes.
func restMethodArn(method string) string {
	return "arn:aws:execute-api:us-east-1:123456789012:front/" + RESTStage + "/" + method + restResource
}

// authorize runs the REST door's Lambda authorizer for a request to /mcp,
// as API Gateway does: with no Authorization header, 401 without
// invoking it (the identity source is missing); the invocation's error
// "Unauthorized" is 401, any other error or an answer that is no policy
// is 500, a policy that does not allow the method is 403, each answered
// with the gateway responses. It returns the principal for the request
// context.
func (rest REST) authorize(ctx context.Context, w http.ResponseWriter, r *http.Request, path string, invoke func(context.Context, []byte) ([]byte, error)) (string, bool) {
	if r.Header.Get("Authorization") == "" {
		rest.Authorizer.write(w, "UNAUTHORIZED", nil)
		return "", false
	}
	ev := authorizerEvent{Type: "REQUEST", MethodArn: restMethodArn(r.Method),
		v1Request: newV1Request(r, path, EventOptions{RequestID: "front-authorizer"})}
	payload, err := json.Marshal(ev)
	if err != nil {
		http.Error(w, "front: "+err.Error(), http.StatusInternalServerError)
		return "", false
	}
	out, err := invoke(ctx, payload)
	if err != nil {
		// A failed invocation: its error document, when the stand-in
		// has one (the emulator answers it as the payload).
		var fe *runtimeapi.FunctionError
		out = nil
		if errors.As(err, &fe) {
			out = fe.Body
		}
	}
	var a authorizerAnswer
	if out == nil || json.Unmarshal(out, &a) != nil {
		rest.Authorizer.write(w, "AUTHORIZER_CONFIGURATION_ERROR", nil)
		return "", false
	}
	if a.ErrorMessage != nil {
		if *a.ErrorMessage == "Unauthorized" {
			rest.Authorizer.write(w, "UNAUTHORIZED", nil)
		} else {
			rest.Authorizer.write(w, "AUTHORIZER_CONFIGURATION_ERROR", nil)
		}
		return "", false
	}
	if a.PrincipalID == "" || len(a.PolicyDocument.Statement) == 0 {
		rest.Authorizer.write(w, "AUTHORIZER_CONFIGURATION_ERROR", nil)
		return "", false
	}
	facts := map[string]string{}
	for k, v := range a.Context {
		facts[k] = fmt.Sprint(v)
	}
	// An explicit Deny wins; otherwise an Allow of this method is needed.
	allowed := false
	for _, s := range a.PolicyDocument.Statement {
		if s.Action != "execute-api:Invoke" || !coversArn(s.Resource, ev.MethodArn) {
			continue
		}
		if s.Effect == "Deny" {
			allowed = false
			break
		}
		allowed = allowed || s.Effect == "Allow"
	}
	if !allowed {
		rest.Authorizer.write(w, "ACCESS_DENIED", facts)
		return "", false
	}
	return a.PrincipalID, true
}

// coversArn reports whether a statement's Resource (a string or a list)
// names arn exactly (the function's policies name the method's ARN).
func coversArn(res any, arn string) bool {
	switch v := res.(type) {
	case string:
		return v == arn
	case []any:
		return slices.ContainsFunc(v, func(x any) bool { s, _ := x.(string); return s == arn })
	}
	return false
}

// answerMetadata answers a well-known URL as the mock integration does:
// 200, application/json, the document.
func (rest REST) answerMetadata(w http.ResponseWriter, doc []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(doc)
}
