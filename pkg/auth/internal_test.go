package auth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

func TestMetadataURLs(t *testing.T) {
	for _, c := range []struct{ issuer, rfc8414, oidc string }{
		{"https://as.example.com", "https://as.example.com/.well-known/oauth-authorization-server", "https://as.example.com/.well-known/openid-configuration"},
		{"https://as.example.com/", "https://as.example.com/.well-known/oauth-authorization-server", "https://as.example.com/.well-known/openid-configuration"},
		{"https://as.example.com/issuer1", "https://as.example.com/.well-known/oauth-authorization-server/issuer1", "https://as.example.com/issuer1/.well-known/openid-configuration"},
		{"https://as.example.com/tenant/a/", "https://as.example.com/.well-known/oauth-authorization-server/tenant/a", "https://as.example.com/tenant/a/.well-known/openid-configuration"},
		{"https://as.example.com:8443/realms/x%2Fy", "https://as.example.com:8443/.well-known/oauth-authorization-server/realms/x%2Fy", "https://as.example.com:8443/realms/x%2Fy/.well-known/openid-configuration"},
		{"http://127.0.0.1:9000", "http://127.0.0.1:9000/.well-known/oauth-authorization-server", "http://127.0.0.1:9000/.well-known/openid-configuration"},
	} {
		got, err := metadataURLs(c.issuer)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{c.rfc8414, c.oidc}; !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", c.issuer, got, want)
		}
	}
}

