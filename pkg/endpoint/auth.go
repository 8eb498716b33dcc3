package endpoint

import (
	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
)

// newAuth returns the endpoint as an OAuth protected resource when an
// issuer is configured, else nil (anonymous). The verifier makes no
// network call until the first token arrives, so a cold start pays
// nothing for it.
func newAuth(cfg *Config, o *Options) (*auth.Resource, error) {
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
	return &auth.Resource{
		Tokens:               v,
		AuthorizationServers: []string{cfg.AuthIssuer},
		ScopesSupported:      scopes,
		ResourceName:         o.ResourceName,
		ScopePrefix:          cfg.AuthScopePrefix,
		Registration:         cfg.AuthRegistration,
	}, nil
}
