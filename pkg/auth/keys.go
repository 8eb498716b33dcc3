package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Limits of the key fetches.
const (
	// fetchTimeout bounds one fetch (discovery and key set together), on
	// top of the HTTP client's own timeout, so that a client configured
	// without one cannot leave every later Verify waiting forever.
	fetchTimeout = 15 * time.Second
	// maxDocumentBytes bounds a discovery document or key set: real ones
	// are a few kilobytes.
	maxDocumentBytes = 1 << 20
	// minRSABits refuses RSA keys too short to trust (go-jose refuses
	// more than 4096 bits, which bounds the cost of a verification).
	minRSABits = 2048
)

// keyKind is what a key is, as far as choosing an algorithm goes.
type keyKind uint8

const (
	kindNone keyKind = iota
	kindRSA
	kindP256
	kindP384
	kindP521
	kindEd25519
)

// algKind is the kind of key each allowed algorithm verifies with.
func algKind(alg string) keyKind {
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		return kindRSA
	case "ES256":
		return kindP256
	case "ES384":
		return kindP384
	case "ES512":
		return kindP521
	case "EdDSA":
		return kindEd25519
	}
	return kindNone
}

// publicKey is one usable key of the issuer's set.
type publicKey struct {
	kid  string
	alg  string // the JWK's "alg", "" when it does not restrict one
	kind keyKind
	pub  crypto.PublicKey
}

// fits reports whether k may verify a signature made with alg: its kind
// matches, and its own "alg", if any, is alg (RFC 7517 §4.4).
func (k *publicKey) fits(alg string) bool {
	return k.kind == algKind(alg) && (k.alg == "" || k.alg == alg)
}

// keySet is an immutable snapshot of the issuer's usable keys.
type keySet struct {
	all   []*publicKey
	byKID map[string][]*publicKey
}

// lookup results.
type found uint8

const (
	keyFound     found = iota
	keyUnknown         // no key has that kid (or, without kid, none fits): a refresh may help
	keyMismatch        // the kid is known but its key is not for alg
	keyAmbiguous       // no kid, and more than one key fits
)

// find chooses the key for a token's kid and alg. Without a kid, the
// one key that fits alg is used, and several are ambiguous: trying each
// would let a token pick among the issuer's keys.
func (s *keySet) find(kid, alg string) (*publicKey, found) {
	if kid != "" {
		ks, ok := s.byKID[kid]
		if !ok {
			return nil, keyUnknown
		}
		for _, k := range ks {
			if k.fits(alg) {
				return k, keyFound
			}
		}
		return nil, keyMismatch
	}
	var match *publicKey
	for _, k := range s.all {
		if k.fits(alg) {
			if match != nil {
				return nil, keyAmbiguous
			}
			match = k
		}
	}
	if match == nil {
		return nil, keyUnknown
	}
	return match, keyFound
}

// parseKeySet reads a JWK set (RFC 7517 §5). Keys it cannot use are
// skipped, as the RFC asks, rather than failing the set: an issuer may
// publish encryption keys, symmetric keys or key types this server does
// not know next to its signing keys. A key carrying private material is
// skipped too: it is not a public key set's to carry, and trusting it
// would mean trusting a key anyone may hold. A set with no usable key
// is an error, so that a broken set never replaces a good one.
func parseKeySet(data []byte) (*keySet, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("key set is not a JSON JWK set: %w", err)
	}
	s := &keySet{byKID: map[string][]*publicKey{}}
	for _, raw := range doc.Keys {
		k, ok := usableKey(raw)
		if !ok {
			continue
		}
		s.all = append(s.all, k)
		if k.kid != "" {
			s.byKID[k.kid] = append(s.byKID[k.kid], k)
		}
	}
	if len(s.all) == 0 {
		return nil, fmt.Errorf("key set has no usable signing key (of %d)", len(doc.Keys))
	}
	return s, nil
}

