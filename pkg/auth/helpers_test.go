package auth_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"hash"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
)

// The test keys, made once per test binary: RSA generation is slow.
var testKeys = sync.OnceValue(func() (k struct {
	rsa, rsa2 *rsa.PrivateKey
	ec        *ecdsa.PrivateKey
	ed        ed25519.PrivateKey
}) {
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.rsa2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		panic(err)
	}
	if _, k.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		panic(err)
	}
	return k
})

// audience is the resource the tests' tokens are for.
const audience = "https://mcp.example.com/mcp"

// epoch is the tests' fixed "now".
var epoch = time.Unix(1_900_000_000, 0)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: epoch} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jwk is the public JWK of key under kid, with extra members.
func jwk(key any, kid string, extra map[string]any) map[string]any {
	m := map[string]any{"kid": kid}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		m["kty"], m["n"], m["e"] = "RSA", b64(k.N.Bytes()), b64(big.NewInt(int64(k.E)).Bytes())
	case *ecdsa.PrivateKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		pt, err := k.PublicKey.Bytes() // 0x04 || x || y
		if err != nil {
			panic(err)
		}
		m["kty"], m["crv"], m["x"], m["y"] = "EC", k.Curve.Params().Name, b64(pt[1:1+size]), b64(pt[1+size:])
	case ed25519.PrivateKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64(k.Public().(ed25519.PublicKey))
	default:
		panic("jwk: unknown key type")
	}
	if kid == "" {
		delete(m, "kid")
	}
	for name, v := range extra {
		m[name] = v
	}
	return m
}

// claimsFor are a valid token's claims for iss at now.
func claimsFor(iss string, now time.Time) map[string]any {
	return map[string]any{
		"iss":       iss,
		"sub":       "user-1",
		"aud":       audience,
		"exp":       now.Add(time.Hour).Unix(),
		"iat":       now.Unix(),
		"nbf":       now.Unix(),
		"jti":       "id-1",
		"client_id": "client-1",
		"scope":     "notes:read notes:write",
	}
}

// with returns a copy of m with the members of changes set, and those
// whose value is del removed.
func with(m map[string]any, changes map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for k, v := range changes {
		if v == del {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// del marks a member to remove in with.
var del = &struct{ name string }{"delete"}

// signingInput is the first two parts of a compact JWS.
func signingInput(header, tokenClaims any) string {
	enc := func(v any) string {
		if raw, ok := v.(json.RawMessage); ok {
			return b64(raw)
		}
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return b64(b)
	}
	return enc(header) + "." + enc(tokenClaims)
}

// sign signs input with alg under key, returning the signature bytes.
func sign(alg string, key any, input string) []byte {
	hashes := map[string]crypto.Hash{"256": crypto.SHA256, "384": crypto.SHA384, "512": crypto.SHA512}
	digest := func(h crypto.Hash) []byte {
		w := h.New()
		w.Write([]byte(input))
		return w.Sum(nil)
	}
	switch {
	case alg == "none":
		return nil
	case alg == "EdDSA":
		return ed25519.Sign(key.(ed25519.PrivateKey), []byte(input))
	case strings.HasPrefix(alg, "HS"):
		newHash := map[string]func() hash.Hash{"256": sha256.New, "384": sha512.New384, "512": sha512.New}[alg[2:]]
		m := hmac.New(newHash, key.([]byte))
		m.Write([]byte(input))
		return m.Sum(nil)
	case strings.HasPrefix(alg, "RS"):
		h := hashes[alg[2:]]
		sig, err := rsa.SignPKCS1v15(nil, key.(*rsa.PrivateKey), h, digest(h))
		if err != nil {
			panic(err)
		}
		return sig
	case strings.HasPrefix(alg, "PS"):
		h := hashes[alg[2:]]
		sig, err := rsa.SignPSS(rand.Reader, key.(*rsa.PrivateKey), h, digest(h), &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		if err != nil {
			panic(err)
		}
		return sig
	case strings.HasPrefix(alg, "ES"):
		k := key.(*ecdsa.PrivateKey)
		r, s, err := ecdsa.Sign(rand.Reader, k, digest(hashes[alg[2:]]))
		if err != nil {
			panic(err)
		}
		size := (k.Curve.Params().BitSize + 7) / 8
		sig := make([]byte, 2*size)
		r.FillBytes(sig[:size])
		s.FillBytes(sig[size:])
		return sig
	}
	panic("sign: unknown alg " + alg)
}

// mint returns a compact JWS of claims with header (alg is set from alg),
// signed under key.
func mint(alg string, key any, header map[string]any, tokenClaims any) string {
	h := with(header, map[string]any{"alg": alg})
	in := signingInput(h, tokenClaims)
	return in + "." + b64(sign(alg, key, in))
}

// fakeIssuer is an authorization server's metadata and key set, served
// over HTTP on loopback, counting what it is asked.
type fakeIssuer struct {
	srv    *httptest.Server
	issuer string // the issuer identifier: the server's URL and path

	mu         sync.Mutex
	keys       []map[string]any // the published key set
	docIssuer  string           // "issuer" in the metadata; default issuer
	serve      string           // "" both documents, "rfc8414" or "oidc" only
	jwksStatus int              // 0: 200
	jwksBody   string           // served instead of the keys when set
	gate       chan struct{}    // when set, key set requests wait for it to close
	paths      []string         // every path requested

	metaHits, jwksHits atomic.Int32
}

// newIssuer serves an issuer at path ("" or "/tenant") publishing keys.
func newIssuer(t *testing.T, path string, keys ...map[string]any) *fakeIssuer {
	f := &fakeIssuer{keys: keys}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	f.issuer = f.srv.URL + path
	return f
}

func (f *fakeIssuer) handle(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.paths = append(f.paths, r.URL.Path)
	path := strings.TrimPrefix(f.issuer, f.srv.URL)
	serve, docIssuer, gate := f.serve, f.docIssuer, f.gate
	if docIssuer == "" {
		docIssuer = f.issuer
	}
	f.mu.Unlock()
	switch {
	case r.URL.Path == "/.well-known/oauth-authorization-server"+path && serve != "oidc",
		r.URL.Path == path+"/.well-known/openid-configuration" && serve != "rfc8414":
		f.metaHits.Add(1)
		writeJSON(w, map[string]any{"issuer": docIssuer, "jwks_uri": f.srv.URL + "/keys", "token_endpoint": f.srv.URL + "/token"})
	case r.URL.Path == "/keys":
		f.jwksHits.Add(1)
		if gate != nil {
			<-gate
		}
		f.mu.Lock()
		status, body, keys := f.jwksStatus, f.jwksBody, f.keys
		f.mu.Unlock()
		switch {
		case status != 0:
			http.Error(w, "unavailable", status)
		case body != "":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(body))
		default:
			writeJSON(w, map[string]any{"keys": keys})
		}
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// set changes the issuer under its lock.
func (f *fakeIssuer) set(change func(f *fakeIssuer)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

// verifier returns a verifier of f's tokens on clk, with cfg's other
// settings.
func (f *fakeIssuer) verifier(t *testing.T, clk *clock, cfg auth.Config) *auth.Verifier {
	t.Helper()
	cfg.Issuer = f.issuer
	cfg.Now = clk.Now
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = f.srv.Client()
	}
	v, err := auth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
