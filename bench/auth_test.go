package bench

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
)

// The access-token benchmarks time pkg/auth's Verify with the issuer's
// key set already cached (every request after an instance's first), as
// impl=ours, next to impl=floor: the signature check alone, the SHA-256
// of the same signing input and rsa.VerifyPKCS1v15 or ecdsa.VerifyASN1
// with the same key, which no verifier can go below. impl=ours also
// reports x-floor, its time over the floor's, when both ran in one
// invocation. The target is a median under 50 µs for RS256.

// verifyAudience is the resource the benchmark tokens are for.
const verifyAudience = "https://mcp.example.com/mcp"

// verifyScopes are the benchmark token's scopes, checked in every answer.
var verifyScopes = []string{"notes:read", "notes:write"}

// verifyFixture is an issuer on loopback serving one key, a verifier
// whose cache holds that key, and a token it signed.
type verifyFixture struct {
	v     *auth.Verifier
	token string
	input []byte // the token's signing input
	sig   []byte // its signature, as the floor's function takes it
	floor func(digest []byte, sig []byte) bool
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// newVerifyFixture serves alg's key (RS256: RSA 2048, ES256: P-256),
// signs an access token, and verifies it once, which fills the cache.
func newVerifyFixture(tb testing.TB, alg string) *verifyFixture {
	tb.Helper()
	var (
		jwk    map[string]any
		signer func(digest []byte) []byte
		fx     = &verifyFixture{}
	)
	switch alg {
	case "RS256":
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			tb.Fatal(err)
		}
		jwk = map[string]any{"kty": "RSA", "kid": "k1", "use": "sig", "alg": alg,
			"n": b64url(k.N.Bytes()), "e": b64url(big.NewInt(int64(k.E)).Bytes())}
		signer = func(d []byte) []byte {
			s, err := rsa.SignPKCS1v15(nil, k, crypto.SHA256, d)
			if err != nil {
				tb.Fatal(err)
			}
			return s
		}
		fx.floor = func(d, sig []byte) bool { return rsa.VerifyPKCS1v15(&k.PublicKey, crypto.SHA256, d, sig) == nil }
	case "ES256":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			tb.Fatal(err)
		}
		pt, err := k.PublicKey.Bytes()
		if err != nil {
			tb.Fatal(err)
		}
		jwk = map[string]any{"kty": "EC", "kid": "k1", "use": "sig", "alg": alg, "crv": "P-256",
			"x": b64url(pt[1:33]), "y": b64url(pt[33:])}
		signer = func(d []byte) []byte {
			r, s, err := ecdsa.Sign(rand.Reader, k, d)
			if err != nil {
				tb.Fatal(err)
			}
			sig := make([]byte, 64)
			r.FillBytes(sig[:32])
			s.FillBytes(sig[32:])
			return sig
		}
		fx.floor = func(d, sig []byte) bool { return ecdsa.VerifyASN1(&k.PublicKey, d, sig) }
	default:
		tb.Fatalf("no fixture for %s", alg)
	}

	var issuer string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": issuer, "jwks_uri": issuer + "/keys"})
		case "/keys":
			_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{jwk}})
		default:
			http.NotFound(w, r)
		}
	}))
	tb.Cleanup(srv.Close)
	issuer = srv.URL

	// A token as an authorization server mints it (RFC 9068 claims).
	now := time.Now()
	header, _ := json.Marshal(map[string]any{"alg": alg, "kid": "k1", "typ": "at+jwt"})
	claims, _ := json.Marshal(map[string]any{
		"iss": issuer, "sub": "bench-user", "aud": verifyAudience, "client_id": "bench-client",
		"exp": now.Add(24 * time.Hour).Unix(), "iat": now.Unix(), "nbf": now.Unix(), "jti": "bench-1",
		"scope": strings.Join(verifyScopes, " "),
	})
	input := b64url(header) + "." + b64url(claims)
	digest := sha256.Sum256([]byte(input))
	sig := signer(digest[:])
	fx.token = input + "." + b64url(sig)
	fx.input = []byte(input)
	fx.sig = sig
	if alg == "ES256" { // the floor takes the ASN.1 form
		der, err := asn1.Marshal(struct{ R, S *big.Int }{new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])})
		if err != nil {
			tb.Fatal(err)
		}
		fx.sig = der
	}

	v, err := auth.New(auth.Config{Issuer: issuer})
	if err != nil {
		tb.Fatal(err)
	}
	fx.v = v
	if err := fx.check(); err != nil { // also fills the key cache
		tb.Fatalf("wrong answer, not measured: %v", err)
	}
	return fx
}

// check verifies the token once and checks what Verify says of it.
func (fx *verifyFixture) check() error {
	tok, err := fx.v.Verify(context.Background(), fx.token, verifyAudience)
	if err != nil {
		return err
	}
	if tok.Subject != "bench-user" || !slices.Equal(tok.Scopes, verifyScopes) || auth.Principal(tok) != "jwt:"+tok.Issuer+"#bench-user" {
		return fmt.Errorf("token %+v", tok)
	}
	return nil
}

// benchVerify runs impl=floor, then impl=ours, of alg.
func benchVerify(b *testing.B, alg string) {
	fx := newVerifyFixture(b, alg)
	var floorNs float64
	b.Run("impl=floor", func(b *testing.B) {
		digest := sha256.Sum256(fx.input)
		if !fx.floor(digest[:], fx.sig) {
			b.Fatal("wrong answer, not measured: the floor refuses the signature")
		}
		b.ReportAllocs()
		for b.Loop() {
			digest := sha256.Sum256(fx.input)
			if !fx.floor(digest[:], fx.sig) {
				b.Fatal("signature refused")
			}
		}
		floorNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("impl=ours", func(b *testing.B) {
		if err := fx.check(); err != nil {
			b.Fatalf("wrong answer, not measured: %v", err)
		}
		ctx := b.Context()
		b.ReportAllocs()
		for b.Loop() {
			tok, err := fx.v.Verify(ctx, fx.token, verifyAudience)
			if err != nil || tok.Subject != "bench-user" {
				b.Fatalf("Verify: %v, %v", tok, err)
			}
		}
		if floorNs > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/floorNs, "x-floor")
		}
	})
}

// BenchmarkVerifyRS256 measures a warm Verify of an RS256 access token
// (RSA 2048) against the bare signature check.
func BenchmarkVerifyRS256(b *testing.B) { benchVerify(b, "RS256") }

// BenchmarkVerifyES256 measures a warm Verify of an ES256 access token
// (P-256) against the bare signature check.
func BenchmarkVerifyES256(b *testing.B) { benchVerify(b, "ES256") }

// TestVerifyAnswers checks the answers the Verify benchmarks time, so that
// go test alone catches a fixture or verifier that went wrong.
func TestVerifyAnswers(t *testing.T) {
	for _, alg := range []string{"RS256", "ES256"} {
		t.Run(alg, func(t *testing.T) {
			fx := newVerifyFixture(t, alg)
			digest := sha256.Sum256(fx.input)
			if !fx.floor(digest[:], fx.sig) {
				t.Error("the floor refuses the signature")
			}
			// The token's last character changed is refused.
			last := fx.token[len(fx.token)-1]
			bad := fx.token[:len(fx.token)-1] + map[bool]string{true: "A", false: "B"}[last != 'A']
			if _, err := fx.v.Verify(context.Background(), bad, verifyAudience); err == nil {
				t.Error("a changed token verified")
			}
		})
	}
}
