package auth_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
)

// TestAudiencesAdmitTheProvidersIdentifiers: with Audiences, a token
// whose "aud" is another identifier of this resource (the application id
// Entra ID puts in a v2.0 access token, or its Application ID URI) is
// accepted besides one for the audience Verify names, after the same
// canonicalisation; any other audience is still refused, and no other
// check is relaxed.
func TestAudiencesAdmitTheProvidersIdentifiers(t *testing.T) {
	const (
		appID  = "6e74172b-be56-4843-9ff4-e66a39bb12e3"
		appURI = "https://notes.example.com/api"
	)
	k := testKeys()
	f := newIssuer(t, "", jwk(k.rsa, "r1", nil))
	clk := newClock()
	token := func(changes map[string]any) string {
		return mint("RS256", k.rsa, map[string]any{"kid": "r1"}, with(claimsFor(f.issuer, clk.Now()), changes))
	}
	strict := f.verifier(t, clk, auth.Config{})
	entra := f.verifier(t, clk, auth.Config{Audiences: []string{appID}})
	uri := f.verifier(t, clk, auth.Config{Audiences: []string{appURI}})
	// An Audiences entry is canonicalised as an "aud" is.
	uriSpelled := f.verifier(t, clk, auth.Config{Audiences: []string{"HTTPS://Notes.Example.COM:443/api/"}})
	both := f.verifier(t, clk, auth.Config{Audiences: []string{appID, appURI}})
	tests := []struct {
		name   string
		v      *auth.Verifier
		token  string
		reason string // "" accepted, else what the refusal names
	}{
		{"an application id is no audience of this resource", strict, token(map[string]any{"aud": appID}), "audience"},
		{"a listed application id", entra, token(map[string]any{"aud": appID}), ""},
		{"a listed application id in an aud array", entra, token(map[string]any{"aud": []string{"https://other.example.com", appID}}), ""},
		{"the endpoint's URL still", entra, token(nil), ""},
		{"an application id is compared exactly", entra, token(map[string]any{"aud": strings.ToUpper(appID)}), "audience"},
		{"another application id", entra, token(map[string]any{"aud": "00000003-0000-0000-c000-000000000000"}), "audience"},
		{"a URI not listed", strict, token(map[string]any{"aud": appURI}), "audience"},
		{"a listed URI", uri, token(map[string]any{"aud": appURI}), ""},
		{"a listed URI with an upper-case host", uri, token(map[string]any{"aud": "https://NOTES.EXAMPLE.COM/api"}), ""},
		{"a listed URI with the default port and a trailing slash", uri, token(map[string]any{"aud": "HTTPS://notes.example.com:443/api/"}), ""},
		{"a listed URI spelled otherwise in Audiences", uriSpelled, token(map[string]any{"aud": appURI}), ""},
		{"a URI of another path", uri, token(map[string]any{"aud": "https://notes.example.com/other"}), "audience"},
		{"a URI over http", uri, token(map[string]any{"aud": "http://notes.example.com/api"}), "audience"},
		{"a URI whose path differs in case", uri, token(map[string]any{"aud": "https://notes.example.com/API"}), "audience"},
		{"either of two", both, token(map[string]any{"aud": appURI}), ""},
		{"neither", both, token(map[string]any{"aud": "https://" + marker + ".example/mcp"}), "audience"},
		{"no audience", both, token(map[string]any{"aud": del}), "audience"},
		{"an empty aud array", both, token(map[string]any{"aud": []string{}}), "audience"},

		// The other checks hold.
		{"another issuer", entra, token(map[string]any{"aud": appID, "iss": "https://" + marker + ".example"}), "issuer"},
		{"expired", entra, token(map[string]any{"aud": appID, "exp": clk.Now().Add(-time.Minute).Unix()}), "expired"},
		{"no sub", entra, token(map[string]any{"aud": appID, "sub": del}), "sub"},
		{"a bad signature", entra, mint("RS256", k.rsa2, map[string]any{"kid": "r1"}, with(claimsFor(f.issuer, clk.Now()), map[string]any{"aud": appID})), "signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := tt.v.Verify(context.Background(), tt.token, audience)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tok.Subject != "user-1" || tok.Issuer != f.issuer || len(tok.Audience) == 0 {
					t.Errorf("token %+v", tok)
				}
				return
			}
			if !errors.Is(err, auth.ErrInvalid) || tok != nil {
				t.Fatalf("got %+v, %v; want ErrInvalid", tok, err)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("error %q does not name %q", err, tt.reason)
			}
			checkNoTokenBytes(t, err, tt.token)
		})
	}

	// The accepted token's claims are the token's: Audience is its aud.
	tok, err := entra.Verify(context.Background(), token(map[string]any{"aud": appID}), audience)
	if err != nil || !slices.Equal(tok.Audience, []string{appID}) {
		t.Errorf("Verify = %+v, %v; want the token's own audience", tok, err)
	}
}

func TestAudiencesConfig(t *testing.T) {
	const iss = "https://issuer.example.com"
	for _, bad := range [][]string{{""}, {"6e74172b-be56-4843-9ff4-e66a39bb12e3", ""}} {
		if v, err := auth.New(auth.Config{Issuer: iss, Audiences: bad}); err == nil || v != nil || !strings.Contains(err.Error(), "Audiences") {
			t.Errorf("Audiences %q: %v, %v; want an error naming Config.Audiences", bad, v, err)
		}
	}
	if _, err := auth.New(auth.Config{Issuer: iss, Audiences: []string{"6e74172b-be56-4843-9ff4-e66a39bb12e3", "api://notes"}}); err != nil {
		t.Errorf("two audiences: %v", err)
	}
}
