package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

const (
	endpoint = "https://api.example.com/mcp"
	prm      = "https://api.example.com/.well-known/oauth-protected-resource/mcp"
)

// tokens is a TokenAuthenticator over a fixed table: token -> principal and
// scopes. "down" is a key service that cannot be reached.
type tokens map[string][]string

func (tk tokens) Authenticate(ctx context.Context, token, audience string) (string, []string, *mcperr.Error) {
	if audience != endpoint {
		return "", nil, mcperr.Wrap(mcperr.KindUnauthorized, errors.New("audience"))
	}
	if token == "down" {
		return "", nil, mcperr.NewRetryable(mcperr.KindDependencyFailure, 0, errors.New("jwks unreachable"))
	}
	scopes, ok := tk[token]
	if !ok {
		return "", nil, mcperr.Wrap(mcperr.KindUnauthorized, errors.New("bad signature"))
	}
	return "jwt:https://issuer.example.com#" + token, scopes, nil
}

// newAuthServer is a server protected by a Resource over tokens, with
// the tools search (notes:read), add (notes:write) and secret (admin,
// never visible).
func newAuthServer(t *testing.T) (*stateless.Server, *auth.Resource, *[]string) {
	t.Helper()
	res := &auth.Resource{
		Tokens:               tokens{"reader": {"notes:read"}, "writer": {"notes:write"}, "none": nil},
		AuthorizationServers: []string{"https://issuer.example.com"},
		ScopesSupported:      []string{"notes:read", "notes:write"},
	}
	s, principals := protectedServer(res, "search", "add", "secret")
	return s, res, principals
}

// protectedServer is a server protected by res with the tools of
// protectedTools it names, each answering nothing and recording its
// caller's principal; notes:write implies notes:read.
func protectedServer(res *auth.Resource, tools ...string) (*stateless.Server, *[]string) {
	var principals []string
	s := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Auth: &stateless.AuthOptions{
		Authenticator: res,
		ScopeImplies:  map[string][]string{"notes:write": {"notes:read"}},
	}})
	for _, name := range tools {
		pt := protectedTools[name]
		stateless.AddTool(s, &stateless.Tool{Name: name, Scopes: pt.scopes, Visible: pt.visible, Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, r *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, struct{}, error) {
				principals = append(principals, r.Principal)
				return nil, struct{}{}, nil
			})
	}
	return s, &principals
}

// protectedTools are the tools protectedServer registers, by name: their
// scopes, and whether they are visible.
var protectedTools = map[string]struct {
	scopes  []string
	visible stateless.Visibility
}{
	"search": {scopes: []string{"notes:read"}},
	"add":    {scopes: []string{"notes:write"}},
	"audit":  {scopes: []string{"notes:read", "audit"}},
	"secret": {scopes: []string{"admin"}, visible: func(context.Context, string) bool { return false }},
}

// challengedCall calls tool on s with authz and checks the answer's
// status and its challenge, in WWW-Authenticate and in the relay a
// gateway copies from.
func challengedCall(t *testing.T, s *stateless.Server, tool string, authz []string, status int, challenge string) *stateless.Response {
	t.Helper()
	resp := authCall(s, tool, authz)
	if resp.Status != status {
		t.Fatalf("status %d, want %d: %s", resp.Status, status, resp.Body)
	}
	if got := resp.Header.Get("WWW-Authenticate"); got != challenge {
		t.Errorf("WWW-Authenticate = %s\nwant               %s", got, challenge)
	}
	if got := resp.Header.Get(stateless.ChallengeRelayHeader); got != challenge {
		t.Errorf("%s = %s\nwant %s", stateless.ChallengeRelayHeader, got, challenge)
	}
	return resp
}

func authCall(s *stateless.Server, tool string, authz []string) *stateless.Response {
	h := wire.ModernHeaders("tools/call", tool)
	if authz != nil {
		h["Authorization"] = authz
	}
	return s.Handle(context.Background(), &stateless.Request{Method: "POST", Header: h, Endpoint: endpoint,
		Body: []byte(req("1", "tools/call", withMeta(`"name":"`+tool+`","arguments":{}`)))})
}

