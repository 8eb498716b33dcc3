package apigw

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// TestRegistrationFacadeRoutes: on an HTTP API, a GET of the facade's
// authorization server metadata and a POST to its registration endpoint
// are answered by the facade of the endpoint the gateway names (or the
// configured one), and are absent without a facade.
func TestRegistrationFacadeRoutes(t *testing.T) {
	const domain = "a1.execute-api.eu-west-1.amazonaws.com"
	const clientID = "4f1b2c3d5e6f7a8b9c0d"
	server := func(reg *auth.Registration) *Handler {
		res := &auth.Resource{AuthorizationServers: []string{"https://issuer.example.com"}, Registration: reg}
		srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Auth: &stateless.AuthOptions{
			Authenticator: res,
		}})
		return &Handler{Server: srv, Documents: &auth.Documents{Server: srv, Resource: res}}
	}
	facade := server(&auth.Registration{ClientID: clientID,
		AuthorizationEndpoint: "https://auth.example.com/oauth2/authorize", TokenEndpoint: "https://auth.example.com/oauth2/token"})
	plain := server(nil)

	get := func(path string) []byte {
		return []byte(`{"version":"2.0","requestContext":{"requestId":"r1","domainName":"` + domain + `","http":{"method":"GET","path":"` + path + `"}}}`)
	}
	post := func(path, body string, b64 bool) []byte {
		ev := map[string]any{"version": "2.0", "headers": map[string]string{"content-type": "application/json"},
			"requestContext": map[string]any{"requestId": "r2", "domainName": domain, "http": map[string]string{"method": "POST", "path": path}},
			"body":           body, "isBase64Encoded": b64}
		if b64 {
			ev["body"] = base64.StdEncoding.EncodeToString([]byte(body))
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	type answer struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
		Body       string            `json:"body"`
	}
	invoke := func(h *Handler, payload []byte) answer {
		t.Helper()
		out, err := h.Invoke(context.Background(), payload)
		if err != nil {
			t.Fatal(err)
		}
		var a answer
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return a
	}
	type metadata struct {
		Issuer                string `json:"issuer"`
		AuthorizationEndpoint string `json:"authorization_endpoint"`
		RegistrationEndpoint  string `json:"registration_endpoint"`
	}
	issuerOf := func(a answer) metadata {
		t.Helper()
		var m metadata
		if err := json.Unmarshal([]byte(a.Body), &m); err != nil {
			t.Fatalf("%v: %s", err, a.Body)
		}
		return m
	}

	// The metadata, with the endpoint's path, without it, and behind a
	// stage's prefix.
	for path, issuer := range map[string]string{
		"/.well-known/oauth-authorization-server/mcp":    "https://" + domain + "/mcp",
		"/.well-known/oauth-authorization-server":        "https://" + domain + "/mcp",
		"/v1/.well-known/oauth-authorization-server/mcp": "https://" + domain + "/v1/mcp",
	} {
		a := invoke(facade, get(path))
		m := issuerOf(a)
		if a.StatusCode != 200 || m.Issuer != issuer || m.RegistrationEndpoint != issuer+"/register" ||
			m.AuthorizationEndpoint != "https://auth.example.com/oauth2/authorize" || a.Headers["Content-Type"] != "application/json" {
			t.Errorf("GET %s: %d %v %s, want issuer %s", path, a.StatusCode, a.Headers, a.Body, issuer)
		}
	}
	// The protected-resource metadata names the facade as the
	// authorization server.
	a := invoke(facade, get("/.well-known/oauth-protected-resource/mcp"))
	var prm struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal([]byte(a.Body), &prm); err != nil || a.StatusCode != 200 || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != "https://"+domain+"/mcp" {
		t.Errorf("protected-resource metadata: %d %s", a.StatusCode, a.Body)
	}

	// A registration, its body as sent and base64-encoded.
	const body = `{"redirect_uris":["http://127.0.0.1:33418/callback"],"token_endpoint_auth_method":"none"}`
	for _, b64 := range []bool{false, true} {
		a := invoke(facade, post("/mcp/register", body, b64))
		var reg struct {
			ClientID     string   `json:"client_id"`
			RedirectURIs []string `json:"redirect_uris"`
		}
		if err := json.Unmarshal([]byte(a.Body), &reg); err != nil || a.StatusCode != 201 || reg.ClientID != clientID ||
			len(reg.RedirectURIs) != 1 || reg.RedirectURIs[0] != "http://127.0.0.1:33418/callback" || a.Headers["Cache-Control"] != "no-store" {
			t.Errorf("POST /mcp/register (base64 %v): %d %v %s", b64, a.StatusCode, a.Headers, a.Body)
		}
	}
	if a := invoke(facade, post("/v1/mcp/register", body, false)); a.StatusCode != 201 {
		t.Errorf("POST /v1/mcp/register: %d %s", a.StatusCode, a.Body)
	}
	// A refused registration is the facade's 400, not a JSON-RPC answer.
	a = invoke(facade, post("/mcp/register", `{"redirect_uris":["https://evil.example/cb"]}`, false))
	var refusal struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(a.Body), &refusal); err != nil || a.StatusCode != 400 || refusal.Error != "invalid_redirect_uri" {
		t.Errorf("a refused registration: %d %s", a.StatusCode, a.Body)
	}
	// Neither route is taken for another method.
	if a := invoke(facade, post("/.well-known/oauth-authorization-server/mcp", body, false)); a.StatusCode == 200 && issuerOf(a).Issuer != "" {
		t.Errorf("POST of the metadata was answered as the metadata: %s", a.Body)
	}
	if a := invoke(facade, get("/mcp/register")); a.StatusCode == 201 {
		t.Errorf("GET /mcp/register registered: %s", a.Body)
	}

	// Without a facade both are absent.
	for name, payload := range map[string][]byte{
		"GET metadata":          get("/.well-known/oauth-authorization-server/mcp"),
		"POST register":         post("/mcp/register", body, false),
		"POST register, base64": post("/mcp/register", body, true),
	} {
		if a := invoke(plain, payload); a.StatusCode != 404 || a.Body != `{"error":"not_found"}` {
			t.Errorf("%s without a facade: %d %s", name, a.StatusCode, a.Body)
		}
	}

	// A response stream's invocation is answered alike, whole.
	for path, payload := range map[string][]byte{
		"GET metadata":  get("/.well-known/oauth-authorization-server/mcp"),
		"POST register": post("/mcp/register", body, true),
	} {
		st := &wholeStream{}
		if err := facade.InvokeStream(context.Background(), payload, st); err != nil {
			t.Fatal(err)
		}
		want := invoke(facade, payload)
		if st.status != want.StatusCode || st.body.String() != want.Body || st.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s streamed: %d %v %s, want %d %s", path, st.status, st.header, st.body.String(), want.StatusCode, want.Body)
		}
	}

	// A configured endpoint wins over the gateway's names.
	facade.Endpoint = "https://mcp.example.com/mcp"
	if m := issuerOf(invoke(facade, get("/.well-known/oauth-authorization-server/mcp"))); m.Issuer != "https://mcp.example.com/mcp" ||
		m.RegistrationEndpoint != "https://mcp.example.com/mcp/register" {
		t.Errorf("configured endpoint: %+v", m)
	}
	if a := invoke(facade, post("/mcp/register", body, false)); a.StatusCode != 201 {
		t.Errorf("POST /mcp/register with a configured endpoint: %d %s", a.StatusCode, a.Body)
	}
}