// usableKey parses one JWK and reports whether it can verify signatures.
func usableKey(raw json.RawMessage) (*publicKey, bool) {
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(raw); err != nil || !jwk.Valid() || !jwk.IsPublic() {
		return nil, false
	}
	if jwk.Use != "" && jwk.Use != "sig" {
		return nil, false
	}
	k := &publicKey{kid: jwk.KeyID, alg: jwk.Algorithm, pub: jwk.Key}
	switch pub := jwk.Key.(type) {
	case *rsa.PublicKey:
		if pub.N.BitLen() < minRSABits {
			return nil, false
		}
		k.kind = kindRSA
	case *ecdsa.PublicKey:
		switch pub.Curve {
		case elliptic.P256():
			k.kind = kindP256
		case elliptic.P384():
			k.kind = kindP384
		case elliptic.P521():
			k.kind = kindP521
		default:
			return nil, false
		}
	case ed25519.PublicKey:
		k.kind = kindEd25519
	default:
		return nil, false
	}
	if k.alg != "" && algKind(k.alg) != k.kind {
		return nil, false // a key that says it is for an algorithm it cannot do
	}
	return k, true
}

// keyStore holds the issuer's keys and fetches them. Reads of the
// current set take no lock; fetches are serialized, and callers that need
// one while it runs wait for that one (a single flight), so a burst of
// tokens with a new kid costs the issuer one request.
type keyStore struct {
	issuer     string
	jwksURL    string // configured; "" means discover
	client     *http.Client
	minRefresh time.Duration
	now        func() time.Time

	current atomic.Pointer[keySet]

	mu          sync.Mutex
	discovered  string       // jwks_uri from discovery, once found
	inflight    *fetchResult // the fetch running now, if any
	lastRefresh time.Time    // when the last fetch for an unknown kid started
	lastErr     error        // how the last fetch failed, nil if it did not
}

// fetchResult is one fetch, shared by every caller waiting on it.
type fetchResult struct {
	done chan struct{} // closed when set and err are final
	set  *keySet
	err  error
}

func newKeyStore(issuer, jwksURL string, client *http.Client, minRefresh time.Duration, now func() time.Time) *keyStore {
	return &keyStore{issuer: issuer, jwksURL: jwksURL, client: client, minRefresh: minRefresh, now: now}
}

// key returns the public key for kid and alg, fetching the key set when
// none is held yet, or refreshing it when kid is unknown and the last
// fetch is at least minRefresh old.
func (s *keyStore) key(ctx context.Context, kid, alg string) (crypto.PublicKey, error) {
	if set := s.current.Load(); set != nil {
		if k, f := set.find(kid, alg); f == keyFound {
			return k.pub, nil
		} else if f != keyUnknown {
			return nil, refusal(f)
		}
	}

	s.mu.Lock()
	set := s.current.Load()
	if set != nil {
		// Another caller's fetch may have brought the key meanwhile.
		if k, f := set.find(kid, alg); f == keyFound {
			s.mu.Unlock()
			return k.pub, nil
		} else if f != keyUnknown {
			s.mu.Unlock()
			return nil, refusal(f)
		}
	}
	run := s.inflight
	if run == nil {
		now := s.now()
		if set != nil {
			if !s.lastRefresh.IsZero() && now.Sub(s.lastRefresh) < s.minRefresh {
				// Refreshed recently: the key really is unknown, unless
				// that refresh failed, in which case nobody can tell.
				err := s.lastErr
				s.mu.Unlock()
				if err != nil {
					return nil, err
				}
				return nil, errUnknownKey
			}
			s.lastRefresh = now
		}
		// Without keys there is nothing else to do but fetch, so that is
		// not limited; the single flight still bounds it.
		run = &fetchResult{done: make(chan struct{})}
		s.inflight = run
		// The fetch must not end with the caller that started it: others
		// wait for it too. It keeps ctx's values, for tracing.
		go s.fetch(context.WithoutCancel(ctx), run)
	}
	s.mu.Unlock()

	select {
	case <-run.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: waiting for the issuer's keys: %w", ErrUnavailable, context.Cause(ctx))
	}
	if run.err != nil {
		return nil, run.err
	}
	k, f := run.set.find(kid, alg)
	if f != keyFound {
		return nil, refusal(f)
	}
	return k.pub, nil
}

func refusal(f found) error {
	switch f {
	case keyMismatch:
		return errKeyMismatch
	case keyAmbiguous:
		return errAmbiguousKey
	}
	return errUnknownKey
}

