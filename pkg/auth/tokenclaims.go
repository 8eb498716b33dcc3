package auth

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/serverless-mcp/mcp-lambda/internal/jsonscan"
)

// checkCompact refuses anything but three canonical base64url parts
// before any parser sees the token. A JWE (five parts) gets its own
// refusal: this server holds no decryption key, and an encrypted token is
// a sign that the client sent a token meant for someone else.
//
// Canonical means no padding and zero unused bits in the last character.
// Go's base64 decoders ignore those bits, and go-jose verifies the
// signature over a re-encoding of what it decoded, so without this check
// one token would have several spellings that all verify: harmless for
// the signature, but a trap for anything that keys on the token's text.
func checkCompact(raw string) error {
	dots := strings.Count(raw, ".")
	switch dots {
	case 2:
	case 4:
		return errEncrypted
	default:
		return errMalformed
	}
	start := 0
	for i := 0; i <= len(raw); i++ {
		if i < len(raw) && raw[i] != '.' {
			if !isBase64URL(raw[i]) {
				return errBase64
			}
			continue
		}
		if !canonicalTail(raw[start:i]) {
			return errBase64
		}
		start = i + 1
	}
	return nil
}

func isBase64URL(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// canonicalTail reports whether the unpadded base64url text s has a
// possible length and no bits set beyond its last whole byte.
func canonicalTail(s string) bool {
	var unused byte
	switch len(s) % 4 {
	case 0:
		return true
	case 1:
		return false
	case 2:
		unused = 0x0f // 12 bits carry 1 byte
	case 3:
		unused = 0x03 // 18 bits carry 2 bytes
	}
	return base64Value(s[len(s)-1])&unused == 0
}

func base64Value(c byte) byte {
	switch {
	case c >= 'A' && c <= 'Z':
		return c - 'A'
	case c >= 'a' && c <= 'z':
		return c - 'a' + 26
	case c >= '0' && c <= '9':
		return c - '0' + 52
	case c == '-':
		return 62
	}
	return 63
}

// checkHeader checks what the JOSE header says besides alg (go-jose has
// enforced the allow-list) and kid (the key lookup uses it). Header
// parameters that point at keys (jwk, jku, x5c, x5u) are ignored: keys
// come from the issuer's key set only, never from the token.
func checkHeader(h jose.Header) error {
	for name, value := range h.ExtraHeaders {
		switch name {
		case jose.HeaderType:
			s, ok := value.(string)
			if !ok || !accessTokenType(s) {
				return errType
			}
		case "crit", "b64":
			// No extension is understood, so none can be critical (RFC
			// 7515 §4.1.11); b64=false (RFC 7797) would change what the
			// signature covers.
			return errCritical
		case "enc":
			return errEncrypted
		}
	}
	return nil
}

// accessTokenType reports whether typ may head an access token: RFC 9068's
// at+jwt, or JWT, which many authorization servers still send (an absent
// typ is accepted too, by the caller). Media types compare without case,
// and "application/" may be left out (RFC 7515 §4.1.9). Other types
// (an ID token's, a DPoP proof's, a logout token's) are refused, so that a
// JWT minted for another purpose is not taken for an access token.
func accessTokenType(typ string) bool {
	t := strings.ToLower(typ)
	t = strings.TrimPrefix(t, "application/")
	return t == "at+jwt" || t == "jwt"
}

// tokenClaims are the JWT claims Verify reads (named apart from the
// idempotency claims of pkg/claims), decoded from the verified payload.
type tokenClaims struct {
	iss, sub, clientID, azp  string
	tokenUse                 string // "token_use", Amazon Cognito's
	hasIss, hasScope, hasAud bool
	aud, scope, scp          []string
	exp, nbf, iat            *jwt.NumericDate
}

// Registered and read claim names, as bits of a "seen" mask.
const (
	seenIss = 1 << iota
	seenSub
	seenAud
	seenExp
	seenNbf
	seenIat
	seenScope
	seenScp
	seenClientID
	seenAzp
	seenTokenUse
)

// decode reads the claims of payload. Names match exactly, and a claim
// read here may appear only once: encoding/json would match "SUB" to sub
// and keep the last of two "sub" members, and a token whose claims two
// parsers could read differently is refused rather than interpreted.
func (c *tokenClaims) decode(payload []byte) error {
	if !json.Valid(payload) {
		return errClaims
	}
	d := payload
	i := jsonscan.SkipSpace(d, 0)
	if i >= len(d) || d[i] != '{' {
		return errClaims
	}
	i = jsonscan.SkipSpace(d, i+1)
	if d[i] == '}' {
		return nil
	}
	var seen uint
	var scratch []byte
	for i < len(d) {
		end, escaped := jsonscan.ScanString(d, i)
		key := d[i+1 : end-1]
		if escaped {
			scratch = jsonscan.AppendUnquoted(scratch[:0], d[i:end])
			key = scratch
		}
		i = jsonscan.SkipSpace(d, end)
		i = jsonscan.SkipSpace(d, i+1) // ':'
		vStart := i
		i = jsonscan.SkipValue(d, i)
		value := d[vStart:i]

		var bit uint
		var err error
		switch string(key) {
		case "iss":
			bit = seenIss
			c.iss, err = jsonString(value)
			c.hasIss = true
		case "sub":
			bit = seenSub
			c.sub, err = jsonString(value)
		case "aud":
			bit = seenAud
			c.aud, err = stringOrList(value, false)
			c.hasAud = true
		case "exp":
			bit = seenExp
			c.exp, err = numericDate(value)
		case "nbf":
			bit = seenNbf
			c.nbf, err = numericDate(value)
		case "iat":
			bit = seenIat
			c.iat, err = numericDate(value)
		case "scope":
			bit = seenScope
			c.scope, err = stringOrList(value, true)
			c.hasScope = true
		case "scp":
			bit = seenScp
			c.scp, err = stringOrList(value, true)
		case "client_id":
			bit = seenClientID
			c.clientID, err = jsonString(value)
		case "azp":
			bit = seenAzp
			c.azp, err = jsonString(value)
		case "token_use":
			bit = seenTokenUse
			c.tokenUse, err = jsonString(value)
		}
		if err != nil {
			return err
		}
		if bit != 0 {
			if seen&bit != 0 {
				return errDuplicateClaim
			}
			seen |= bit
		}
		i = jsonscan.SkipSpace(d, i)
		if i < len(d) && d[i] == ',' {
			i = jsonscan.SkipSpace(d, i+1)
			continue
		}
		break
	}
	return nil
}

// jsonString returns the text of the JSON string v; anything else is
// refused (a null or a number where a string belongs is not a string).
func jsonString(v []byte) (string, error) {
	if len(v) < 2 || v[0] != '"' {
		return "", errClaims
	}
	if end, escaped := jsonscan.ScanString(v, 0); !escaped && end == len(v) && utf8.Valid(v[1:end-1]) {
		return string(v[1 : end-1]), nil
	}
	return string(jsonscan.AppendUnquoted(nil, v)), nil
}

// stringOrList reads a claim that is a string or an array of strings: aud
// (RFC 7519), and scope and scp, which authorization servers send both
// ways. With split, a string is a space-separated list (RFC 6749 §3.3),
// and empty entries are dropped.
func stringOrList(v []byte, split bool) ([]string, error) {
	if len(v) > 0 && v[0] == '"' {
		s, err := jsonString(v)
		if err != nil {
			return nil, err
		}
		if !split {
			return []string{s}, nil
		}
		return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' }), nil
	}
	if len(v) == 0 || v[0] != '[' {
		return nil, errClaims
	}
	var out []string
	i := jsonscan.SkipSpace(v, 1)
	if v[i] == ']' {
		return out, nil
	}
	for i < len(v) {
		end := jsonscan.SkipValue(v, i)
		s, err := jsonString(v[i:end])
		if err != nil {
			return nil, err
		}
		if s != "" || !split {
			out = append(out, s)
		}
		i = jsonscan.SkipSpace(v, end)
		if v[i] == ',' {
			i = jsonscan.SkipSpace(v, i+1)
			continue
		}
		break
	}
	return out, nil
}

// numericDate reads exp, nbf or iat with go-jose's NumericDate, which
// takes JSON numbers with fractions and refuses values far enough out to
// overflow time.Time.
func numericDate(v []byte) (*jwt.NumericDate, error) {
	if len(v) == 0 || v[0] == '"' || v[0] == 'n' || v[0] == 't' || v[0] == 'f' || v[0] == '[' || v[0] == '{' {
		return nil, errClaims
	}
	n := new(jwt.NumericDate)
	if err := n.UnmarshalJSON(v); err != nil {
		return nil, errClaims
	}
	return n, nil
}

// canonicalAudience is the form audiences are compared in: for a URI
// with an authority (scheme://host...), the scheme and authority
// lower-cased, a default port (:443 for https, :80 for http) dropped, and
// trailing slashes of the path removed, so that https://MCP.example.com/mcp/
// and https://mcp.example.com:443/mcp name one resource, as RFC 8707 and
// the MCP specification's canonical server URI intend. Anything else
// (an audience that is not such a URI) is compared as it is.
func canonicalAudience(s string) string {
	sep := strings.Index(s, "://")
	if sep <= 0 || !isScheme(s[:sep]) {
		return s
	}
	scheme := strings.ToLower(s[:sep])
	rest := s[sep+3:]
	authEnd := strings.IndexAny(rest, "/?#")
	if authEnd < 0 {
		authEnd = len(rest)
	}
	authority := strings.ToLower(rest[:authEnd])
	switch {
	case scheme == "https" && strings.HasSuffix(authority, ":443"):
		authority = authority[:len(authority)-4]
	case scheme == "http" && strings.HasSuffix(authority, ":80"):
		authority = authority[:len(authority)-3]
	}
	tail := rest[authEnd:]
	pathEnd := strings.IndexAny(tail, "?#")
	if pathEnd < 0 {
		pathEnd = len(tail)
	}
	path := strings.TrimRight(tail[:pathEnd], "/")
	out := scheme + "://" + authority + path + tail[pathEnd:]
	if out == s {
		return s // keep the caller's string: no copy kept alive
	}
	return out
}

// isScheme reports whether s is a URI scheme (RFC 3986 §3.1).
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// audCache keeps the canonical form of the last audience Verify was
// asked about. An endpoint asks about the same one or two audiences on
// every request, so one entry saves the work almost always, and it stays
// bounded whatever callers pass.
type audCache struct{ last atomic.Pointer[[2]string] }

func (a *audCache) canonical(s string) string {
	if p := a.last.Load(); p != nil && p[0] == s {
		return p[1]
	}
	c := canonicalAudience(s)
	a.last.Store(&[2]string{s, c})
	return c
}
