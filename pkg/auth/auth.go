// Package auth is the resource server's side of MCP authorization, all
// that is OAuth's and not the protocol's: the endpoint as a protected
// resource ([Resource], the server's stateless.Authenticator: the bearer
// token of each request, the challenges of a refusal, the provider's
// names of scopes), its documents (the protected-resource metadata, RFC
// 9728; the registration facade's authorization server metadata, RFC
// 8414, and registration endpoint, RFC 7591) and the one routing table
// that serves them beside the endpoint on both doors and reports each
// answer ([Documents]), and the verification of the OAuth 2.1 bearer
// tokens that clients present, as JWT access tokens (RFC 9068) signed by
// one authorization server and issued for this resource (RFC 8707).
//
// A [Verifier] is built once, at start, from a [Config] naming the issuer.
// [New] only checks the configuration: it makes no network call, so a
// Lambda cold start costs the same with authorization as without. The
// issuer's signing keys are discovered on the first token (RFC 8414
// metadata, falling back to OpenID Connect discovery), kept, and refreshed
// when a token names a key that is not among them, at most once per
// Config.MinRefresh however many requests ask, so that tokens with invented
// key ids cannot make the endpoint hammer the issuer.
//
// [Verifier.Verify] answers one of three ways, and the difference matters
// to the client:
//
//   - a [Token]: the signature, issuer, lifetime and audience are good;
//   - an error wrapping [ErrInvalid]: the token's fault (HTTP 401 with
//     error="invalid_token"; the client gets a new token);
//   - an error wrapping [ErrUnavailable]: the issuer's metadata or keys
//     cannot be had, so nothing can be decided. The request fails closed as
//     a retryable server fault; the client should retry, not re-authorize.
//
// Error messages name the failing check and never contain bytes of the
// token, so they are safe to log. Scope checks are the server's
// (stateless.MissingScopes), because the scopes a request needs depend on
// the operation, which the server's registry knows and this package does
// not.
//
// JOSE parsing and signature verification are github.com/go-jose/go-jose/v4
// (its JWK parsing, its compact JWS with an algorithm allow-list, its
// NumericDate); see docs/auth.md for why, with measurements.
package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// ErrInvalid is wrapped by every refusal that is the token's fault:
// malformed, encrypted, an algorithm not allowed, a bad signature, a key id
// unknown even after a refresh, another issuer, another audience, expired,
// not yet valid, no expiry, no subject. The caller answers 401
// invalid_token. An empty audience argument to Verify, a programming error,
// is refused the same way rather than accepting any audience.
var ErrInvalid = errors.New("auth: invalid token")

// ErrUnavailable is wrapped when the issuer's discovery document or key set
// cannot be fetched or is unusable (unreachable, an error status, not JSON,
// another issuer, no usable key), or when the caller's context ends while
// waiting for them. Nothing is accepted without keys: the request fails
// closed, and it is a server fault that a retry may cure.
var ErrUnavailable = errors.New("auth: token issuer unavailable")

// Defaults and bounds of Config.
const (
	// DefaultLeeway is the clock skew allowed on exp, nbf and iat.
	DefaultLeeway = 30 * time.Second
	// MaxLeeway bounds Config.Leeway: more would keep expired tokens alive.
	MaxLeeway = 5 * time.Minute
	// DefaultMinRefresh is the least time between two key-set fetches
	// caused by unknown key ids.
	DefaultMinRefresh = 30 * time.Second
	// DefaultHTTPTimeout is the timeout of the default HTTP client, per
	// request to the issuer.
	DefaultHTTPTimeout = 5 * time.Second
)

// DefaultAlgorithms are the JWS algorithms accepted when Config.Algorithms
// is empty: every asymmetric algorithm of RFC 7518 and EdDSA (RFC 8037).
// A function, so that no caller can change the default of another.
func DefaultAlgorithms() []string {
	return []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
}

