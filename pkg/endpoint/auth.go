package endpoint

import (
	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
)

// newAuth returns the endpoint as an OAuth protected resource when an
// issuer is configured, else nil (anonymous). The verifier makes no
// network call until the first token arrives, so a cold start pays
// nothing for it.
func newAuth(cfg *Config, o *Options, clients *Clients, proxy func() (reqstate.Sealer, auth.Spender)) (*auth.Resource, error) {
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
	res := &auth.Resource{
		Tokens:               v,
		AuthorizationServers: []string{cfg.AuthIssuer},
		ScopesSupported:      scopes,
		ResourceName:         o.ResourceName,
		ScopePrefix:          cfg.AuthScopePrefix,
		Registration:         cfg.AuthRegistration,
	}
	if p, reg := cfg.AuthProxy, cfg.AuthRegistration; p != nil {
		sealer, codes := proxy()
		res.Proxy = &auth.Proxy{
			ClientID: reg.ClientID, AuthorizationEndpoint: reg.AuthorizationEndpoint, TokenEndpoint: reg.TokenEndpoint,
			Issuer: cfg.AuthIssuer, RedirectURIs: reg.RedirectURIs, PreApproved: p.PreApproved, OmitResource: p.OmitResource,
			Sealer: sealer, Codes: codes, Documents: &auth.ClientMetadataDocuments{PrivateHosts: p.PrivateHosts},
		}
		if p.ClientSecretARN != "" {
			res.Proxy.ClientSecret = (&cachedSecret{aws: clients, id: p.ClientSecretARN}).Get
		}
	}
	return res, nil
}
