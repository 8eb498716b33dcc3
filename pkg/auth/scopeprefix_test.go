package auth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// scopePrefix is a provider's prefix of the endpoint's scope names: an
// Entra ID Application ID URI and "/" (Cognito's resource server
// identifier and "/" has the same shape).
const scopePrefix = "api://notes-app/"

// prefixTokens are tokens as providers with a scope prefix issue them.
var prefixTokens = tokens{
	// Cognito's "scope": the prefixed names.
	"prefixed-reader": {scopePrefix + "notes:read"},
	"prefixed-writer": {scopePrefix + "notes:write"},
	// Entra ID's "scp": the bare names.
	"bare-reader": {"notes:read"},
	"bare-writer": {"notes:write"},
	// Both forms in one token.
	"mixed": {scopePrefix + "notes:read", "audit"},
	// Another resource's scopes, of the same names.
	"foreign": {"api://other-app/notes:read", "api://other-app/notes:write", "api://other-app/audit"},
	// The prefix in another case, twice, or alone.
	"other-case": {"API://NOTES-APP/notes:read"},
	"twice":      {scopePrefix + scopePrefix + "notes:read"},
	"prefix":     {scopePrefix},
	"none":       nil,
}

// newPrefixServer is newAuthServer's endpoint with a ScopePrefix: the
// tools search (notes:read), add (notes:write), audit (notes:read and
// audit) and secret (admin, never visible).
func newPrefixServer(t *testing.T, prefix string) (*stateless.Server, *auth.Resource, *[]string) {
	t.Helper()
	res := &auth.Resource{
		Tokens:               prefixTokens,
		AuthorizationServers: []string{"https://issuer.example.com"},
		ScopesSupported:      []string{scopePrefix + "notes:read", scopePrefix + "notes:write", "offline_access"},
		ScopePrefix:          prefix,
	}
	s, principals := protectedServer(res, "search", "add", "audit", "secret")
	return s, res, principals
}

