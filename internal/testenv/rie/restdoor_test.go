package rie

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/runtimeapi"
	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
)

// authorizingFunction answers authorizer events with authz (or fails with
// authzErr) and every other event with a proxy response.
type authorizingFunction struct {
	fakeFunction
	authz    string
	authzErr error
}

func (f *authorizingFunction) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	f.record(payload)
	if strings.Contains(string(payload), `"methodArn"`) {
		return []byte(f.authz), f.authzErr
	}
	return []byte(f.answer), nil
}

func (f *authorizingFunction) InvokeStream(ctx context.Context, payload []byte) (io.ReadCloser, error) {
	out, err := f.Invoke(ctx, payload)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(strings.NewReader(string(out))), nil
}

func policy(effect string, context map[string]string) string {
	b, _ := json.Marshal(map[string]any{"principalId": "jwt:https://issuer.example#u",
		"policyDocument": map[string]any{"Version": "2012-10-17", "Statement": []map[string]any{
			{"Action": "execute-api:Invoke", "Effect": effect, "Resource": restMethodArn("POST")}}},
		"context": context})
	return string(b)
}

// TestRESTDoorAsTheTemplateDeploysIt: on a custom domain mapped at the
// root the well-known URLs are routable and answered by the mock
// integrations without the function; on the invoke URL they are not; the
// authorizer is invoked with the headers and no body, refusals are the
// gateway responses (their WWW-Authenticate set by API Gateway, not
// renamed), an Allow passes the principal on in the proxy event.
func TestRESTDoorAsTheTemplateDeploysIt(t *testing.T) {
	const md = "https://api.example/.well-known/oauth-protected-resource/mcp"
	doc := TemplateMetadata("https://api.example/mcp", "https://issuer.example", []string{"notes:read"})
	responses := TemplateGatewayResponses(md, []string{"notes:read", "notes:write"})
	newFront := func(fn *authorizingFunction, domain bool, stream bool) http.Handler {
		rest := REST{Domain: domain, Metadata: doc, Authorizer: responses}
		if stream {
			return &StreamFront{Function: fn, Door: RESTAPI, REST: rest}
		}
		return &Front{Emulator: fn, Door: RESTAPI, REST: rest}
	}
	bearer := http.Header{"Authorization": {"Bearer t"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"notes_add"}}
	for _, stream := range []bool{false, true} {
		name := "buffered"
		if stream {
			name = "streamed"
		}
		t.Run(name, func(t *testing.T) {
			fn := &authorizingFunction{fakeFunction: fakeFunction{answer: proxyAnswer(t, 200, nil, nil),
				stream: proxyAnswer(t, 200, nil, nil)}, authz: policy("Allow", nil)}
			if stream {
				// A streamed answer without its prelude is delivered as
				// a buffered one.
				fn.stream = ""
			}
			f := newFront(fn, true, stream)
			for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
				resp := serve(t, f, "GET", p, nil, "")
				if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(b) != string(doc) || resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("GET %s: %d %s", p, resp.StatusCode, b)
				}
			}
			if n := len(fn.Events()); n != 0 {
				t.Errorf("the metadata invoked the function %d times", n)
			}
			if resp := serve(t, f, "GET", "/v1/mcp", nil, ""); resp.StatusCode != 403 {
				t.Errorf("the stage's path on a custom domain: %d", resp.StatusCode)
			}

			// No token: 401 from API Gateway, the function not invoked.
			resp := serve(t, f, "POST", "/mcp", http.Header{"Mcp-Method": {"tools/list"}}, `{}`)
			if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Bearer resource_metadata="`+md+`"` || len(fn.Events()) != 0 {
				t.Errorf("no token: %d %q, %d invocations", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), len(fn.Events()))
			}

			// Allowed: the authorizer saw the headers, not the body; the
			// proxy event carries its principal.
			resp = serve(t, f, "POST", "/mcp", bearer, `{"secret":"body"}`)
			evs := fn.Events()
			if resp.StatusCode != 200 || len(evs) != 2 {
				t.Fatalf("allowed: %d, %d invocations", resp.StatusCode, len(evs))
			}
			authz, proxy := evs[0], evs[1]
			if authz["type"] != "REQUEST" || authz["methodArn"] != restMethodArn("POST") || authz["body"] != nil ||
				authz["headers"].(map[string]any)["Mcp-Name"] != "notes_add" {
				t.Errorf("authorizer event %v", authz)
			}
			if p := proxy["requestContext"].(map[string]any)["authorizer"].(map[string]any)["principalId"]; p != "jwt:https://issuer.example#u" || proxy["path"] != "/mcp" {
				t.Errorf("proxy event %v", proxy)
			}

			// Denied: 403 with the step-up challenge and the context in
			// the body.
			fn.authz = policy("Deny", map[string]string{"requiredScopes": "notes:write"})
			resp = serve(t, f, "POST", "/mcp", bearer, `{}`)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 403 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `scope="notes:read notes:write"`) ||
				!strings.Contains(string(b), `"requiredScopes":"notes:write"`) || len(fn.Events()) != 3 {
				t.Errorf("denied: %d %q %s, %d invocations", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), b, len(fn.Events()))
			}

			// "Unauthorized": 401; any other failure: 503 with Retry-After
			// (the template's AUTHORIZER_CONFIGURATION_ERROR).
			fn.authz, fn.authzErr = "", &runtimeapi.FunctionError{Body: []byte(`{"errorMessage":"Unauthorized","errorType":"errorString"}`)}
			if resp := serve(t, f, "POST", "/mcp", bearer, `{}`); resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("Unauthorized: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
			fn.authz, fn.authzErr = `{"errorMessage":"apigw: the authorizer could not check the token: dependency_failure"}`, nil
			if resp := serve(t, f, "POST", "/mcp", bearer, `{}`); resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
				t.Errorf("a failed check: %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			fn.authz = `{"principalId":"p","policyDocument":{"Statement":[{"Action":"execute-api:Invoke","Effect":"Allow","Resource":"arn:other"}]}}`
			if resp := serve(t, f, "POST", "/mcp", bearer, `{}`); resp.StatusCode != 403 {
				t.Errorf("an Allow of another method: %d", resp.StatusCode)
			}
		})
	}

	// On the invoke URL the stage comes first, and RFC 9728's well-known
	// URL for /v1/mcp is outside it: not routable.
	fn := &authorizingFunction{fakeFunction: fakeFunction{answer: proxyAnswer(t, 200, nil, nil)}, authz: policy("Allow", nil)}
	f := newFront(fn, false, false)
	if resp := serve(t, f, "GET", "/.well-known/oauth-protected-resource/v1/mcp", nil, ""); resp.StatusCode != 403 {
		t.Errorf("the invoke URL's well-known URL: %d", resp.StatusCode)
	}
	if resp := serve(t, f, "GET", "/v1/.well-known/oauth-protected-resource/mcp", nil, ""); resp.StatusCode != 200 {
		t.Errorf("the stage's own metadata resource: %d", resp.StatusCode)
	}
	if resp := serve(t, f, "POST", "/v1/mcp", http.Header{"Authorization": {"Bearer t"}}, `{}`); resp.StatusCode != 200 {
		t.Errorf("the invoke URL's /v1/mcp: %d", resp.StatusCode)
	}
	// Without the template's responses, API Gateway's defaults: no
	// challenge at all.
	plain := &Front{Emulator: fn, Door: RESTAPI, REST: REST{Authorizer: GatewayResponses{}}}
	if resp := serve(t, plain, "POST", "/v1/mcp", nil, `{}`); resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("default UNAUTHORIZED: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// pacedStream is a function's response stream: a prelude, then each piece
// after its pause.
type pacedStream struct {
	pieces []string
	pause  time.Duration
}

func (p *pacedStream) InvokeStream(ctx context.Context, payload []byte) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"statusCode":200,"headers":{"Content-Type":"text/event-stream"}}` + "\x00\x00\x00\x00\x00\x00\x00\x00"))
		for _, piece := range p.pieces {
			time.Sleep(p.pause)
			if _, err := pw.Write([]byte(piece)); err != nil {
				return
			}
		}
		pw.Close()
	}()
	return pr, nil
}