func TestCanonicalAudience(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp"},
		{"HTTPS://MCP.Example.COM/mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com/mcp/", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com/", "https://mcp.example.com"},
		{"https://mcp.example.com", "https://mcp.example.com"},
		{"https://mcp.example.com:443/mcp", "https://mcp.example.com/mcp"},
		{"http://mcp.example.com:80/mcp", "http://mcp.example.com/mcp"},
		{"http://mcp.example.com:443/mcp", "http://mcp.example.com:443/mcp"},
		{"https://mcp.example.com:8443/mcp", "https://mcp.example.com:8443/mcp"},
		{"https://mcp.example.com/MCP", "https://mcp.example.com/MCP"}, // paths keep their case
		{"https://mcp.example.com/mcp/?q=1", "https://mcp.example.com/mcp?q=1"},
		{"https://mcp.example.com?q=1", "https://mcp.example.com?q=1"},
		{"api://mcp", "api://mcp"},
		{"my-resource", "my-resource"},
		{"urn:example:mcp", "urn:example:mcp"},
		{"://x", "://x"},
		{"1http://X", "1http://X"},
		{"", ""},
	} {
		if got := canonicalAudience(c.in); got != c.want {
			t.Errorf("canonicalAudience(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCheckCompact(t *testing.T) {
	for _, c := range []struct {
		tok  string
		want error
	}{
		{"a.b.c", errBase64},       // one character cannot be base64
		{"AA.AB.AAA", errBase64},   // AB: the second character's low bits are set
		{"AA.AQ.Ah", errBase64},    // Ah: likewise
		{"Ag.AAE.AAAA", nil},       // 1, 2 and 3 bytes, canonical
		{"AA.AAF.AAAA", errBase64}, // AAF: unused bits set
		{"..", nil},
		{"A=.AA.AA", errBase64},
		{"AA.A+.AA", errBase64},
		{"AA.AA", errMalformed},
		{"AA.AA.AA.AA", errMalformed},
		{"AA.AA.AA.AA.AA", errEncrypted},
	} {
		if err := checkCompact(c.tok); err != c.want {
			t.Errorf("checkCompact(%q) = %v, want %v", c.tok, err, c.want)
		}
	}
}

// maxFuzzClaims bounds the payloads FuzzClaims looks at; the seeds are
// under 140 bytes. Longer ones only cost time: the engine minimizes every
// input that brings new coverage, trying up to n²/2 shorter candidates
// for n bytes, one run each, for up to -fuzzminimizetime, and counts no
// executions meanwhile (0 execs/s). In a ten-million-execution run, 723 s
// of 2,062 were such stretches, nine of them 30 s or longer.
const maxFuzzClaims = 256

// FuzzClaims compares the claims decoder with encoding/json: on any
// payload it does not panic; when it accepts one, encoding/json reads the
// same object, and every claim it read is the value encoding/json reads
// under exactly that name.
func FuzzClaims(f *testing.F) {
	for _, s := range []string{
		`{"iss":"https://as.example.com","sub":"alice","aud":["a","b"],"exp":1900000000,"nbf":1.5,"iat":0,"scope":"a b","client_id":"c"}`,
		`{"sub":"a\u00e9\ud83d\ude00","scp":["x","y"],"azp":"z"}`,
		`{"\u0073ub":"a","sub":"b"}`,
		`{"Sub":"a","sub":"b"}`,
		`{"aud":"x","exp":"1"}`,
		`{"exp":1e400}`,
		`{"exp":-1}`,
		` { "sub" : "a" , "x" : { "sub" : [1,{"a":"}"}] } } `,
		"{\"sub\":\"\xff\"}",
		`[]`, `{}`, `null`, `{"sub":}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		if len(payload) > maxFuzzClaims {
			return
		}
		var c tokenClaims
		err := c.decode(payload)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(payload, &m); err != nil {
			t.Fatalf("accepted what encoding/json refuses: %v", err)
		}
		for name, got := range map[string]string{"iss": c.iss, "sub": c.sub, "client_id": c.clientID, "azp": c.azp} {
			raw, ok := exact(payload, name)
			if !ok {
				if got != "" {
					t.Errorf("%s = %q, absent from the payload", name, got)
				}
				continue
			}
			var want string
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Errorf("%s: accepted %s", name, raw)
			} else if got != want {
				t.Errorf("%s = %q, encoding/json reads %q", name, got, want)
			}
		}
		if raw, ok := exact(payload, "exp"); ok != (c.exp != nil) {
			t.Errorf("exp %v, payload %s", c.exp, raw)
		}
	})
}

// exact returns the value of the member of the payload's object whose
// decoded name is name, as encoding/json's token stream reads it.
func exact(payload []byte, name string) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if tok == name {
			return v, true
		}
	}
	return nil, false
}

func TestParseKeySet(t *testing.T) {
	rsa2048, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	marshal := func(k jose.JSONWebKey) json.RawMessage {
		b, err := k.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	set := func(keys ...json.RawMessage) []byte {
		b, _ := json.Marshal(map[string]any{"keys": keys})
		return b
	}
	good := marshal(jose.JSONWebKey{Key: &rsa2048.PublicKey, KeyID: "ok"})
	for _, c := range []struct {
		name string
		key  json.RawMessage
		kind keyKind // kindNone: skipped
	}{
		{"RSA 2048", good, kindRSA},
		{"RSA 1024: too short", marshal(jose.JSONWebKey{Key: &rsa1024.PublicKey, KeyID: "k"}), kindNone},
		{"RSA private key", marshal(jose.JSONWebKey{Key: rsa2048, KeyID: "k"}), kindNone},
		{"P-384", marshal(jose.JSONWebKey{Key: &p384.PublicKey, KeyID: "k"}), kindP384},
		{"P-521", marshal(jose.JSONWebKey{Key: &p521.PublicKey, KeyID: "k", Algorithm: "ES512"}), kindP521},
		{"Ed25519", marshal(jose.JSONWebKey{Key: edPub, KeyID: "k", Use: "sig"}), kindEd25519},
		{"encryption key", marshal(jose.JSONWebKey{Key: &p384.PublicKey, KeyID: "k", Use: "enc"}), kindNone},
		{"alg of another key type", marshal(jose.JSONWebKey{Key: &rsa2048.PublicKey, KeyID: "k", Algorithm: "ES256"}), kindNone},
		{"alg not a signature's", marshal(jose.JSONWebKey{Key: &rsa2048.PublicKey, KeyID: "k", Algorithm: "RSA-OAEP"}), kindNone},
		{"symmetric", json.RawMessage(`{"kty":"oct","kid":"k","k":"c2VjcmV0"}`), kindNone},
		{"not a key", json.RawMessage(`"key"`), kindNone},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := parseKeySet(set(good, c.key))
			if err != nil {
				t.Fatal(err)
			}
			if c.kind == kindNone {
				if len(s.all) != 1 {
					t.Errorf("%d keys kept, want only the good one", len(s.all))
				}
				return
			}
			if len(s.all) != 2 || s.all[1].kind != c.kind {
				t.Errorf("keys %+v, want the good one and one of kind %d", s.all, c.kind)
			}
		})
	}
	for _, bad := range []string{`{"keys":[]}`, `{}`, `[]`, `{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`, `<html>`} {
		if _, err := parseKeySet([]byte(bad)); err == nil {
			t.Errorf("parseKeySet(%s) accepted", bad)
		}
	}
}