// TestScopePrefixChallenges: with a ScopePrefix, the 401 and 403
// challenges (and the 403's requiredScopes) name a tool's scopes as the
// provider issues them, a token's prefixed scope grants the bare one, a
// bare scope grants itself, and another prefix grants nothing. Without a
// prefix, scopes are compared as they are.
func TestScopePrefixChallenges(t *testing.T) {
	const p = scopePrefix
	tests := []struct {
		name      string
		prefix    string
		tool      string
		token     string // "" sends none
		status    int
		challenge string
		data      string // the JSON-RPC error's data, when refused 403
	}{
		// 401: the scope parameter is the provider's.
		{"401 names the tool's scope prefixed", p, "add", "", 401,
			`Bearer resource_metadata="` + prm + `", scope="` + p + `notes:write"`, ""},
		{"401 names every scope prefixed", p, "audit", "", 401,
			`Bearer resource_metadata="` + prm + `", scope="` + p + `notes:read ` + p + `audit"`, ""},
		{"401 for a refused token, prefixed", p, "search", "forged", 401,
			`Bearer resource_metadata="` + prm + `", scope="` + p + `notes:read", error="invalid_token"`, ""},
		{"401 reveals no hidden tool's scopes", p, "secret", "", 401, `Bearer resource_metadata="` + prm + `"`, ""},
		{"401 of an unknown tool names none", p, "nope", "", 401, `Bearer resource_metadata="` + prm + `"`, ""},

		// Grants.
		{"a prefixed scope grants the bare one", p, "search", "prefixed-reader", 200, "", ""},
		{"a prefixed scope implies as the bare one does", p, "search", "prefixed-writer", 200, "", ""},
		{"a prefixed scope grants its tool", p, "add", "prefixed-writer", 200, "", ""},
		{"a bare scope grants itself", p, "search", "bare-reader", 200, "", ""},
		{"a bare scope implies too", p, "search", "bare-writer", 200, "", ""},
		{"prefixed and bare scopes together", p, "audit", "mixed", 200, "", ""},

		// 403: the challenge and requiredScopes are the provider's.
		{"a prefixed scope short of the tool's", p, "add", "prefixed-reader", 403,
			`Bearer error="insufficient_scope", scope="` + p + `notes:write", resource_metadata="` + prm + `"`,
			`{"requiredScopes":["` + p + `notes:write"],"type":"insufficient_scope"}`},
		{"a bare scope short of the tool's", p, "add", "bare-reader", 403,
			`Bearer error="insufficient_scope", scope="` + p + `notes:write", resource_metadata="` + prm + `"`,
			`{"requiredScopes":["` + p + `notes:write"],"type":"insufficient_scope"}`},
		{"every scope the tool needs, prefixed", p, "audit", "prefixed-reader", 403,
			`Bearer error="insufficient_scope", scope="` + p + `notes:read ` + p + `audit", resource_metadata="` + prm + `"`,
			`{"requiredScopes":["` + p + `notes:read","` + p + `audit"],"type":"insufficient_scope"}`},
		{"another prefix grants nothing", p, "search", "foreign", 403,
			`Bearer error="insufficient_scope", scope="` + p + `notes:read", resource_metadata="` + prm + `"`,
			`{"requiredScopes":["` + p + `notes:read"],"type":"insufficient_scope"}`},
		{"the prefix is matched exactly", p, "search", "other-case", 403,
			`Bearer error="insufficient_scope", scope="` + p + `notes:read", resource_metadata="` + prm + `"`,
			`{"requiredScopes":["` + p + `notes:read"],"type":"insufficient_scope"}`},
		{"the prefix is removed once", p, "search", "twice", 403,
			`Bearer error="insufficient_scope", scope="` + p + `notes:read", resource_metadata="` + prm + `"`,
			`{"requiredScopes":["` + p + `notes:read"],"type":"insufficient_scope"}`},
		{"the prefix alone grants nothing", p, "search", "prefix", 403,
			`Bearer error="insufficient_scope", scope="` + p + `notes:read", resource_metadata="` + prm + `"`,
			`{"requiredScopes":["` + p + `notes:read"],"type":"insufficient_scope"}`},
		{"no scopes at all", p, "search", "none", 403,
			`Bearer error="insufficient_scope", scope="` + p + `notes:read", resource_metadata="` + prm + `"`,
			`{"requiredScopes":["` + p + `notes:read"],"type":"insufficient_scope"}`},
		{"a hidden tool is still an unknown tool", p, "secret", "prefixed-writer", 400, "", ""},

		// Without a prefix nothing changes.
		{"no prefix: 401 names bare scopes", "", "audit", "", 401,
			`Bearer resource_metadata="` + prm + `", scope="notes:read audit"`, ""},
		{"no prefix: a bare scope grants itself", "", "search", "bare-reader", 200, "", ""},
		{"no prefix: a prefixed scope is another scope", "", "search", "prefixed-writer", 403,
			`Bearer error="insufficient_scope", scope="notes:read", resource_metadata="` + prm + `"`,
			`{"requiredScopes":["notes:read"],"type":"insufficient_scope"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, principals := newPrefixServer(t, tt.prefix)
			var authz []string
			if tt.token != "" {
				authz = []string{"Bearer " + tt.token}
			}
			resp := challengedCall(t, s, tt.tool, authz, tt.status, tt.challenge)
			r := wire.DecodeRPC(t, resp.Body)
			switch tt.status {
			case 200:
				if r.Error != nil {
					t.Errorf("error %+v", r.Error)
				}
				if want := []string{"jwt:https://issuer.example.com#" + tt.token}; !slices.Equal(*principals, want) {
					t.Errorf("handler runs %q, want %q", *principals, want)
				}
			default:
				if r.Error == nil {
					t.Fatalf("no error: %s", resp.Body)
				}
				if len(*principals) != 0 {
					t.Errorf("a refused call ran the handler: %q", *principals)
				}
			}
			if tt.data != "" && string(r.Error.Data) != tt.data {
				t.Errorf("data = %s\nwant   %s", r.Error.Data, tt.data)
			}
		})
	}
}

// TestScopePrefixMetadata: ScopesSupported are listed as configured (the
// provider's names), neither prefixed again nor stripped.
func TestScopePrefixMetadata(t *testing.T) {
	for _, prefix := range []string{scopePrefix, ""} {
		_, res, _ := newPrefixServer(t, prefix)
		resp := res.ProtectedResourceMetadata(endpoint)
		if resp.Status != http.StatusOK {
			t.Fatalf("prefix %q: %d %s", prefix, resp.Status, resp.Body)
		}
		var doc struct {
			ScopesSupported []string `json:"scopes_supported"`
		}
		if err := json.Unmarshal(resp.Body, &doc); err != nil {
			t.Fatal(err)
		}
		if want := []string{scopePrefix + "notes:read", scopePrefix + "notes:write", "offline_access"}; !slices.Equal(doc.ScopesSupported, want) {
			t.Errorf("prefix %q: scopes_supported %q, want %q", prefix, doc.ScopesSupported, want)
		}
	}
}

// TestScopePrefixAdmit: the REST authorizer's decision reads a token's
// scopes as the server does and names the required scopes, in
// RequiredScopes and the challenge, as the provider issues them.
func TestScopePrefixAdmit(t *testing.T) {
	const p = scopePrefix
	tests := []struct {
		name     string
		prefix   string
		token    string // "" sends none
		tool     string
		kind     string // "" let through
		required []string
	}{
		{"no token: a 401 that names no scope", p, "", "add", "unauthorized", nil},
		{"a prefixed scope grants the bare one", p, "prefixed-reader", "search", "", nil},
		{"a prefixed scope implies as the bare one does", p, "prefixed-writer", "search", "", nil},
		{"a bare scope grants itself", p, "bare-reader", "search", "", nil},
		{"prefixed and bare scopes together", p, "mixed", "audit", "", nil},
		{"a prefixed scope short of the tool's", p, "prefixed-reader", "add", "insufficient_scope", []string{p + "notes:write"}},
		{"a bare scope short of the tool's", p, "bare-reader", "add", "insufficient_scope", []string{p + "notes:write"}},
		{"every scope the tool needs, prefixed", p, "none", "audit", "insufficient_scope", []string{p + "notes:read", p + "audit"}},
		{"another prefix grants nothing", p, "foreign", "search", "insufficient_scope", []string{p + "notes:read"}},
		{"a hidden tool is not judged", p, "none", "secret", "", nil},
		{"no prefix: bare names", "", "prefixed-writer", "audit", "insufficient_scope", []string{"notes:read", "audit"}},
		{"no prefix: a bare scope grants itself", "", "bare-writer", "add", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, _ := newPrefixServer(t, tt.prefix)
			h := http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {tt.tool}}
			if tt.token != "" {
				h.Set("Authorization", "Bearer "+tt.token)
			}
			adm := s.Admit(context.Background(), endpoint, h)
			kind := ""
			if adm.Refusal != nil {
				kind = adm.Refusal.Kind().String()
			}
			if kind != tt.kind || !slices.Equal(adm.RequiredScopes, tt.required) {
				t.Fatalf("Admit = %q, required %q; want %q, %q", kind, adm.RequiredScopes, tt.kind, tt.required)
			}
			switch tt.kind {
			case "insufficient_scope":
				want := `Bearer error="insufficient_scope", scope="` + strings.Join(tt.required, " ") + `", resource_metadata="` + prm + `"`
				if ch := adm.Refusal.Challenge(); ch != want {
					t.Errorf("challenge %s\nwant      %s", ch, want)
				}
				data, err := json.Marshal(adm.Refusal.Data())
				if err != nil {
					t.Fatal(err)
				}
				var d struct {
					RequiredScopes []string `json:"requiredScopes"`
				}
				if err := json.Unmarshal(data, &d); err != nil || !slices.Equal(d.RequiredScopes, tt.required) {
					t.Errorf("data %s, want requiredScopes %q", data, tt.required)
				}
			case "unauthorized":
				// An authorizer has no body to read a tool from: no scope.
				if ch, want := adm.Refusal.Challenge(), `Bearer resource_metadata="`+prm+`"`; ch != want {
					t.Errorf("challenge %s, want %s", ch, want)
				}
			case "":
				if want := "jwt:https://issuer.example.com#" + tt.token; adm.Principal != want {
					t.Errorf("principal %q, want %q", adm.Principal, want)
				}
			}
		})
	}
}
