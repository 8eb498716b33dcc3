//go:build unix

package oauthmock

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"
)

const resource = "https://api.example.com/mcp"

// TestTokens checks what the authorization server publishes and mints: its
// metadata, its keys, a token shaped as RFC 9068 and RFC 8707 say, and
// each variant wrong in exactly its own way.
func TestTokens(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := New(t)

	var meta struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
		JWKSURI       string `json:"jwks_uri"`
	}
	getJSON(t, s.Issuer+"/.well-known/openid-configuration", &meta)
	if meta.Issuer != s.Issuer || meta.TokenEndpoint != s.TokenEndpoint() || meta.JWKSURI != s.Issuer+"/jwks" {
		t.Fatalf("metadata %+v for issuer %s", meta, s.Issuer)
	}
	keys := jwks(t, s)

	tok, err := s.Token(ctx, "svc a", []string{"notes:read", "notes:write"}, resource)
	if err != nil {
		t.Fatal(err)
	}
	h, c := verify(t, tok, keys)
	now := time.Now().Unix()
	if h["typ"] != "at+jwt" || h["alg"] != "RS256" {
		t.Errorf("header %v, want typ at+jwt, alg RS256", h)
	}
	if c["iss"] != s.Issuer || c["aud"] != resource || c["sub"] != "svc a" || c["client_id"] != "svc a" ||
		c["scope"] != "notes:read notes:write" || c["jti"] == nil ||
		num(c["exp"]) <= now || num(c["nbf"]) > now || num(c["iat"]) > now {
		t.Errorf("claims %v", c)
	}
	if tok, err = s.Token(ctx, "svc-b", nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, c := verify(t, tok, keys); c["aud"] != nil || c["scope"] != nil || c["sub"] != "svc-b" {
		t.Errorf("no resource, no scope: claims %v, want no aud and no scope", c)
	}

	mint := func(v Variant) (map[string]any, map[string]any, []string) {
		t.Helper()
		tok, err := s.TokenVariant(ctx, v, "svc-a", []string{"notes:read"}, resource)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(tok, ".")
		if len(parts) != 3 {
			t.Fatalf("%s: %q is not a compact JWS", v, tok)
		}
		return decodePart(t, parts[0]), decodePart(t, parts[1]), parts
	}
	if _, c := verifyVariant(t, s, Expired, keys); num(c["exp"]) >= now {
		t.Errorf("expired: exp %v", c["exp"])
	}
	if _, c := verifyVariant(t, s, NotYetValid, keys); num(c["nbf"]) <= now+60 || num(c["exp"]) <= now {
		t.Errorf("not yet valid: nbf %v exp %v", c["nbf"], c["exp"])
	}
	if _, c := verifyVariant(t, s, OtherIssuer, keys); c["iss"] == s.Issuer || c["iss"] == nil {
		t.Errorf("other issuer: iss %v", c["iss"])
	}
	if _, c := verifyVariant(t, s, NoSubject, keys); c["sub"] != nil || c["aud"] != resource {
		t.Errorf("no sub: claims %v", c)
	}
	if h, _, parts := mint(BadSignature); keys[h["kid"].(string)] == nil || verifies(parts, keys[h["kid"].(string)]) {
		t.Errorf("bad signature: header %v, a published kid and a signature that does not verify wanted", h)
	}
	if h, c, _ := mint(UnknownKid); keys[h["kid"].(string)] != nil || c["aud"] != resource {
		t.Errorf("unknown kid: header %v claims %v", h, c)
	}
	if h, c, parts := mint(AlgNone); h["alg"] != "none" || parts[2] != "" || c["iss"] != s.Issuer {
		t.Errorf("alg none: header %v signature %q", h, parts[2])
	}
	if h, _, parts := mint(HS256PublicKey); h["alg"] != "HS256" || !hmacWithPEM(parts, keys[h["kid"].(string)]) {
		t.Errorf("HS256: header %v; the MAC with the public key's PEM does not match", h)
	}
	if _, err := s.TokenVariant(ctx, "nonsense", "svc-a", nil, resource); err == nil {
		t.Error("an unknown variant was minted")
	}

	// Rotation: a new key, published next to the old one, signs from now on.
	kid, err := s.Rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rotated := jwks(t, s)
	if len(rotated) != len(keys)+1 || rotated[kid] == nil {
		t.Fatalf("after rotation: kids %v, want the old ones and %s", keysOf(rotated), kid)
	}
	tok, _ = s.Token(ctx, "svc-a", nil, resource)
	if h, _ := verify(t, tok, rotated); h["kid"] != kid {
		t.Errorf("after rotation, signed with %v, want %s", h["kid"], kid)
	}

	n, err := s.Requests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n["/jwks"] != 2 || n["/token"] < 12 {
		t.Errorf("requests %v, want 2 at /jwks and every token", n)
	}

	// Down and back: the same issuer and keys.
	s.Stop()
	if _, err := s.Token(ctx, "svc-a", nil, resource); err == nil {
		t.Fatal("a stopped server issued a token")
	}
	issuer := s.Issuer
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Issuer != issuer {
		t.Errorf("restarted as %s, want %s", s.Issuer, issuer)
	}
	tok, err = s.Token(ctx, "svc-a", nil, resource)
	if err != nil {
		t.Fatal(err)
	}
	verify(t, tok, rotated)
}

func verifyVariant(t *testing.T, s *Server, v Variant, keys map[string]*rsa.PublicKey) (map[string]any, map[string]any) {
	t.Helper()
	tok, err := s.TokenVariant(context.Background(), v, "svc-a", []string{"notes:read"}, resource)
	if err != nil {
		t.Fatal(err)
	}
	return verify(t, tok, keys)
}

// verify checks tok's RS256 signature with the published key its kid
// names and returns its header and claims.
func verify(t *testing.T, tok string, keys map[string]*rsa.PublicKey) (map[string]any, map[string]any) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a compact JWS", tok)
	}
	h := decodePart(t, parts[0])
	kid, _ := h["kid"].(string)
	if h["alg"] != "RS256" || keys[kid] == nil || !verifies(parts, keys[kid]) {
		t.Fatalf("token %v does not verify with the published keys %v", h, keysOf(keys))
	}
	return h, decodePart(t, parts[1])
}

func verifies(parts []string, key *rsa.PublicKey) bool {
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	return rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig) == nil
}

func hmacWithPEM(parts []string, key *rsa.PublicKey) bool {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	mac.Write([]byte(parts[0] + "." + parts[1]))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)) == parts[2]
}

func decodePart(t *testing.T, p string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		t.Fatalf("%q: %v", p, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

// jwks returns the published RSA keys by kid.
func jwks(t *testing.T, s *Server) map[string]*rsa.PublicKey {
	t.Helper()
	var set struct {
		Keys []struct {
			Kty, Kid, Alg, N, E, D string
		} `json:"keys"`
	}
	getJSON(t, s.Issuer+"/jwks", &set)
	out := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "RSA" || k.Alg != "RS256" || k.D != "" {
			t.Fatalf("published key %+v: want a public RS256 key", k)
		}
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err1 != nil || err2 != nil {
			t.Fatalf("key %s: bad n or e", k.Kid)
		}
		out[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	if len(out) == 0 {
		t.Fatal("no published keys")
	}
	return out
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func keysOf(m map[string]*rsa.PublicKey) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}
