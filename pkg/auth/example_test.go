package auth_test

import (
	"errors"
	"log"
	"net/http"
	"strings"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// A resource server verifies the bearer token of each request for its
// own canonical URI, then checks the scopes the operation needs.
func ExampleVerifier_Verify() {
	v, err := auth.New(auth.Config{Issuer: "https://as.example.com"}) // once, at start: no network
	if err != nil {
		log.Fatal(err)
	}
	handler := func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		tok, err := v.Verify(r.Context(), raw, "https://mcp.example.com/mcp")
		switch {
		case errors.Is(err, auth.ErrUnavailable):
			http.Error(w, "Service Unavailable", http.StatusServiceUnavailable) // retryable, not the client's fault
			return
		case err != nil:
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		if missing := stateless.MissingScopes(tok.Scopes, []string{"notes:write"}, nil); missing != nil {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="notes:write"`)
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		_ = auth.Principal(tok) // "jwt:https://as.example.com#<sub>": whom state is bound to
	}
	_ = handler
}
