package apigw

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/serverless-mcp/mcp-lambda/internal/jsonscan"
)

// Principals are namespaced by the source that established them, so that
// a JWT subject, an IAM ARN and a Lambda authorizer's principal id can
// never name the same caller by accident, and none of them can be the
// anonymous caller:
//
//   - "jwt:<iss>#<sub>": a JWT validated by an HTTP API JWT authorizer or
//     a REST API Cognito user pool authorizer. It is exactly the form the
//     function's own bearer-token verifier produces ("jwt:" + iss + "#" +
//     sub), so a user is one principal whichever of them validated the
//     token.
//   - "iam:<arn>": an IAM caller (HTTP API and function URL iam.userArn;
//     REST identity.userArn on a route with IAM authorization).
//   - "authorizer:<id>": a Lambda authorizer's principal (HTTP API
//     lambda.principalId, else lambda.sub; REST principalId).
const (
	principalJWT        = "jwt:"
	principalIAM        = "iam:"
	principalAuthorizer = "authorizer:"
)

// jwtPrincipal is the principal of a validated JWT with issuer iss and
// subject sub.
func jwtPrincipal(iss, sub string) string { return principalJWT + iss + "#" + sub }

// principal names the caller as the gateway established it, from the
// request context's authorizer and, for REST APIs, its identity. It
// returns ("", false) for a request with no identity source at all (no
// authorizer context, no IAM identity): the anonymous caller. A request
// that carries an identity source without a usable identity in it is
// unidentified ("", true), never anonymous: an authorizer let it through,
// so it is somebody, and serving it as the caller everyone shares would
// leak between callers.
//
// Members are read by their exact names (encoding/json would also match
// "PrincipalId" for "principalId", and take whichever came last), and a
// member of another type elsewhere in a context does not stop the rest
// from being read. A member the principal is read from that occurs twice
// is ambiguous: unusable.
func principal(k Kind, authz, ident json.RawMessage) (p string, unidentified bool) {
	if !emptyObject(authz) {
		if k == KindREST {
			p = restAuthorizer(authz)
		} else {
			p = httpAuthorizer(authz)
		}
		return p, p == ""
	}
	if k == KindREST {
		return restIAM(ident)
	}
	return "", false
}

// httpAuthorizer reads a payload format 2.0 authorizer context: exactly
// one of jwt, iam and lambda.
func httpAuthorizer(b json.RawMessage) string {
	var v [3]json.RawMessage
	if !members(b, v[:], "jwt", "iam", "lambda") {
		return ""
	}
	jwt, iam, lambda := v[0], v[1], v[2]
	if (jwt != nil) && (iam != nil) || (jwt != nil) && (lambda != nil) || (iam != nil) && (lambda != nil) {
		return "" // a context no gateway builds: which one is it?
	}
	switch {
	case jwt != nil:
		var c [1]json.RawMessage
		if !members(jwt, c[:], "claims") {
			return ""
		}
		return claimsPrincipal(c[0])
	case iam != nil:
		var a [1]json.RawMessage
		if !members(iam, a[:], "userArn") {
			return ""
		}
		if arn, ok := stringValue(a[0]); ok && arn != "" {
			return principalIAM + arn
		}
	case lambda != nil:
		var l [2]json.RawMessage
		if !members(lambda, l[:], "principalId", "sub") {
			return ""
		}
		for _, raw := range l {
			if id, ok := stringValue(raw); ok && id != "" {
				return principalAuthorizer + id
			}
		}
	}
	return ""
}

// restAuthorizer reads a payload format 1.0 authorizer context: a Cognito
// user pool authorizer's claims (an object: a Lambda authorizer's context
// holds only strings, numbers and booleans), else a Lambda authorizer's
// principalId. Its other members (integrationLatency, the authorizer's
// own context) are not looked at.
func restAuthorizer(b json.RawMessage) string {
	var v [2]json.RawMessage
	if !members(b, v[:], "claims", "principalId") {
		return ""
	}
	if isObject(v[0]) {
		return claimsPrincipal(v[0])
	}
	if id, ok := stringValue(v[1]); ok && id != "" {
		return principalAuthorizer + id
	}
	return ""
}

// claimsPrincipal reads a validated JWT's claims: both iss and sub must
// be non-empty strings. An issuer with a '#' (no issuer identifier has
// one: it is a URL without a fragment) would make "jwt:<iss>#<sub>"
// ambiguous, and is refused.
func claimsPrincipal(b json.RawMessage) string {
	var c [2]json.RawMessage
	if !members(b, c[:], "iss", "sub") {
		return ""
	}
	iss, ok1 := stringValue(c[0])
	sub, ok2 := stringValue(c[1])
	if !ok1 || !ok2 || iss == "" || sub == "" || strings.Contains(iss, "#") {
		return ""
	}
	return jwtPrincipal(iss, sub)
}

// restIAM reads a REST API request context's identity. Every REST event
// has one (source IP, user agent); it is an identity source when the
// route uses IAM authorization, which fills in userArn, accessKey, caller
// and user: any of them set makes it one, and userArn must then be a
// non-empty string.
func restIAM(b json.RawMessage) (string, bool) {
	if emptyObject(b) {
		return "", false
	}
	var v [4]json.RawMessage
	if !members(b, v[:], "userArn", "accessKey", "caller", "user") {
		return "", true
	}
	if v[0] == nil && v[1] == nil && v[2] == nil && v[3] == nil {
		return "", false // no IAM on this route
	}
	if arn, ok := stringValue(v[0]); ok && arn != "" {
		return principalIAM + arn, false
	}
	return "", true
}

// emptyObject reports whether b is absent, null or {}: no identity source.
func emptyObject(b []byte) bool {
	i := jsonscan.SkipSpace(b, 0)
	if i == len(b) || string(b[i:]) == "null" {
		return true
	}
	if b[i] != '{' {
		return false
	}
	i = jsonscan.SkipSpace(b, i+1)
	return i < len(b) && b[i] == '}'
}

func isObject(b []byte) bool {
	i := jsonscan.SkipSpace(b, 0)
	return i < len(b) && b[i] == '{'
}

// members sets dst[i] to the value of b's member named exactly names[i],
// or nil when it is absent or null. b must be JSON that encoding/json has
// accepted. It reports false when b is not an object or one of names
// occurs twice.
func members(b []byte, dst []json.RawMessage, names ...string) bool {
	clear(dst)
	var seen uint64 // names found, null or not; len(names) <= 64
	return jsonscan.Members(b, func(name, value []byte) bool {
		for j, n := range names {
			if string(name) != n {
				continue
			}
			if seen&(1<<j) != 0 {
				return false
			}
			seen |= 1 << j
			if string(value) != "null" {
				dst[j] = value
			}
		}
		return true
	})
}

// stringValue returns the string JSON value b holds, as encoding/json
// reads it (invalid UTF-8 becomes U+FFFD); false when b is not a string.
func stringValue(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' {
		return "", false
	}
	if _, escaped := jsonscan.ScanString(b, 0); !escaped && utf8.Valid(b) {
		return string(b[1 : len(b)-1]), true
	}
	return string(jsonscan.AppendUnquoted(make([]byte, 0, len(b)-2), b)), true
}
