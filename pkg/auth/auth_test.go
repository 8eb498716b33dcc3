package auth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
)

// marker is put in the hostile parts of tokens (kid, typ, iss, aud): no
// error message may repeat it.
const marker = "tokenbytes"

// matrix is the refusal matrix: every way a token can be wrong, and the
// good tokens next to them.
type matrixRow struct {
	name     string
	token    func(f *fakeIssuer) string
	audience string      // default: audience
	noAud    bool        // call Verify with an empty audience
	cfg      auth.Config // default: the zero Config
	want     error       // nil, auth.ErrInvalid or auth.ErrUnavailable
	reason   string      // in the error message
	check    func(t *testing.T, tok *auth.Token)
}

func TestVerifyMatrix(t *testing.T) {
	k := testKeys()
	rsaPub, err := x509.MarshalPKIXPublicKey(&k.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaPub})
	hmacSecret := []byte("0123456789abcdef0123456789abcdef")

	published := []map[string]any{
		jwk(k.rsa, "r1", map[string]any{"use": "sig"}),
		jwk(k.ec, "e1", map[string]any{"alg": "ES256"}),
		jwk(k.ed, "d1", nil),
		jwk(k.rsa2, "enc1", map[string]any{"use": "enc"}),                   // skipped: not for signatures
		{"kty": "oct", "kid": "hmac", "k": b64(hmacSecret)},                 // skipped: symmetric
		{"kty": "EC", "kid": "bad", "crv": "P-256", "x": "AAAA", "y": "AA"}, // skipped: not a point
		{"kty": "unknown-type", "kid": "future"},                            // skipped: unknown type
	}
	now := epoch
	std := func(f *fakeIssuer) map[string]any { return claimsFor(f.issuer, now) }
	rs := func(hdr map[string]any, cl func(f *fakeIssuer) any) func(f *fakeIssuer) string {
		return func(f *fakeIssuer) string { return mint("RS256", k.rsa, with(map[string]any{"kid": "r1"}, hdr), cl(f)) }
	}
	claimsWith := func(changes map[string]any) func(f *fakeIssuer) any {
		return func(f *fakeIssuer) any { return with(std(f), changes) }
	}
	good := claimsWith(nil)
	raw := func(format string) func(f *fakeIssuer) any {
		return func(f *fakeIssuer) any {
			return json.RawMessage(strings.NewReplacer("ISS", f.issuer, "AUD", audience, "EXP", "1900003600").Replace(format))
		}
	}
	fixed := func(s string) func(*fakeIssuer) string { return func(*fakeIssuer) string { return s } }

	rows := []matrixRow{
		// Good tokens.
		{name: "valid RS256", token: rs(map[string]any{"typ": "at+jwt"}, good), check: func(t *testing.T, tok *auth.Token) {
			if tok.Subject != "user-1" || tok.ClientID != "client-1" || !slices.Equal(tok.Scopes, []string{"notes:read", "notes:write"}) ||
				!slices.Equal(tok.Audience, []string{audience}) || !tok.Expiry.Equal(now.Add(time.Hour)) {
				t.Errorf("token %+v", tok)
			}
			if p := auth.Principal(tok); p != "jwt:"+tok.Issuer+"#user-1" {
				t.Errorf("principal %q", p)
			}
		}},
		{name: "valid ES256", token: func(f *fakeIssuer) string { return mint("ES256", k.ec, map[string]any{"kid": "e1"}, std(f)) }},
		{name: "valid PS256", token: func(f *fakeIssuer) string { return mint("PS256", k.rsa, map[string]any{"kid": "r1"}, std(f)) }},
		{name: "valid EdDSA", token: func(f *fakeIssuer) string { return mint("EdDSA", k.ed, map[string]any{"kid": "d1"}, std(f)) }},
		{name: "typ JWT", token: rs(map[string]any{"typ": "JWT"}, good)},
		{name: "typ application/at+jwt", token: rs(map[string]any{"typ": "application/at+jwt"}, good)},
		{name: "typ AT+JWT", token: rs(map[string]any{"typ": "AT+JWT"}, good)},
		{name: "no kid, one RSA key", token: func(f *fakeIssuer) string { return mint("RS256", k.rsa, nil, std(f)) }},
		{name: "aud array", token: rs(nil, claimsWith(map[string]any{"aud": []string{"https://other.example", audience}}))},
		{name: "aud canonical form", token: rs(nil, claimsWith(map[string]any{"aud": "HTTPS://MCP.Example.COM:443/mcp/"}))},
		{name: "audience argument canonical form", audience: "https://mcp.example.com/mcp/", token: rs(nil, good)},
		{name: "scp array", token: rs(nil, claimsWith(map[string]any{"scope": del, "scp": []string{"a", "b"}})), check: scopes("a", "b")},
		{name: "scp string", token: rs(nil, claimsWith(map[string]any{"scope": del, "scp": "a  b"})), check: scopes("a", "b")},
		{name: "scope over scp", token: rs(nil, claimsWith(map[string]any{"scope": "a", "scp": []string{"b"}})), check: scopes("a")},
		{name: "no scope", token: rs(nil, claimsWith(map[string]any{"scope": del})), check: scopes()},
		{name: "azp when no client_id", token: rs(nil, claimsWith(map[string]any{"client_id": del, "azp": "client-2"})), check: func(t *testing.T, tok *auth.Token) {
			if tok.ClientID != "client-2" {
				t.Errorf("client id %q", tok.ClientID)
			}
		}},
		{name: "unknown claims ignored", token: rs(nil, claimsWith(map[string]any{"SUB": "other", "x": map[string]any{"sub": "y"}, "roles": []int{1}}))},
		{name: "exp just within leeway", token: rs(nil, claimsWith(map[string]any{"exp": now.Add(-29 * time.Second).Unix()}))},
		{name: "nbf just within leeway", token: rs(nil, claimsWith(map[string]any{"nbf": now.Add(29 * time.Second).Unix()}))},
		{name: "fractional exp", token: rs(nil, claimsWith(map[string]any{"exp": float64(now.Unix()) + 60.5}))},
		{name: "escaped claim name", token: rs(nil, raw(`{"iss":"ISS","\u0073ub":"user-1","aud":"AUD","exp":EXP}`)), check: func(t *testing.T, tok *auth.Token) {
			if tok.Subject != "user-1" {
				t.Errorf("subject %q", tok.Subject)
			}
		}},

		// Malformed.
		{name: "empty", token: fixed(""), want: auth.ErrInvalid, reason: "malformed"},
		{name: "one part", token: fixed("eyJhbGciOiJSUzI1NiJ9"), want: auth.ErrInvalid, reason: "malformed"},
		{name: "two parts", token: fixed("eyJhbGciOiJSUzI1NiJ9.e30"), want: auth.ErrInvalid, reason: "malformed"},
		{name: "four parts", token: fixed("a.b.c.d"), want: auth.ErrInvalid, reason: "malformed"},
		{name: "six parts", token: fixed("a.b.c.d.e.f"), want: auth.ErrInvalid, reason: "malformed"},
		{name: "bad base64 character", token: func(f *fakeIssuer) string { return "!" + rs(nil, good)(f) }, want: auth.ErrInvalid, reason: "base64"},
		{name: "base64 padding", token: func(f *fakeIssuer) string { return strings.Replace(rs(nil, good)(f), ".", "==.", 1) }, want: auth.ErrInvalid, reason: "base64"},
		{name: "standard base64 alphabet", token: func(f *fakeIssuer) string { return "+/" + rs(nil, good)(f)[2:] }, want: auth.ErrInvalid, reason: "base64"},
		{name: "non-canonical base64 tail", token: func(f *fakeIssuer) string { return nonCanonical(rs(nil, good)(f)) }, want: auth.ErrInvalid, reason: "base64"},
		{name: "impossible base64 length", token: func(f *fakeIssuer) string { return rs(nil, good)(f) + "AAA" }, want: auth.ErrInvalid, reason: "base64"},
		{name: "header not JSON", token: func(f *fakeIssuer) string {
			in := b64([]byte(`{"alg":"RS256",`)) + "." + b64([]byte(`{}`))
			return in + "." + b64(sign("RS256", k.rsa, in))
		}, want: auth.ErrInvalid, reason: "malformed"},
		{name: "header not base64 of anything", token: fixed("eyJhbGciOiJSUzI1NiJ9x.e30.AAAA"), want: auth.ErrInvalid},
		{name: "claims not JSON", token: rs(nil, func(*fakeIssuer) any { return json.RawMessage(`{"iss":`) }), want: auth.ErrInvalid, reason: "claims"},
		{name: "claims an array", token: rs(nil, func(*fakeIssuer) any { return json.RawMessage(`["iss"]`) }), want: auth.ErrInvalid, reason: "claims"},
		{name: "too large", token: func(f *fakeIssuer) string {
			return rs(nil, claimsWith(map[string]any{"pad": strings.Repeat("x", 17<<10)}))(f)
		}, want: auth.ErrInvalid, reason: "longer"},

		// The header.
		{name: "alg none", token: func(f *fakeIssuer) string { return mint("none", nil, map[string]any{"kid": "r1"}, std(f)) }, want: auth.ErrInvalid, reason: "algorithm"},
		{name: "alg none, no signature part", token: func(f *fakeIssuer) string {
			return strings.TrimSuffix(mint("none", nil, nil, std(f)), ".")
		}, want: auth.ErrInvalid, reason: "malformed"},
		{name: "HS256 with the public key PEM", token: func(f *fakeIssuer) string { return mint("HS256", rsaPEM, map[string]any{"kid": "r1"}, std(f)) }, want: auth.ErrInvalid, reason: "algorithm"},
		{name: "HS256 with the public key DER", token: func(f *fakeIssuer) string { return mint("HS256", rsaPub, nil, std(f)) }, want: auth.ErrInvalid, reason: "algorithm"},
		{name: "HS256 with a published oct key", token: func(f *fakeIssuer) string { return mint("HS256", hmacSecret, map[string]any{"kid": "hmac"}, std(f)) }, want: auth.ErrInvalid, reason: "algorithm"},
		{name: "alg outside a configured allow-list", cfg: auth.Config{Algorithms: []string{"ES256"}}, token: rs(nil, good), want: auth.ErrInvalid, reason: "algorithm"},
		{name: "alg missing", token: func(f *fakeIssuer) string {
			in := signingInput(map[string]any{"kid": "r1"}, std(f))
			return in + "." + b64(sign("RS256", k.rsa, in))
		}, want: auth.ErrInvalid, reason: "algorithm"},
		{name: "typ of another token kind", token: rs(map[string]any{"typ": "dpop+jwt"}, good), want: auth.ErrInvalid, reason: "typ"},
		{name: "typ with marker", token: rs(map[string]any{"typ": marker + "+jwt"}, good), want: auth.ErrInvalid, reason: "typ"},
		{name: "typ not a string", token: rs(map[string]any{"typ": 1}, good), want: auth.ErrInvalid, reason: "typ"},
		{name: "crit", token: rs(map[string]any{"crit": []string{"exp"}, "exp": 1}, good), want: auth.ErrInvalid, reason: "critical"},
		{name: "b64 false", token: rs(map[string]any{"crit": []string{"b64"}, "b64": false}, good), want: auth.ErrInvalid, reason: "critical"},
		{name: "enc in a JWS header", token: rs(map[string]any{"enc": "A256GCM"}, good), want: auth.ErrInvalid, reason: "encrypted"},
		{name: "JWE compact", token: func(f *fakeIssuer) string { return encrypt(t, k.rsa, std(f)) }, want: auth.ErrInvalid, reason: "encrypted"},

		// Keys and signatures.
		{name: "bad signature (unpublished key, published kid)", token: func(f *fakeIssuer) string {
			return mint("RS256", k.rsa2, map[string]any{"kid": "r1"}, std(f))
		}, want: auth.ErrInvalid, reason: "signature"},
		{name: "claims of another token", token: func(f *fakeIssuer) string {
			a := strings.Split(rs(nil, good)(f), ".")
			b := strings.Split(rs(nil, claimsWith(map[string]any{"sub": "admin"}))(f), ".")
			return a[0] + "." + b[1] + "." + a[2]
		}, want: auth.ErrInvalid, reason: "signature"},
		{name: "embedded jwk is not trusted", token: func(f *fakeIssuer) string {
			return mint("RS256", k.rsa2, map[string]any{"kid": "r1", "jwk": jwk(k.rsa2, "r1", nil)}, std(f))
		}, want: auth.ErrInvalid, reason: "signature"},
		{name: "jku is not followed", token: func(f *fakeIssuer) string {
			return mint("RS256", k.rsa2, map[string]any{"kid": "r1", "jku": f.srv.URL + "/keys"}, std(f))
		}, want: auth.ErrInvalid, reason: "signature"},
		{name: "kid of a key of another type", token: func(f *fakeIssuer) string { return mint("RS256", k.rsa, map[string]any{"kid": "e1"}, std(f)) }, want: auth.ErrInvalid, reason: "not for alg"},
		{name: "kid whose key is restricted to another alg", token: func(f *fakeIssuer) string {
			return mint("ES384", mustEC384(t), map[string]any{"kid": "e1"}, std(f))
		}, want: auth.ErrInvalid, reason: "not for alg"},
		{name: "kid of an encryption key", token: func(f *fakeIssuer) string { return mint("RS256", k.rsa2, map[string]any{"kid": "enc1"}, std(f)) }, want: auth.ErrInvalid, reason: "kid"},
		{name: "unknown kid", token: func(f *fakeIssuer) string { return mint("RS256", k.rsa2, map[string]any{"kid": marker}, std(f)) }, want: auth.ErrInvalid, reason: "kid"},

		// The claims.
		{name: "another issuer", token: rs(nil, claimsWith(map[string]any{"iss": "https://" + marker + ".example"})), want: auth.ErrInvalid, reason: "issuer"},
		{name: "issuer with a trailing slash", token: func(f *fakeIssuer) string { return rs(nil, claimsWith(map[string]any{"iss": f.issuer + "/"}))(f) }, want: auth.ErrInvalid, reason: "issuer"},
		{name: "no issuer", token: rs(nil, claimsWith(map[string]any{"iss": del})), want: auth.ErrInvalid, reason: "issuer"},
		{name: "issuer not a string", token: rs(nil, claimsWith(map[string]any{"iss": 1})), want: auth.ErrInvalid, reason: "claims"},
		{name: "audience of another resource", token: rs(nil, claimsWith(map[string]any{"aud": "https://" + marker + ".example/mcp"})), want: auth.ErrInvalid, reason: "audience"},
		{name: "audience of another path", token: rs(nil, claimsWith(map[string]any{"aud": "https://mcp.example.com/other"})), want: auth.ErrInvalid, reason: "audience"},
		{name: "audience of another port", token: rs(nil, claimsWith(map[string]any{"aud": "https://mcp.example.com:8443/mcp"})), want: auth.ErrInvalid, reason: "audience"},
		{name: "audience over http", token: rs(nil, claimsWith(map[string]any{"aud": "http://mcp.example.com/mcp"})), want: auth.ErrInvalid, reason: "audience"},
		{name: "no audience", token: rs(nil, claimsWith(map[string]any{"aud": del})), want: auth.ErrInvalid, reason: "audience"},
		{name: "empty audience list", token: rs(nil, claimsWith(map[string]any{"aud": []string{}})), want: auth.ErrInvalid, reason: "audience"},
		{name: "audience not a string", token: rs(nil, claimsWith(map[string]any{"aud": 7})), want: auth.ErrInvalid, reason: "claims"},
		{name: "empty audience argument", noAud: true, token: rs(nil, good), want: auth.ErrInvalid, reason: "no audience"},
		{name: "expired", token: rs(nil, claimsWith(map[string]any{"exp": now.Add(-31 * time.Second).Unix()})), want: auth.ErrInvalid, reason: "expired"},
		{name: "expired exactly at the leeway", token: rs(nil, claimsWith(map[string]any{"exp": now.Add(-30 * time.Second).Unix()})), want: auth.ErrInvalid, reason: "expired"},
		{name: "not yet valid", token: rs(nil, claimsWith(map[string]any{"nbf": now.Add(31 * time.Second).Unix()})), want: auth.ErrInvalid, reason: "nbf"},
		{name: "issued in the future", token: rs(nil, claimsWith(map[string]any{"iat": now.Add(time.Minute).Unix()})), want: auth.ErrInvalid, reason: "iat"},
		{name: "no exp", token: rs(nil, claimsWith(map[string]any{"exp": del})), want: auth.ErrInvalid, reason: "exp"},
		{name: "exp a string", token: rs(nil, claimsWith(map[string]any{"exp": "1900003600"})), want: auth.ErrInvalid, reason: "claims"},
		{name: "exp null", token: rs(nil, claimsWith(map[string]any{"exp": nil})), want: auth.ErrInvalid, reason: "claims"},
		{name: "exp beyond time", token: rs(nil, raw(`{"iss":"ISS","sub":"user-1","aud":"AUD","exp":1e300}`)), want: auth.ErrInvalid, reason: "claims"},
		{name: "no sub", token: rs(nil, claimsWith(map[string]any{"sub": del})), want: auth.ErrInvalid, reason: "sub"},
		{name: "empty sub", token: rs(nil, claimsWith(map[string]any{"sub": ""})), want: auth.ErrInvalid, reason: "sub"},
		{name: "sub not a string", token: rs(nil, claimsWith(map[string]any{"sub": 42})), want: auth.ErrInvalid, reason: "claims"},
		{name: "sub only in another case", token: rs(nil, claimsWith(map[string]any{"sub": del, "SUB": "user-1"})), want: auth.ErrInvalid, reason: "sub"},
		{name: "sub twice", token: rs(nil, raw(`{"iss":"ISS","sub":"user-1","aud":"AUD","exp":EXP,"sub":"admin"}`)), want: auth.ErrInvalid, reason: "twice"},
		{name: "sub twice, once escaped", token: rs(nil, raw(`{"iss":"ISS","sub":"user-1","aud":"AUD","exp":EXP,"s\u0075b":"admin"}`)), want: auth.ErrInvalid, reason: "twice"},
		{name: "scope not a string", token: rs(nil, claimsWith(map[string]any{"scope": 3})), want: auth.ErrInvalid, reason: "claims"},
		{name: "scp with a non-string", token: rs(nil, claimsWith(map[string]any{"scope": del, "scp": []any{"a", 1}})), want: auth.ErrInvalid, reason: "claims"},
	}

	f := newIssuer(t, "", published...)
	clk := newClock()
	shared := f.verifier(t, clk, auth.Config{})
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			v := shared
			if r.cfg.Algorithms != nil {
				v = f.verifier(t, clk, r.cfg)
			}
			aud := r.audience
			if aud == "" && !r.noAud {
				aud = audience
			}
			raw := r.token(f)
			tok, err := v.Verify(context.Background(), raw, aud)
			if r.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tok.Issuer != f.issuer {
					t.Errorf("issuer %q", tok.Issuer)
				}
				if r.check != nil {
					r.check(t, tok)
				}
				return
			}
			if !errors.Is(err, r.want) || tok != nil {
				t.Fatalf("got %v, %v; want %v", tok, err, r.want)
			}
			other := auth.ErrUnavailable
			if r.want == auth.ErrUnavailable {
				other = auth.ErrInvalid
			}
			if errors.Is(err, other) {
				t.Errorf("%v is both classes", err)
			}
			if !strings.Contains(err.Error(), r.reason) {
				t.Errorf("error %q does not name %q", err, r.reason)
			}
			checkNoTokenBytes(t, err, raw)
		})
	}
}