// wholeStream records what a stream is sent.
type wholeStream struct {
	status int
	header http.Header
	body   bytes.Buffer
}

func (w *wholeStream) Start(status int, h http.Header) error {
	w.status, w.header = status, h
	return nil
}

func (w *wholeStream) Write(p []byte) error {
	w.body.Write(p)
	return nil
}

// TestRegistrationPreflight: a CORS preflight of the facade's
// registration endpoint is answered by the endpoint's Origin rule
// (AllowedOrigins), with POST the one method, on an HTTP API's, a
// function URL's and the streaming door's events, and reported once; a
// page on another origin is refused it without Access-Control-* headers;
// an OPTIONS that is no preflight is 405, and without a facade 404.
func TestRegistrationPreflight(t *testing.T) {
	reported := 0
	server := func(reg *auth.Registration) *Handler {
		res := &auth.Resource{AuthorizationServers: []string{"https://issuer.example.com"}, Registration: reg}
		srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
			AllowedOrigins: []string{"https://app.example.com"},
			Observe:        func(context.Context, *stateless.Outcome) { reported++ },
			Auth:           &stateless.AuthOptions{Authenticator: res}})
		return &Handler{Server: srv, Documents: &auth.Documents{Server: srv, Resource: res}}
	}
	facade := server(&auth.Registration{ClientID: "c",
		AuthorizationEndpoint: "https://auth.example.com/oauth2/authorize", TokenEndpoint: "https://auth.example.com/oauth2/token"})
	plain := server(nil)
	v2 := func(domain, path string, h map[string]string) []byte {
		b, _ := json.Marshal(map[string]any{"version": "2.0", "headers": h,
			"requestContext": map[string]any{"requestId": "r1", "domainName": domain, "http": map[string]string{"method": "OPTIONS", "path": path}}})
		return b
	}
	rest := func(path string, h map[string]string) []byte {
		b, _ := json.Marshal(map[string]any{"resource": "/mcp/register", "path": "/mcp/register", "httpMethod": "OPTIONS", "headers": h,
			"requestContext": map[string]any{"requestId": "r1", "domainName": "mcp.example.com", "path": path, "httpMethod": "OPTIONS"}})
		return b
	}
	preflight := map[string]string{"origin": "https://app.example.com", "access-control-request-method": "POST", "access-control-request-headers": "content-type"}
	type answer struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	invoke := func(h *Handler, payload []byte) answer {
		t.Helper()
		out, err := h.Invoke(context.Background(), payload)
		var a answer
		if err != nil || json.Unmarshal(out, &a) != nil {
			t.Fatalf("%s: %v", out, err)
		}
		return a
	}
	for name, payload := range map[string][]byte{
		"HTTP API":              v2("a1.execute-api.eu-west-1.amazonaws.com", "/mcp/register", preflight),
		"function URL":          v2("a1.lambda-url.eu-west-1.on.aws", "/mcp/register", preflight),
		"streaming door":        rest("/mcp/register", preflight),
		"streaming door, stage": rest("/v1/mcp/register", preflight),
	} {
		reported = 0
		a := invoke(facade, payload)
		if a.StatusCode != 204 || a.Headers["Access-Control-Allow-Origin"] != "https://app.example.com" || a.Headers["Access-Control-Allow-Methods"] != "POST" ||
			a.Headers["Access-Control-Allow-Headers"] != "content-type" || reported != 1 {
			t.Errorf("%s: %d %v, reported %d times", name, a.StatusCode, a.Headers, reported)
		}
	}
	other := map[string]string{"origin": "https://evil.example", "access-control-request-method": "POST"}
	if a := invoke(facade, v2("a1.execute-api.eu-west-1.amazonaws.com", "/mcp/register", other)); a.StatusCode != 403 || a.Headers["Access-Control-Allow-Origin"] != "" {
		t.Errorf("another origin: %d %v", a.StatusCode, a.Headers)
	}
	get := map[string]string{"origin": "https://app.example.com", "access-control-request-method": "GET"}
	if a := invoke(facade, v2("a1.execute-api.eu-west-1.amazonaws.com", "/mcp/register", get)); a.StatusCode != 403 || a.Headers["Access-Control-Allow-Origin"] != "" {
		t.Errorf("a GET's preflight: %d %v", a.StatusCode, a.Headers)
	}
	if a := invoke(facade, v2("a1.execute-api.eu-west-1.amazonaws.com", "/mcp/register", nil)); a.StatusCode != 405 {
		t.Errorf("an OPTIONS that is no preflight: %d %v", a.StatusCode, a.Headers)
	}
	if a := invoke(plain, v2("a1.execute-api.eu-west-1.amazonaws.com", "/mcp/register", preflight)); a.StatusCode != 404 {
		t.Errorf("without a facade: %d %v", a.StatusCode, a.Headers)
	}
}

