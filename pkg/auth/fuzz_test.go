package auth_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
)

// The fuzz target's issuer and keys are fixed, so that a token kept in
// testdata/fuzz stays what it was: the EdDSA token below is the same in
// every run (Ed25519 signatures are deterministic).
const fuzzIssuer = "https://as.example.com/tenant"

var (
	fuzzEC = func() *ecdsa.PrivateKey {
		k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), bytes.Repeat([]byte{0x17}, 32))
		if err != nil {
			panic(err)
		}
		return k
	}()
	fuzzEd = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x42}, 32))
)

// memoryIssuer serves the fuzz issuer's metadata and keys from memory:
// fuzzing makes no connection at all.
type memoryIssuer struct{ docs map[string][]byte }

func newMemoryIssuer() *memoryIssuer {
	meta, _ := json.Marshal(map[string]any{"issuer": fuzzIssuer, "jwks_uri": "https://as.example.com/keys"})
	keys, _ := json.Marshal(map[string]any{"keys": []any{jwk(fuzzEC, "e1", map[string]any{"use": "sig"}), jwk(fuzzEd, "d1", nil)}})
	return &memoryIssuer{docs: map[string][]byte{
		"/.well-known/oauth-authorization-server/tenant": meta,
		"/keys": keys,
	}}
}

func (m *memoryIssuer) RoundTrip(r *http.Request) (*http.Response, error) {
	body, ok := m.docs[r.URL.Path]
	status := http.StatusOK
	if !ok || r.URL.Host != "as.example.com" {
		status, body = http.StatusNotFound, nil
	}
	return &http.Response{StatusCode: status, Body: io.NopCloser(bytes.NewReader(body)), Header: http.Header{}, Request: r}, nil
}

// fuzzing reports whether this process runs generated inputs for go test
// -fuzz (a fuzz worker), not the seed corpus under go test.
func fuzzing() bool {
	f := flag.Lookup("test.fuzzworker")
	return f != nil && f.Value.String() == "true"
}

// maxFuzzToken bounds the tokens FuzzVerify looks at while fuzzing; the
// seeds are under 1 KB but for header-deep (4.4 KB), which still runs
// under go test. Longer generated tokens only cost time: the engine
// minimizes every input that brings new coverage, trying up to n²/2
// shorter candidates for n bytes, one run each, for up to
// -fuzzminimizetime, and counts no executions meanwhile (0 execs/s).
const maxFuzzToken = 1024

// FuzzVerify verifies arbitrary token strings against a fixed issuer: it
// never panics, a refusal is always ErrInvalid (the issuer is always
// reachable) and never repeats the token, and only the seeded valid
// tokens verify (see issued).
func FuzzVerify(f *testing.F) {
	tokenClaims := claimsFor(fuzzIssuer, epoch)
	valid := []string{ // issued relies on ES256 being last
		mint("EdDSA", fuzzEd, map[string]any{"kid": "d1", "typ": "at+jwt"}, tokenClaims),
		mint("EdDSA", fuzzEd, map[string]any{"kid": "d1", "typ": "JWT"}, tokenClaims),
		mint("EdDSA", fuzzEd, nil, tokenClaims),
		mint("ES256", fuzzEC, map[string]any{"kid": "e1"}, tokenClaims),
	}
	for _, tok := range valid {
		f.Add(tok)
		f.Add(tok[:len(tok)-1])
		f.Add(strings.ToUpper(tok[:1]) + tok[1:])
		parts := strings.Split(tok, ".")
		f.Add(parts[0] + "." + parts[1] + ".")
		f.Add(parts[0] + ".." + parts[2])
		f.Add(parts[0] + "." + parts[1] + "." + parts[2] + "." + parts[2] + "." + parts[2])
	}
	f.Add(mint("EdDSA", fuzzEd, map[string]any{"kid": "x"}, tokenClaims))
	f.Add(mint("EdDSA", fuzzEd, map[string]any{"kid": "d1", "typ": "dpop+jwt"}, tokenClaims))
	f.Add(mint("EdDSA", fuzzEd, map[string]any{"kid": "d1", "crit": []string{"b64"}, "b64": false}, tokenClaims))
	f.Add(mint("EdDSA", fuzzEd, map[string]any{"kid": "d1"}, with(tokenClaims, map[string]any{"exp": epoch.Add(-time.Hour).Unix()})))
	f.Add(mint("EdDSA", fuzzEd, map[string]any{"kid": "d1"}, with(tokenClaims, map[string]any{"aud": "https://other.example"})))
	f.Add(mint("none", nil, map[string]any{"kid": "d1"}, tokenClaims))
	f.Add(mint("HS256", []byte(fuzzEd.Public().(ed25519.PublicKey)), map[string]any{"kid": "d1"}, tokenClaims))
	v, err := auth.New(auth.Config{
		Issuer:     fuzzIssuer,
		HTTPClient: &http.Client{Transport: newMemoryIssuer()},
		Now:        func() time.Time { return epoch },
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		if fuzzing() && len(tok) > maxFuzzToken {
			return
		}
		got, err := v.Verify(context.Background(), tok, audience)
		if err == nil {
			if !issued(valid, tok) {
				t.Fatalf("verified a token that was never issued: %q", tok)
			}
			if got.Subject != "user-1" || got.Issuer != fuzzIssuer {
				t.Fatalf("token %+v", got)
			}
			return
		}
		if !errors.Is(err, auth.ErrInvalid) || errors.Is(err, auth.ErrUnavailable) {
			t.Fatalf("error %v is not only ErrInvalid", err)
		}
		for _, part := range strings.Split(tok, ".") {
			if len(part) >= 16 && strings.Contains(err.Error(), part) {
				t.Fatalf("error %q repeats the token", err)
			}
		}
	})
}

// issued reports whether tok is one of the seeded valid tokens. The EdDSA
// token must be the very same string. ECDSA signatures are randomized,
// and each fuzz worker process signs its own ES256 token, so an ES256
// token counts when its header and claims are the seeded ones, byte for
// byte, and its signature verifies under crypto/ecdsa directly: an
// oracle independent of the verifier under test.
func issued(valid []string, tok string) bool {
	if slices.Contains(valid, tok) {
		return true
	}
	es := valid[len(valid)-1]
	input, sig64, ok := strings.Cut(tok, es[:strings.LastIndexByte(es, '.')+1])
	if !ok || input != "" {
		return false
	}
	sig, err := base64.RawURLEncoding.Strict().DecodeString(sig64)
	if err != nil || len(sig) != 64 {
		return false
	}
	digest := sha256.Sum256([]byte(es[:strings.LastIndexByte(es, '.')]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	return ecdsa.Verify(&fuzzEC.PublicKey, digest[:], r, s)
}