// TestStreamIdleTimeout: the REST door ends a stream that goes its idle
// timeout without a byte (5 minutes, scaled down here): the client sees
// the connection cut; a stream that sends something (a keep-alive
// comment) more often is delivered whole.
func TestStreamIdleTimeout(t *testing.T) {
	if RESTAPI.IdleTimeout() != 5*time.Minute || FunctionURL.IdleTimeout() != 0 {
		t.Errorf("idle timeouts %v, %v", RESTAPI.IdleTimeout(), FunctionURL.IdleTimeout())
	}
	get := func(fn Streamer) (string, error) {
		hs := httptest.NewServer(&StreamFront{Function: fn, Door: RESTAPI, Idle: 150 * time.Millisecond})
		defer hs.Close()
		resp, err := http.Post(hs.URL+"/v1/mcp", "application/json", strings.NewReader(`{}`))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	body, err := get(&pacedStream{pieces: []string{": keep-alive\n\n", ": keep-alive\n\n", ": keep-alive\n\n", "data: {}\n\n"}, pause: 50 * time.Millisecond})
	if err != nil || !strings.HasSuffix(body, "data: {}\n\n") {
		t.Errorf("a stream kept alive: %q, %v", body, err)
	}
	body, err = get(&pacedStream{pieces: []string{": keep-alive\n\n", "data: {}\n\n"}, pause: 400 * time.Millisecond})
	if err == nil {
		t.Errorf("a silent stream was not cut: %q", body)
	}
}

// TestTemplateAuthorizationServerMetadata: the facade's metadata the
// streaming door's mock answers is, member for member, what the function
// serves on the other doors.
func TestTemplateAuthorizationServerMetadata(t *testing.T) {
	const ep, authz, token = "https://mcp.example.com/mcp", "https://idp.example/oauth2/authorize", "https://idp.example/oauth2/token"
	scopes := []string{"notes:read", "notes:write"}
	srv := &auth.Resource{ScopesSupported: scopes, Registration: &auth.Registration{ClientID: "c", AuthorizationEndpoint: authz, TokenEndpoint: token}}
	var fromFunction, fromTemplate any
	if err := json.Unmarshal(srv.AuthorizationServerMetadata(ep).Body, &fromFunction); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(TemplateAuthorizationServerMetadata(ep, authz, token, scopes), &fromTemplate); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromFunction, fromTemplate) {
		t.Errorf("the template's facade metadata\n%v\ndiffers from the function's\n%v", fromTemplate, fromFunction)
	}
	// And the protected-resource metadata names the endpoint, as the
	// template's does with the facade.
	var prm, tprm any
	_ = json.Unmarshal(srv.ProtectedResourceMetadata(ep).Body, &prm)
	_ = json.Unmarshal(TemplateMetadata(ep, ep, scopes), &tprm)
	if !reflect.DeepEqual(prm, tprm) {
		t.Errorf("the template's protected-resource metadata\n%v\ndiffers from the function's\n%v", tprm, prm)
	}
}