// TestAuthChallenges pins each answer of a protected endpoint: status,
// WWW-Authenticate exactly, and the JSON-RPC error.
func TestAuthChallenges(t *testing.T) {
	s, _, principals := newAuthServer(t)
	tests := []struct {
		name      string
		tool      string
		authz     []string
		status    int
		challenge string
		code      int
		data      string
	}{
		{"no token: where to authenticate, and the scope the call needs", "add", nil, 401,
			`Bearer resource_metadata="` + prm + `", scope="notes:write"`, -32600, ""},
		{"a hidden tool's scopes are not revealed", "secret", nil, 401, `Bearer resource_metadata="` + prm + `"`, -32600, ""},
		{"an unknown tool's neither", "nope", nil, 401, `Bearer resource_metadata="` + prm + `"`, -32600, ""},
		{"another scheme", "search", []string{"Basic dXNlcjpwYXNz"}, 401,
			`Bearer resource_metadata="` + prm + `", scope="notes:read", error="invalid_token"`, -32600, ""},
		{"two Authorization headers", "search", []string{"Bearer reader", "Bearer writer"}, 401,
			`Bearer resource_metadata="` + prm + `", scope="notes:read", error="invalid_token"`, -32600, ""},
		{"not a token68", "search", []string{"Bearer a b"}, 401,
			`Bearer resource_metadata="` + prm + `", scope="notes:read", error="invalid_token"`, -32600, ""},
		{"empty credential", "search", []string{"Bearer "}, 401,
			`Bearer resource_metadata="` + prm + `", scope="notes:read", error="invalid_token"`, -32600, ""},
		{"a token the authenticator refuses", "search", []string{"Bearer forged"}, 401,
			`Bearer resource_metadata="` + prm + `", scope="notes:read", error="invalid_token"`, -32600, ""},
		{"the key service down fails closed, in-band", "search", []string{"Bearer down"}, 200, "", -32603,
			`{"retryable":true,"type":"dependency_failure"}`},
		{"a valid token without the tool's scope: step up", "add", []string{"Bearer reader"}, 403,
			`Bearer error="insufficient_scope", scope="notes:write", resource_metadata="` + prm + `"`, -32600,
			`{"requiredScopes":["notes:write"],"type":"insufficient_scope"}`},
		{"no scopes at all", "search", []string{"Bearer none"}, 403,
			`Bearer error="insufficient_scope", scope="notes:read", resource_metadata="` + prm + `"`, -32600,
			`{"requiredScopes":["notes:read"],"type":"insufficient_scope"}`},
		{"the scheme is case-insensitive", "search", []string{"bearer reader"}, 200, "", 0, ""},
		{"a broader scope implies a narrower one", "search", []string{"Bearer writer"}, 200, "", 0, ""},
		{"the scope itself", "add", []string{"Bearer writer"}, 200, "", 0, ""},
		{"a hidden tool with a token is an unknown tool", "secret", []string{"Bearer writer"}, 400, "", -32602, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := challengedCall(t, s, tt.tool, tt.authz, tt.status, tt.challenge)
			r := wire.DecodeRPC(t, resp.Body)
			switch {
			case tt.code == 0 && r.Error != nil:
				t.Errorf("error %+v", r.Error)
			case tt.code != 0 && (r.Error == nil || r.Error.Code != tt.code):
				t.Fatalf("error %+v, want code %d", r.Error, tt.code)
			case tt.data != "" && string(r.Error.Data) != tt.data:
				t.Errorf("data = %s, want %s", r.Error.Data, tt.data)
			}
			if strings.Contains(string(resp.Body), "forged") || strings.Contains(string(resp.Body), "bad signature") {
				t.Errorf("the token or its fault reached the body: %s", resp.Body)
			}
		})
	}
	// The principal is the token's, never anonymous.
	for _, p := range *principals {
		if p != "jwt:https://issuer.example.com#reader" && p != "jwt:https://issuer.example.com#writer" {
			t.Errorf("handler saw principal %q", p)
		}
	}
	if len(*principals) != 3 {
		t.Errorf("%d handler runs, want 3", len(*principals))
	}
}

