// Package reqstate seals the state of multi-round-trip MCP requests
// (SEP-2322), so that the opaque requestState a server hands to a client
// comes back unchanged, unexpired, and for the same request — or not at all.
//
// The spec tells servers to treat requestState as attacker-controlled. A
// client holds it between rounds and may replay it, edit it, or move it to
// another request, another tool or another user. A [Sealer] therefore
// binds every state to a [Binding] (principal, method, target, a digest of
// the original arguments) and an expiry, under an AEAD, and every way that
// opening can fail is one error, [ErrInvalid]: the peer learns nothing
// about why.
//
// [Local] is the sealer for one process or for a key shared through
// configuration. A KMS-rooted sealer for a fleet of Lambda instances
// implements the same interface.
package reqstate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
)

// ErrInvalid is the one answer to a state that does not open: malformed,
// unknown version, wrong key, tampered, expired, not yet valid, or bound to
// another request. Callers map it to a single -32602 for the peer; the
// wrapped reason is for logs only.
var ErrInvalid = errors.New("reqstate: invalid or expired request state")

// ErrUnavailable wraps failures of a dependency the sealer needs (for
// example a key service). It is not the peer's fault, and the request may
// succeed if retried.
var ErrUnavailable = errors.New("reqstate: key service unavailable")

// Binding names the request a state belongs to. A state sealed under one
// binding opens only under an equal binding.
type Binding struct {
	Principal string
	Method    string // tools/call, prompts/get or resources/read
	Target    string // tool or prompt name, or resource URI
	// ArgsDigest is a digest of the original request's arguments in
	// canonical form, so that a state cannot be carried to the same tool
	// called with other arguments.
	ArgsDigest [32]byte
	// Endpoint is the canonical URL the request was addressed to, when
	// the transport knows it per request (API Gateway's domain name and
	// path), so that a state cannot be carried to another endpoint that
	// shares the key. "" binds to no endpoint beyond the sealer's own
	// Audience.
	Endpoint string
}

// AppendBinary appends an unambiguous encoding of b (each string
// length-prefixed) to dst, for use as additional authenticated data. An
// empty Endpoint adds nothing, so bindings without one encode as before;
// the fixed-size digest before it keeps the two forms apart.
func (b Binding) AppendBinary(dst []byte) []byte {
	for _, s := range [...]string{b.Principal, b.Method, b.Target} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	dst = append(dst, b.ArgsDigest[:]...)
	if b.Endpoint != "" {
		dst = binary.AppendUvarint(dst, uint64(len(b.Endpoint)))
		dst = append(dst, b.Endpoint...)
	}
	return dst
}

// Digest returns a SHA-256 digest of the binding's encoding.
func (b Binding) Digest() [32]byte { return sha256.Sum256(b.AppendBinary(nil)) }

// Sealer seals and opens request state.
type Sealer interface {
	// Seal returns a token carrying state, bound to b, valid until the
	// sealer's expiry. The token is URL-safe text.
	Seal(ctx context.Context, b Binding, state []byte) (string, error)
	// Open returns the state sealed in token if token was sealed by a
	// sealer sharing this one's key, under an equal binding, and has not
	// expired. Any failure that is the token's fault wraps [ErrInvalid];
	// a failure of a dependency wraps [ErrUnavailable].
	Open(ctx context.Context, b Binding, token string) ([]byte, error)
}