// checkNoTokenBytes fails t if err's message repeats part of raw.
func checkNoTokenBytes(t *testing.T, err error, raw string) {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, marker) {
		t.Errorf("error message %q repeats the token", msg)
	}
	for _, part := range strings.Split(raw, ".") {
		for i := 0; i+8 <= len(part); i += 8 {
			if strings.Contains(msg, part[i:i+8]) {
				t.Errorf("error message %q contains token bytes %q", msg, part[i:i+8])
				return
			}
		}
	}
}

func scopes(want ...string) func(t *testing.T, tok *auth.Token) {
	return func(t *testing.T, tok *auth.Token) {
		t.Helper()
		if !slices.Equal(tok.Scopes, want) {
			t.Errorf("scopes %q, want %q", tok.Scopes, want)
		}
	}
}

// nonCanonical respells the signature of tok with a set unused bit in its
// last character: the same bytes, another text.
func nonCanonical(tok string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, tok[len(tok)-1])
	return tok[:len(tok)-1] + string(alphabet[last|1])
}

// encrypt returns claims as a compact JWE to key's public half.
func encrypt(t *testing.T, key any, tokenClaims any) string {
	t.Helper()
	k := key.(crypto.Signer)
	enc, err := jose.NewEncrypter(jose.A256GCM, jose.Recipient{Algorithm: jose.RSA_OAEP_256, Key: k.Public()}, (&jose.EncrypterOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(tokenClaims)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := enc.Encrypt(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mustEC384 is a P-384 key that no issuer publishes.
func mustEC384(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestClientIDsAdmitCognitoAccessTokens: with ClientIDs, an access token
// that names no audience at all is admitted for a listed client, and only
// then: an ID token, another client, a token with another audience, or a
// verifier without ClientIDs refuse it.
func TestClientIDsAdmitCognitoAccessTokens(t *testing.T) {
	k := testKeys()
	f := newIssuer(t, "", jwk(k.rsa, "r1", nil))
	clk := newClock()
	cognito := func(changes map[string]any) string {
		cl := with(claimsFor(f.issuer, clk.Now()), map[string]any{"aud": del, "token_use": "access", "client_id": "app-client-1"})
		return mint("RS256", k.rsa, map[string]any{"kid": "r1"}, with(cl, changes))
	}
	strict := f.verifier(t, clk, auth.Config{})
	lenient := f.verifier(t, clk, auth.Config{ClientIDs: []string{"app-client-1"}})
	tests := []struct {
		name  string
		v     *auth.Verifier
		token string
		ok    bool
	}{
		{"a listed client's access token", lenient, cognito(nil), true},
		{"without ClientIDs, no audience is no audience", strict, cognito(nil), false},
		{"another client", lenient, cognito(map[string]any{"client_id": "app-client-2"}), false},
		{"an ID token", lenient, cognito(map[string]any{"token_use": "id"}), false},
		{"no token_use", lenient, cognito(map[string]any{"token_use": del}), false},
		{"an audience that is not this resource still refuses", lenient, cognito(map[string]any{"aud": "https://other.example.com/mcp"}), false},
		{"a client id only in azp", lenient, cognito(map[string]any{"client_id": del, "azp": "app-client-1"}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := tt.v.Verify(context.Background(), tt.token, audience)
			if tt.ok && (err != nil || tok.Subject != "user-1") {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && !errors.Is(err, auth.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := auth.New(auth.Config{Issuer: f.issuer, ClientIDs: []string{""}}); err == nil {
		t.Error("an empty client id is accepted")
	}
}