// TestAuthEveryRequest: lists and notifications need a token too, and a
// server that does not know its own URL accepts none.
func TestAuthEveryRequest(t *testing.T) {
	s, _, _ := newAuthServer(t)
	list := s.Handle(context.Background(), &stateless.Request{Method: "POST", Header: wire.ModernHeaders("tools/list", ""), Endpoint: endpoint,
		Body: []byte(req("1", "tools/list", withMeta("")))})
	if list.Status != 401 || list.Header.Get("WWW-Authenticate") != `Bearer resource_metadata="`+prm+`"` {
		t.Errorf("tools/list without a token: %d %v", list.Status, list.Header)
	}
	h := wire.ModernHeaders("tools/list", "")
	h.Set("Authorization", "Bearer none")
	list = s.Handle(context.Background(), &stateless.Request{Method: "POST", Header: h, Endpoint: endpoint,
		Body: []byte(req("1", "tools/list", withMeta("")))})
	if list.Status != 200 || !strings.Contains(string(list.Body), `"add"`) || strings.Contains(string(list.Body), `"secret"`) {
		t.Errorf("tools/list lists every visible tool whatever the scopes: %d %s", list.Status, list.Body)
	}
	note := s.Handle(context.Background(), &stateless.Request{Method: "POST", Header: wire.ModernHeaders("notifications/initialized", ""), Endpoint: endpoint,
		Body: []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)})
	if note.Status != 401 {
		t.Errorf("a notification without a token: %d", note.Status)
	}
	h = wire.ModernHeaders("tools/call", "search")
	h.Set("Authorization", "Bearer reader")
	lost := s.Handle(context.Background(), &stateless.Request{Method: "POST", Header: h,
		Body: []byte(req("1", "tools/call", withMeta(`"name":"search","arguments":{}`)))})
	if r := wire.DecodeRPC(t, lost.Body); lost.Status != 200 || r.Error == nil || r.Error.Code != -32603 {
		t.Errorf("no endpoint URL: %d %s", lost.Status, lost.Body)
	}
}