// TestDocumentsReported: an OAuth document the Lambda handler serves is
// one reported Outcome, as an MCP answer is: its Method names the
// document (whatever path, stage or suffix the event names), with the
// status the event is answered with and a refusal's kind; on the
// buffered and the streaming door alike.
func TestDocumentsReported(t *testing.T) {
	var outcomes []*stateless.Outcome
	res := &auth.Resource{AuthorizationServers: []string{"https://issuer.example.com"},
		Registration: &auth.Registration{ClientID: "c", AuthorizationEndpoint: "https://auth.example.com/authorize", TokenEndpoint: "https://auth.example.com/token"}}
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Auth:    &stateless.AuthOptions{Authenticator: res},
		Observe: func(_ context.Context, o *stateless.Outcome) { outcomes = append(outcomes, o) }})
	h := &Handler{Server: srv, Documents: &auth.Documents{Server: srv, Resource: res}}
	event := func(method, path, body string) []byte {
		b, _ := json.Marshal(map[string]any{"version": "2.0", "body": body,
			"requestContext": map[string]any{"requestId": "r1", "domainName": "a1.execute-api.eu-west-1.amazonaws.com", "http": map[string]string{"method": method, "path": path}}})
		return b
	}
	for _, tt := range []struct {
		name, method, path, body string
		status                   int
		document, kind           string
	}{
		{"the protected-resource metadata", "GET", "/.well-known/oauth-protected-resource/mcp", "", 200, auth.MethodProtectedResourceMetadata, ""},
		{"behind a stage, of another path", "GET", "/v1/.well-known/oauth-protected-resource/some/where", "", 200, auth.MethodProtectedResourceMetadata, ""},
		{"the facade's metadata", "GET", "/.well-known/oauth-authorization-server/mcp", "", 200, auth.MethodAuthorizationServerMetadata, ""},
		{"a registration", "POST", "/mcp/register", `{"redirect_uris":["http://127.0.0.1:1/cb"]}`, 201, auth.MethodRegister, ""},
		{"a refused registration", "POST", "/v1/mcp/register", `{"redirect_uris":["https://evil.example/cb"]}`, 400, auth.MethodRegister, "invalid_redirect_uri"},
		{"an OPTIONS that is no preflight", "OPTIONS", "/mcp/register", "", 405, auth.MethodRegisterPreflight, "method_not_allowed"},
	} {
		for _, streamed := range []bool{false, true} {
			outcomes = nil
			status := 0
			if streamed {
				st := &wholeStream{}
				if err := h.InvokeStream(context.Background(), event(tt.method, tt.path, tt.body), st); err != nil {
					t.Fatal(err)
				}
				status = st.status
			} else {
				out, err := h.Invoke(context.Background(), event(tt.method, tt.path, tt.body))
				var a struct{ StatusCode int }
				if err != nil || json.Unmarshal(out, &a) != nil {
					t.Fatalf("%s: %s %v", tt.name, out, err)
				}
				status = a.StatusCode
			}
			if status != tt.status || len(outcomes) != 1 || outcomes[0].Method != tt.document || !outcomes[0].OwnMethod ||
				outcomes[0].Status != tt.status || outcomes[0].Kind != tt.kind {
				t.Errorf("%s (streamed %v): %d, outcomes %+v; want %d and one of %s, kind %q", tt.name, streamed, status, outcomes, tt.status, tt.document, tt.kind)
			}
		}
	}
	// Without an issuer the documents are absent, and still reported.
	outcomes = nil
	open := &Handler{Server: srv, Documents: &auth.Documents{Server: srv}}
	out, _ := open.Invoke(context.Background(), event("GET", "/.well-known/oauth-protected-resource/mcp", ""))
	if !strings.Contains(string(out), `"statusCode":404`) || len(outcomes) != 1 || outcomes[0].Method != auth.MethodProtectedResourceMetadata || outcomes[0].Kind != "not_found" {
		t.Errorf("an open endpoint's metadata: %s, outcomes %+v", out, outcomes)
	}
	// An MCP request is the server's, reported as its own.
	outcomes = nil
	_, _ = h.Invoke(context.Background(), event("POST", "/mcp", `{}`))
	if len(outcomes) != 1 || outcomes[0].OwnMethod && strings.HasPrefix(outcomes[0].Method, "oauth/") {
		t.Errorf("an MCP request: outcomes %+v", outcomes)
	}
}