// fetch gets the key set (discovering where it is first if need be) and
// publishes the outcome to run. A failure keeps the keys held before: a
// key set that cannot be refreshed is still the best knowledge there is.
func (s *keyStore) fetch(ctx context.Context, run *fetchResult) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	set, err := s.load(ctx)
	s.mu.Lock()
	if err != nil {
		run.err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		run.set = s.current.Load()
	} else {
		run.set = set
		s.current.Store(set)
	}
	s.lastErr = run.err
	s.inflight = nil
	s.mu.Unlock()
	close(run.done)
}

// load finds the key set's URL and fetches the set.
func (s *keyStore) load(ctx context.Context) (*keySet, error) {
	u := s.jwksURL
	if u == "" {
		s.mu.Lock()
		u = s.discovered
		s.mu.Unlock()
	}
	if u == "" {
		var err error
		if u, err = s.discover(ctx); err != nil {
			return nil, err
		}
		// Kept for the verifier's life: an issuer's jwks_uri does not
		// move, and the key set is what refreshes.
		s.mu.Lock()
		s.discovered = u
		s.mu.Unlock()
	}
	data, err := s.get(ctx, u)
	if err == nil {
		var set *keySet
		if set, err = parseKeySet(data); err == nil {
			return set, nil
		}
	}
	return nil, fmt.Errorf("key set %s: %w", u, err)
}

// metadataURLs are where the issuer's metadata may be, in the order they
// are tried: RFC 8414 §3.1 inserts the well-known segment between the
// host and the issuer's path; OpenID Connect Discovery 1.0 §4 appends it
// to the issuer. For an issuer without a path, the two differ only in the
// document's name.
func metadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil, err
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	origin := u.Scheme + "://" + u.Host
	return []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + path + "/.well-known/openid-configuration",
	}, nil
}

// discover returns the jwks_uri of the first metadata document that is
// the issuer's own. A document naming another issuer is not used (RFC
// 8414 §3.3): it is a misconfigured or impersonated issuer, the server's
// problem, not the token's, so it is ErrUnavailable.
func (s *keyStore) discover(ctx context.Context) (string, error) {
	urls, err := metadataURLs(s.issuer)
	if err != nil {
		return "", err
	}
	var errs []error
	for _, u := range urls {
		jwks, err := s.metadata(ctx, u)
		if err == nil {
			return jwks, nil
		}
		errs = append(errs, fmt.Errorf("metadata %s: %w", u, err))
		if ctx.Err() != nil {
			break
		}
	}
	return "", fmt.Errorf("discovering the issuer's keys: %w", errors.Join(errs...))
}

// metadata fetches one metadata document and returns its jwks_uri.
func (s *keyStore) metadata(ctx context.Context, u string) (string, error) {
	data, err := s.get(ctx, u)
	if err != nil {
		return "", err
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("not a JSON metadata document: %w", err)
	}
	if doc.Issuer != s.issuer {
		return "", fmt.Errorf("document is for issuer %q, not %q", doc.Issuer, s.issuer)
	}
	if doc.JWKSURI == "" {
		return "", errors.New("document has no jwks_uri")
	}
	if err := checkURL(doc.JWKSURI); err != nil {
		return "", fmt.Errorf("jwks_uri: %w", err)
	}
	return doc.JWKSURI, nil
}

// get fetches u and returns its body, which must come with status 200 and
// be at most maxDocumentBytes.
func (s *keyStore) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10)) // reuse the connection
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxDocumentBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxDocumentBytes)
	}
	return data, nil
}

// checkURL accepts the issuer's URLs: absolute, https (OAuth 2.1 §1.5:
// tokens and keys only over TLS) or http on a loopback host, for tests
// and local runs, without query or fragment (RFC 8414 §2 for the issuer;
// for key URLs it keeps them plain).
func checkURL(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	if u.Host == "" || u.User != nil {
		return fmt.Errorf("%q is not an absolute URL with a host", s)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") {
		return fmt.Errorf("%q has a query or fragment", s)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && isLoopback(u.Hostname()):
	default:
		return fmt.Errorf("%q is neither https nor http on a loopback host", s)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkRedirect is the default client's: a redirect must stay on URLs
// checkURL accepts, so https never turns into plain http.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("too many redirects")
	}
	u := *req.URL
	u.RawQuery, u.ForceQuery = "", false
	return checkURL(u.String())
}