func TestProtectedResourceMetadata(t *testing.T) {
	_, res, _ := newAuthServer(t)
	resp := res.ProtectedResourceMetadata(endpoint)
	if resp.Status != 200 || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("%d %v", resp.Status, resp.Header)
	}
	var doc map[string]any
	if err := json.Unmarshal(resp.Body, &doc); err != nil {
		t.Fatal(err)
	}
	want := `{"authorization_servers":["https://issuer.example.com"],"bearer_methods_supported":["header"],"resource":"https://api.example.com/mcp","scopes_supported":["notes:read","notes:write"]}`
	if got, _ := json.Marshal(doc); string(got) != want {
		t.Errorf("document %s\nwant     %s", got, want)
	}
	var open *auth.Resource // an endpoint without authorization
	if r := open.ProtectedResourceMetadata(endpoint); r.Status != http.StatusNotFound {
		t.Errorf("an open endpoint serves metadata: %d", r.Status)
	}
	for in, want := range map[string]string{
		"https://api.example.com/mcp":      prm,
		"https://api.example.com":          "https://api.example.com/.well-known/oauth-protected-resource",
		"https://api.example.com/prod/mcp": "https://api.example.com/.well-known/oauth-protected-resource/prod/mcp",
		"http://127.0.0.1:8080/mcp":        "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp",
	} {
		if got := auth.MetadataURL(in); got != want {
			t.Errorf("MetadataURL(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestAdmit: an authorizer's decision from the headers alone is the
// server's own: the same refusals for the same tokens, the scopes of the
// tool Mcp-Name names, and no judgement of a tool the caller may not see
// or that does not exist (the server answers those as it always does).
func TestAdmit(t *testing.T) {
	s, _, _ := newAuthServer(t)
	tests := []struct {
		name      string
		authz     []string
		method    string
		tool      string
		kind      string // "" let through
		principal string
		required  []string
	}{
		{"no token", nil, "tools/call", "add", "unauthorized", "", nil},
		{"another scheme", []string{"Basic dXNlcjpwYXNz"}, "tools/call", "add", "unauthorized", "", nil},
		{"two Authorization headers", []string{"Bearer reader", "Bearer writer"}, "tools/list", "", "unauthorized", "", nil},
		{"a forged token", []string{"Bearer forged"}, "tools/list", "", "unauthorized", "", nil},
		{"the key service down fails closed", []string{"Bearer down"}, "tools/list", "", "dependency_failure", "", nil},
		{"a listing needs a valid token only", []string{"Bearer none"}, "tools/list", "", "", "jwt:https://issuer.example.com#none", nil},
		{"a call without the tool's scope", []string{"Bearer reader"}, "tools/call", "add", "insufficient_scope", "jwt:https://issuer.example.com#reader", []string{"notes:write"}},
		{"a call whose scope is implied", []string{"Bearer writer"}, "tools/call", "search", "", "jwt:https://issuer.example.com#writer", nil},
		{"a hidden tool is not judged", []string{"Bearer reader"}, "tools/call", "secret", "", "jwt:https://issuer.example.com#reader", nil},
		{"nor an unknown one", []string{"Bearer reader"}, "tools/call", "nope", "", "jwt:https://issuer.example.com#reader", nil},
		{"a name in the base64 form", []string{"Bearer reader"}, "tools/call", "=?base64?YWRk?=", "insufficient_scope", "jwt:https://issuer.example.com#reader", []string{"notes:write"}},
		{"Mcp-Name of another method is not a tool", []string{"Bearer reader"}, "prompts/get", "add", "", "jwt:https://issuer.example.com#reader", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{"Mcp-Method": {tt.method}}
			if tt.tool != "" {
				h.Set("Mcp-Name", tt.tool)
			}
			if tt.authz != nil {
				h["Authorization"] = tt.authz
			}
			adm := s.Admit(context.Background(), endpoint, h)
			kind := ""
			if adm.Refusal != nil {
				kind = adm.Refusal.Kind().String()
			}
			if kind != tt.kind || adm.Principal != tt.principal || strings.Join(adm.RequiredScopes, " ") != strings.Join(tt.required, " ") {
				t.Errorf("Admit = %q, principal %q, required %q; want %q, %q, %q", kind, adm.Principal, adm.RequiredScopes, tt.kind, tt.principal, tt.required)
			}
			if tt.kind == "unauthorized" {
				if ch := adm.Refusal.Challenge(); !strings.HasPrefix(ch, `Bearer resource_metadata="`+prm+`"`) {
					t.Errorf("challenge %q", ch)
				}
			}
		})
	}
	open := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, nil)
	if adm := open.Admit(context.Background(), endpoint, http.Header{}); adm.Refusal != nil || adm.Principal != stateless.Anonymous {
		t.Errorf("an open endpoint: %+v", adm)
	}
	if adm := s.Admit(context.Background(), "", http.Header{"Authorization": {"Bearer writer"}}); adm.Refusal == nil || adm.Refusal.Kind() != mcperr.KindInternal {
		t.Errorf("no endpoint URL: %+v, want an internal refusal", adm)
	}
}

func req(id, method, params string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`
}

func withMeta(extra string) string {
	if extra == "" {
		return `{"_meta":` + wire.MetaJSON(`{}`) + `}`
	}
	return `{` + extra + `,"_meta":` + wire.MetaJSON(`{}`) + `}`
}
