package reqstate

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
)

// LocalOptions configure a [Local] sealer.
type LocalOptions struct {
	// TTL is how long a sealed state stays valid. Default 10 minutes: long
	// enough for a person to answer a form, short enough to bound replays.
	TTL time.Duration
	// Skew is the clock skew tolerated on the issued-at time. Default 1 minute.
	Skew time.Duration
	// Audience names this endpoint; a state sealed for another audience
	// under the same key does not open. Default "".
	Audience string
	// MaxState bounds the handler state a token may carry. Default 16 KiB.
	MaxState int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (o *LocalOptions) withDefaults() LocalOptions {
	var c LocalOptions
	if o != nil {
		c = *o
	}
	if c.TTL <= 0 {
		c.TTL = 10 * time.Minute
	}
	if c.Skew <= 0 {
		c.Skew = time.Minute
	}
	if c.MaxState <= 0 {
		c.MaxState = 16 << 10
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Local seals state with AES-256-GCM under one key held in memory.
//
// Token format, base64url without padding after the "l1." prefix:
//
//	nonce (12) | ciphertext of [issuedAt (8, unix seconds) | expiry (8) | state] | tag (16)
//
// The additional data is the audience and the [Binding], so a token opens
// only for the request it was issued for.
type Local struct {
	aead cipher.AEAD
	opts LocalOptions
}

const localPrefix = "l1."

// NewLocal returns a sealer keyed by key, which must be 32 bytes; nil
// draws a random key, valid only for this process.
func NewLocal(key []byte, opts *LocalOptions) *Local {
	if key == nil {
		key = make([]byte, 32)
		rand.Read(key)
	}
	l, err := newLocal(key, opts)
	if err != nil {
		panic(err)
	}
	return l
}

// NewLocalKey is NewLocal for a key from configuration: it reports a key
// of the wrong size as an error instead of panicking.
func NewLocalKey(key []byte, opts *LocalOptions) (*Local, error) { return newLocal(key, opts) }

func newLocal(key []byte, opts *LocalOptions) (*Local, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("reqstate: key must be 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("reqstate: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("reqstate: %w", err)
	}
	return &Local{aead: aead, opts: opts.withDefaults()}, nil
}

func (l *Local) aad(b Binding) []byte { return additionalData(localPrefix, l.opts.Audience, b) }

// additionalData is what every token authenticates besides its payload:
// its format, the audience and the binding.
func additionalData(prefix, audience string, b Binding) []byte {
	ad := make([]byte, 0, 64+len(b.Principal)+len(b.Method)+len(b.Target)+len(audience))
	ad = append(ad, prefix...)
	ad = binary.AppendUvarint(ad, uint64(len(audience)))
	ad = append(ad, audience...)
	return b.AppendBinary(ad)
}

// decodeToken checks a token's prefix and size and decodes its body. The
// decoder itself would skip CR and LF; a token is exactly what was issued.
func decodeToken(token, prefix string, maxLen int) ([]byte, error) {
	switch {
	case !strings.HasPrefix(token, prefix):
		return nil, fmt.Errorf("%w: unknown format", ErrInvalid)
	case len(token) > maxLen:
		return nil, fmt.Errorf("%w: too long", ErrInvalid)
	case strings.ContainsAny(token, "\r\n"):
		return nil, fmt.Errorf("%w: not base64url", ErrInvalid)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token[len(prefix):])
	if err != nil {
		return nil, fmt.Errorf("%w: not base64url", ErrInvalid)
	}
	return raw, nil
}

// Seal implements [Sealer].
func (l *Local) Seal(_ context.Context, b Binding, state []byte) (string, error) {
	if len(state) > l.opts.MaxState {
		return "", fmt.Errorf("reqstate: state of %d bytes exceeds the %d-byte bound", len(state), l.opts.MaxState)
	}
	out := sealPayload(l.aead, nil, l.aad(b), state, l.opts.Now(), l.opts.TTL)
	return localPrefix + base64.RawURLEncoding.EncodeToString(out), nil
}

// maxTokenLen bounds the work spent on a token before it is rejected.
func (l *Local) maxTokenLen() int {
	raw := l.aead.NonceSize() + 16 + l.opts.MaxState + l.aead.Overhead()
	return len(localPrefix) + base64.RawURLEncoding.EncodedLen(raw)
}

// Open implements [Sealer].
func (l *Local) Open(_ context.Context, b Binding, token string) ([]byte, error) {
	raw, err := decodeToken(token, localPrefix, l.maxTokenLen())
	if err != nil {
		return nil, err
	}
	return openPayload(l.aead, raw, l.aad(b), l.opts.Now(), l.opts.Skew)
}

// sealPayload appends to header a random nonce and the AEAD sealing of
// [issuedAt | expiry | state], with ad and the header as additional data.
func sealPayload(aead cipher.AEAD, header, ad, state []byte, now time.Time, ttl time.Duration) []byte {
	plain := make([]byte, 16, 16+len(state))
	binary.BigEndian.PutUint64(plain[0:], uint64(now.Unix()))
	binary.BigEndian.PutUint64(plain[8:], uint64(now.Add(ttl).Unix()))
	plain = append(plain, state...)
	ns := aead.NonceSize()
	out := make([]byte, len(header)+ns, len(header)+ns+len(plain)+aead.Overhead())
	copy(out, header)
	rand.Read(out[len(header):])
	return aead.Seal(out, out[len(header):], plain, append(ad, header...))
}

// openPayload authenticates raw (nonce | ciphertext) under aead and ad and
// checks the validity window, returning the handler state.
func openPayload(aead cipher.AEAD, raw, ad []byte, now time.Time, skew time.Duration) ([]byte, error) {
	ns := aead.NonceSize()
	if len(raw) < ns+aead.Overhead()+16 {
		return nil, fmt.Errorf("%w: too short", ErrInvalid)
	}
	plain, err := aead.Open(nil, raw[:ns], raw[ns:], ad)
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed", ErrInvalid)
	}
	iat := int64(binary.BigEndian.Uint64(plain[0:]))
	exp := int64(binary.BigEndian.Uint64(plain[8:]))
	t := now.Unix()
	switch {
	case t >= exp:
		return nil, fmt.Errorf("%w: expired", ErrInvalid)
	case iat > t+int64(skew/time.Second):
		return nil, fmt.Errorf("%w: not yet valid", ErrInvalid)
	}
	return plain[16:], nil
}

var _ Sealer = (*Local)(nil)

// IsInvalid reports whether err means the token was at fault.
func IsInvalid(err error) bool { return errors.Is(err, ErrInvalid) }
