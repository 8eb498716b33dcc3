package endpoint

import (
	"context"
	"errors"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// newAuth returns the endpoint's authorization when an issuer is
// configured, else nil (anonymous). The verifier makes no network call
// until the first token arrives, so a cold start pays nothing for it.
func newAuth(cfg *Config, o *Options) (*stateless.AuthOptions, error) {
	if cfg.AuthIssuer == "" {
		return nil, nil
	}
	v, err := auth.New(auth.Config{Issuer: cfg.AuthIssuer, JWKSURL: cfg.AuthJWKSURL, ClientIDs: cfg.AuthClientIDs, Audiences: cfg.AuthAudiences})
	if err != nil {
		return nil, err
	}
	// Configured scopes are the provider's names already; the function's
	// own take the provider's prefix.
	scopes := cfg.AuthScopesSupported
	if scopes == nil {
		for _, s := range o.DefaultScopes {
			scopes = append(scopes, cfg.AuthScopePrefix+s)
		}
	}
	return &stateless.AuthOptions{
		Authenticator:        verifier{v},
		AuthorizationServers: []string{cfg.AuthIssuer},
		ScopesSupported:      scopes,
		ScopeImplies:         o.ScopeImplies,
		ResourceName:         o.ResourceName,
		ScopePrefix:          cfg.AuthScopePrefix,
		Registration:         cfg.AuthRegistration,
	}, nil
}

// verifier adapts pkg/auth's verifier to the server: the token's fault
// is a 401, a key service that cannot be reached fails the request
// closed as a retryable server fault.
type verifier struct{ v *auth.Verifier }

func (a verifier) Authenticate(ctx context.Context, token, audience string) (string, []string, *mcperr.Error) {
	t, err := a.v.Verify(ctx, token, audience)
	switch {
	case err == nil:
		return auth.Principal(t), t.Scopes, nil
	case errors.Is(err, auth.ErrUnavailable):
		return "", nil, mcperr.NewRetryable(mcperr.KindDependencyFailure, time.Second, err)
	}
	return "", nil, mcperr.Wrap(mcperr.KindUnauthorized, err)
}