// Config configures a Verifier. Only Issuer is required.
type Config struct {
	// Issuer is the authorization server's issuer identifier. A token's
	// "iss" must equal it exactly (no normalization: RFC 8414 and RFC 9068
	// compare identifiers as strings), and the keys are discovered from
	// it. It must be https, or http on a loopback host (for tests and
	// local runs), and have no query or fragment.
	Issuer string
	// JWKSURL, when set, is the issuer's key set; discovery is skipped.
	// The same scheme rule as Issuer applies.
	JWKSURL string
	// Algorithms is the allow-list of JWS "alg" values; empty means
	// DefaultAlgorithms. Only asymmetric algorithms can be listed: "none"
	// and HS256/HS384/HS512 are refused by New, because a resource server
	// holding a shared secret could mint tokens, and because allowing HMAC
	// next to public keys is the classic algorithm-confusion hole.
	Algorithms []string
	// Leeway is the clock skew allowed on exp, nbf and iat; zero means
	// DefaultLeeway. Negative or more than MaxLeeway is refused by New.
	Leeway time.Duration
	// MinRefresh is the least time between two key-set fetches caused by
	// tokens naming an unknown key; zero means DefaultMinRefresh. The
	// first fetch, while no key is known yet, is not limited.
	MinRefresh time.Duration
	// ClientIDs, when set, admit access tokens that carry no "aud" at all
	// when their "client_id" is one of these and their "token_use" is
	// "access": Amazon Cognito's access tokens name no audience (RFC 9068
	// and RFC 8707 are not supported there), and an app client created
	// for this endpoint alone is what binds them to it. A token that has
	// an "aud" must still name this resource. Leave it empty for any
	// authorization server that issues audience-bound tokens.
	ClientIDs []string
	// Audiences, when set, are accepted in "aud" besides the audience
	// each Verify call names (the endpoint's canonical URL): identifiers
	// the provider gives this same resource, such as the application
	// (client) id Microsoft Entra ID puts in a v2.0 access token's "aud",
	// or its Application ID URI. Only an operator names them: each must
	// identify this resource and nothing else at the issuer.
	Audiences []string
	// HTTPClient fetches the issuer's metadata and keys; nil means a
	// client with a DefaultHTTPTimeout timeout that follows redirects only
	// to URLs the Issuer rule would accept.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Token is what a verified access token says. It carries no raw token
// bytes, so it is safe to keep and to log.
type Token struct {
	Issuer   string   // "iss", equal to Config.Issuer
	Subject  string   // "sub": the resource owner, or the client for client credentials
	ClientID string   // "client_id" (RFC 9068), else "azp"; empty when neither is present
	Audience []string // "aud", as the token has it (one of them is the audience verified)
	Scopes   []string // "scope" split on spaces (RFC 9068), else "scp" (array or string)
	Expiry   time.Time
}

// Principal returns the identity the project binds state to for a JWT
// caller: "jwt:" + iss + "#" + sub. The issuer is part of it so that a
// subject of one authorization server is never taken for the same
// subject of another. It returns "" for a nil token.
func Principal(t *Token) string {
	if t == nil {
		return ""
	}
	return "jwt:" + t.Issuer + "#" + t.Subject
}

// Verifier verifies access tokens of one issuer for any audience the
// caller names. It is safe for concurrent use, and should be shared: it
// holds the issuer's keys.
type Verifier struct {
	issuer  string
	algs    []jose.SignatureAlgorithm
	leeway  time.Duration
	now     func() time.Time
	keys    *keyStore
	lastAud audCache
	// clientIDs admit audience-less tokens of these clients (ClientIDs).
	clientIDs map[string]bool
	// audiences are the other audiences accepted (Audiences), canonical.
	audiences map[string]bool
}

// maxTokenBytes bounds the token Verify will look at. API Gateway limits
// a request's headers to about 10 KB, and real access tokens are far
// smaller; the bound keeps parsing of hostile input cheap everywhere else.
const maxTokenBytes = 16 << 10

// New checks cfg and returns a Verifier. It makes no network call: the
// issuer is first contacted by the first Verify that needs its keys.
func New(cfg Config) (*Verifier, error) {
	if err := checkURL(cfg.Issuer); err != nil {
		return nil, fmt.Errorf("auth: Config.Issuer: %w", err)
	}
	if cfg.JWKSURL != "" {
		if err := checkURL(cfg.JWKSURL); err != nil {
			return nil, fmt.Errorf("auth: Config.JWKSURL: %w", err)
		}
	}
	algs, err := allowedAlgorithms(cfg.Algorithms)
	if err != nil {
		return nil, err
	}
	leeway := cfg.Leeway
	switch {
	case leeway < 0 || leeway > MaxLeeway:
		return nil, fmt.Errorf("auth: Config.Leeway %v is outside 0 to %v", leeway, MaxLeeway)
	case leeway == 0:
		leeway = DefaultLeeway
	}
	minRefresh := cfg.MinRefresh
	switch {
	case minRefresh < 0:
		return nil, fmt.Errorf("auth: Config.MinRefresh %v is negative", minRefresh)
	case minRefresh == 0:
		minRefresh = DefaultMinRefresh
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: DefaultHTTPTimeout, CheckRedirect: checkRedirect}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	clientIDs, err := stringSet("ClientIDs", "client id", cfg.ClientIDs, func(s string) string { return s })
	if err != nil {
		return nil, err
	}
	audiences, err := stringSet("Audiences", "audience", cfg.Audiences, canonicalAudience)
	if err != nil {
		return nil, err
	}
	return &Verifier{
		issuer:    cfg.Issuer,
		algs:      algs,
		leeway:    leeway,
		now:       now,
		keys:      newKeyStore(cfg.Issuer, cfg.JWKSURL, client, minRefresh, now),
		clientIDs: clientIDs,
		audiences: audiences,
	}, nil
}

// asymmetric maps the JWS algorithms that may be allowed to go-jose's.
var asymmetric = map[string]jose.SignatureAlgorithm{
	"RS256": jose.RS256, "RS384": jose.RS384, "RS512": jose.RS512,
	"PS256": jose.PS256, "PS384": jose.PS384, "PS512": jose.PS512,
	"ES256": jose.ES256, "ES384": jose.ES384, "ES512": jose.ES512,
	"EdDSA": jose.EdDSA,
}

// allowedAlgorithms validates Config.Algorithms.
func allowedAlgorithms(names []string) ([]jose.SignatureAlgorithm, error) {
	if len(names) == 0 {
		names = DefaultAlgorithms()
	}
	algs := make([]jose.SignatureAlgorithm, 0, len(names))
	for _, n := range names {
		a, ok := asymmetric[n]
		switch {
		case ok:
			if !slices.Contains(algs, a) {
				algs = append(algs, a)
			}
		case strings.EqualFold(n, "none"):
			return nil, fmt.Errorf("auth: Config.Algorithms: %q would accept unsigned tokens and can never be allowed", n)
		case strings.HasPrefix(strings.ToUpper(n), "HS"):
			return nil, fmt.Errorf("auth: Config.Algorithms: %q is symmetric (a shared secret) and can never be allowed", n)
		default:
			return nil, fmt.Errorf("auth: Config.Algorithms: unknown algorithm %q", n)
		}
	}
	return algs, nil
}

// Verify checks raw, the bearer token of one request, for audience, this
// resource's canonical URI (or configured audience). It returns the
// token's claims, or an error wrapping ErrInvalid (the token's fault) or
// ErrUnavailable (the issuer's keys cannot be had). ctx bounds only the
// wait for the issuer's keys, when they must be fetched; a warm Verify
// does no I/O.
//
// In order: the token's shape (three base64url parts; a JWE's five are
// refused), its header (an allowed "alg", an access-token or absent
// "typ", no "crit"), the key named by "kid", the signature, then the
// claims: "iss", "exp" (required), "nbf", "iat", "aud" and "sub".
func (v *Verifier) Verify(ctx context.Context, raw, audience string) (*Token, error) {
	if audience == "" {
		return nil, errNoAudienceArg
	}
	if len(raw) > maxTokenBytes {
		return nil, errTooLarge
	}
	if err := checkCompact(raw); err != nil {
		return nil, err
	}
	jws, err := jose.ParseSignedCompact(raw, v.algs)
	if err != nil {
		if _, ok := errors.AsType[*jose.ErrUnexpectedSignatureAlgorithm](err); ok {
			return nil, errAlgorithm
		}
		// go-jose's messages may quote header values: never pass them on.
		return nil, errMalformed
	}
	h := jws.Signatures[0].Header
	if err := checkHeader(h); err != nil {
		return nil, err
	}
	key, err := v.keys.key(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		return nil, err
	}
	payload, err := jws.Verify(key)
	if err != nil {
		return nil, errSignature
	}
	var c tokenClaims
	if err := c.decode(payload); err != nil {
		return nil, err
	}
	return v.check(&c, audience)
}

// stringSet is the set of values, each as canon gives it (nil when there
// are none); an empty value is refused, naming the Config field.
func stringSet(field, what string, values []string, canon func(string) string) (map[string]bool, error) {
	var set map[string]bool
	for _, v := range values {
		if v == "" {
			return nil, fmt.Errorf("auth: Config.%s holds an empty %s", field, what)
		}
		if set == nil {
			set = map[string]bool{}
		}
		set[canon(v)] = true
	}
	return set, nil
}

// check validates decoded, signature-checked claims.
func (v *Verifier) check(c *tokenClaims, audience string) (*Token, error) {
	if !c.hasIss || c.iss != v.issuer {
		return nil, errIssuer
	}
	now := v.now()
	if c.exp == nil {
		return nil, errNoExpiry
	}
	exp := c.exp.Time()
	// RFC 7519: valid before exp, from nbf on; the leeway widens both.
	if !now.Before(exp.Add(v.leeway)) {
		return nil, errExpired
	}
	if c.nbf != nil && now.Add(v.leeway).Before(c.nbf.Time()) {
		return nil, errNotYetValid
	}
	if c.iat != nil && now.Add(v.leeway).Before(c.iat.Time()) {
		return nil, errIssuedInFuture
	}
	want := v.lastAud.canonical(audience)
	matched := false
	for _, a := range c.aud {
		if ca := canonicalAudience(a); ca == want || v.audiences[ca] {
			matched = true
			break
		}
	}
	if !matched && !(!c.hasAud && c.tokenUse == "access" && c.clientID != "" && v.clientIDs[c.clientID]) {
		return nil, errAudience
	}
	if c.sub == "" {
		return nil, errNoSubject
	}
	scopes := c.scope
	if !c.hasScope {
		scopes = c.scp
	}
	clientID := c.clientID
	if clientID == "" {
		clientID = c.azp
	}
	return &Token{
		Issuer:   c.iss,
		Subject:  c.sub,
		ClientID: clientID,
		Audience: c.aud,
		Scopes:   scopes,
		Expiry:   exp,
	}, nil
}

// The refusals. Each names the check that failed and nothing the token
// said; they are values, built once, because a refusal must be cheap
// when tokens are hostile.
var (
	errNoAudienceArg  = fmt.Errorf("%w: no audience to verify against (a caller bug)", ErrInvalid)
	errTooLarge       = fmt.Errorf("%w: longer than %d bytes", ErrInvalid, maxTokenBytes)
	errMalformed      = fmt.Errorf("%w: malformed (not a compact JWS with a JSON header)", ErrInvalid)
	errEncrypted      = fmt.Errorf("%w: encrypted (JWE) tokens are not accepted", ErrInvalid)
	errBase64         = fmt.Errorf("%w: malformed (a part is not unpadded canonical base64url)", ErrInvalid)
	errAlgorithm      = fmt.Errorf("%w: algorithm not allowed", ErrInvalid)
	errType           = fmt.Errorf("%w: typ is not an access token type", ErrInvalid)
	errCritical       = fmt.Errorf("%w: critical header extensions are not supported", ErrInvalid)
	errUnknownKey     = fmt.Errorf("%w: no issuer key matches kid and alg", ErrInvalid)
	errKeyMismatch    = fmt.Errorf("%w: the key named by kid is not for alg", ErrInvalid)
	errAmbiguousKey   = fmt.Errorf("%w: no kid, and several issuer keys fit alg", ErrInvalid)
	errSignature      = fmt.Errorf("%w: bad signature", ErrInvalid)
	errClaims         = fmt.Errorf("%w: malformed claims", ErrInvalid)
	errDuplicateClaim = fmt.Errorf("%w: a registered claim appears twice", ErrInvalid)
	errIssuer         = fmt.Errorf("%w: issuer mismatch", ErrInvalid)
	errNoExpiry       = fmt.Errorf("%w: no exp claim", ErrInvalid)
	errExpired        = fmt.Errorf("%w: expired", ErrInvalid)
	errNotYetValid    = fmt.Errorf("%w: not yet valid (nbf)", ErrInvalid)
	errIssuedInFuture = fmt.Errorf("%w: issued in the future (iat)", ErrInvalid)
	errAudience       = fmt.Errorf("%w: audience is not this resource", ErrInvalid)
	errNoSubject      = fmt.Errorf("%w: no sub claim", ErrInvalid)
)
