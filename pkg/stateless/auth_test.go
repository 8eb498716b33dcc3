package stateless_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// authEndpoint is the protected endpoint's canonical URL.
const authEndpoint = "https://api.example.com/mcp"

// askedAuthenticator is an Authenticator that records what the server
// asks of it: its answer is the header's X-Who (the principal, "" for a
// refusal) and X-Scopes; its challenge names the scopes the server's
// challenge function returns, its 403 the scopes asked for, prefixed.
type askedAuthenticator struct {
	endpoints  []string
	challenged [][]string
	forbidden  [][]string
}

func (a *askedAuthenticator) Authenticate(ctx context.Context, endpoint string, h http.Header, challenge func() []string) (string, []string, *mcperr.Error) {
	a.endpoints = append(a.endpoints, endpoint)
	who := h.Get("X-Who")
	if who == "" || who == "nobody" || who == stateless.Anonymous {
		if who == "" {
			var scopes []string
			if challenge != nil {
				scopes = challenge()
			}
			a.challenged = append(a.challenged, scopes)
			return "", nil, mcperr.NewUnauthorized("https://meta.example/", scopes, false, errors.New("no one"))
		}
		if who == "nobody" {
			who = "" // an Authenticator that names no one
		}
	}
	return who, strings.Fields(h.Get("X-Scopes")), nil
}

func (a *askedAuthenticator) InsufficientScope(endpoint string, required []string) (*mcperr.Error, []string) {
	a.forbidden = append(a.forbidden, required)
	asked := make([]string, len(required))
	for i, s := range required {
		asked[i] = "provider/" + s
	}
	return mcperr.NewInsufficientScope(asked, "https://meta.example/"), asked
}

// TestAuthenticatorAsked: what the server asks its Authenticator, and
// what it makes of the answers: the challenge names a visible tool's
// scopes (nothing for a hidden, unknown or listing request), a token's
// scopes are checked against the tool's with the hierarchy, the 403 is
// the Authenticator's own for the tool's scopes, and an Authenticator
// that lets a request through without naming its caller, or naming the
// anonymous one, is a server fault, never an anonymous call.
func TestAuthenticatorAsked(t *testing.T) {
	a := &askedAuthenticator{}
	s := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Auth: &stateless.AuthOptions{Authenticator: a, ScopeImplies: map[string][]string{"notes:write": {"notes:read"}}}})
	var principals []string
	for _, tool := range []struct {
		name    string
		scopes  []string
		visible stateless.Visibility
	}{{"search", []string{"notes:read"}, nil}, {"add", []string{"notes:write"}, nil}, {"secret", []string{"admin"}, func(context.Context, string) bool { return false }}} {
		stateless.AddTool(s, &stateless.Tool{Name: tool.name, Scopes: tool.scopes, Visible: tool.visible, Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, r *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, struct{}, error) {
				principals = append(principals, r.Principal)
				return nil, struct{}{}, nil
			})
	}
	call := func(method, tool, who, scopes string) *stateless.Response {
		h := wire.ModernHeaders(method, tool)
		if who != "" {
			h.Set("X-Who", who)
		}
		h.Set("X-Scopes", scopes)
		params := withMeta(`"name":"` + tool + `","arguments":{}`)
		if method != "tools/call" {
			params = withMeta("")
		}
		return s.Handle(context.Background(), &stateless.Request{Method: "POST", Header: h, Endpoint: authEndpoint, Body: []byte(req("1", method, params))})
	}

	for _, tt := range []struct {
		name, method, tool string
		challenge          []string
	}{
		{"a visible tool's scopes", "tools/call", "add", []string{"notes:write"}},
		{"a hidden tool's are not revealed", "tools/call", "secret", nil},
		{"an unknown tool's neither", "tools/call", "nope", nil},
		{"a listing names none", "tools/list", "", nil},
	} {
		a.challenged = nil
		resp := call(tt.method, tt.tool, "", "")
		if resp.Status != http.StatusUnauthorized || len(a.challenged) != 1 || !slices.Equal(a.challenged[0], tt.challenge) {
			t.Errorf("%s: %d, challenged with %q, want 401 and %q", tt.name, resp.Status, a.challenged, tt.challenge)
		}
	}
	if len(a.endpoints) == 0 || a.endpoints[0] != authEndpoint {
		t.Errorf("asked for endpoints %q, want %s", a.endpoints, authEndpoint)
	}

	if resp := call("tools/call", "search", "alice", "notes:write"); resp.Status != 200 || wire.DecodeRPC(t, resp.Body).Error != nil {
		t.Errorf("an implied scope: %d %s", resp.Status, resp.Body)
	}
	resp := call("tools/call", "add", "alice", "notes:read")
	if resp.Status != http.StatusForbidden || len(a.forbidden) != 1 || !slices.Equal(a.forbidden[0], []string{"notes:write"}) ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `scope="provider/notes:write"`) {
		t.Errorf("a missing scope: %d %v, asked InsufficientScope(%q)", resp.Status, resp.Header, a.forbidden)
	}
	for _, who := range []string{"nobody", stateless.Anonymous} {
		resp := call("tools/call", "search", who, "notes:read")
		if r := wire.DecodeRPC(t, resp.Body); resp.Status != 200 || r.Error == nil || r.Error.Code != -32603 {
			t.Errorf("an Authenticator that names %q: %d %s, want an internal error", who, resp.Status, resp.Body)
		}
	}
	if !slices.Equal(principals, []string{"alice"}) {
		t.Errorf("handler runs %q, want alice's alone", principals)
	}

	// The authorizer's decision asks the same, with no challenge scopes
	// (it has no body to read a tool from), and names the scopes the
	// Authenticator's 403 asks for.
	a.challenged = nil
	if adm := s.Admit(context.Background(), authEndpoint, http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {"add"}}); adm.Refusal == nil ||
		adm.Refusal.Kind() != mcperr.KindUnauthorized || len(a.challenged) != 1 || a.challenged[0] != nil {
		t.Errorf("Admit without credentials: %+v, challenged with %q", adm, a.challenged)
	}
	adm := s.Admit(context.Background(), authEndpoint, http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {"add"}, "X-Who": {"alice"}, "X-Scopes": {"notes:read"}})
	if adm.Refusal == nil || adm.Refusal.Kind() != mcperr.KindInsufficientScope || !slices.Equal(adm.RequiredScopes, []string{"provider/notes:write"}) || adm.Principal != "alice" {
		t.Errorf("Admit short of a scope: %+v", adm)
	}
	if adm := s.Admit(context.Background(), authEndpoint, http.Header{"X-Who": {stateless.Anonymous}}); adm.Refusal == nil || adm.Refusal.Kind() != mcperr.KindInternal {
		t.Errorf("Admit of an anonymous caller: %+v, want an internal refusal", adm)
	}
}
