package reqstate

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"
)

// KeyService is what the KMS sealer needs of AWS KMS: data keys under a
// root key, with an encryption context. Package awskms adapts the AWS SDK
// client; keeping the SDK out of this package keeps it out of every
// program that only needs the local sealer.
type KeyService interface {
	// GenerateDataKey returns a new 256-bit data key, in plaintext and
	// encrypted under keyID with encCtx.
	GenerateDataKey(ctx context.Context, keyID string, encCtx map[string]string) (plaintext, encrypted []byte, err error)
	// Decrypt returns the plaintext of an encrypted data key. A failure
	// that is the ciphertext's fault (forged, altered, another key or
	// context) wraps ErrKeyRefused; any other is the service's.
	Decrypt(ctx context.Context, keyID string, encrypted []byte, encCtx map[string]string) ([]byte, error)
}

// ErrKeyRefused marks a KeyService refusal of the presented ciphertext.
var ErrKeyRefused = errors.New("reqstate: the key service refused the ciphertext")

// KMSOptions configure a [KMS] sealer.
type KMSOptions struct {
	LocalOptions
	// KeyID is the KMS key (id, ARN or alias) that generates data keys.
	KeyID string
	// Function names the function in the encryption context, so that a
	// data key generated for one function does not decrypt for another.
	Function string
	// RotateAfter and RotateUses bound how long and how often one data key
	// seals before a new one is generated. Defaults 1 hour, 1,000,000.
	RotateAfter time.Duration
	RotateUses  int
	// CacheSize bounds the plaintext data keys kept per instance for
	// opening. Default 64.
	CacheSize int
}

// Purpose is the encryption context's "purpose": the key policy and the
// function's IAM policy allow the key's use only with it.
const Purpose = "mcp-request-state"

// KMS seals request state under data keys that AWS KMS generates, so that
// any instance of a fleet can open any instance's state, no key material
// is configured anywhere, and the root key never leaves KMS.
//
// Token format, base64url without padding after the "k1." prefix:
//
//	len(encrypted data key) (uvarint) | encrypted data key | nonce (12) |
//	AES-256-GCM ciphertext of [issuedAt | expiry | state] | tag (16)
//
// The additional data binds the format, the audience, the [Binding] and
// the token's header, so that no byte of a token can change.
// The data key's encryption context is {purpose, function}.
//
// In steady state a round costs no KMS call: the sealing data key is
// reused until it rotates, and an opened data key is cached by a digest
// of its encrypted form. A token sealed on another instance costs one
// Decrypt, then none.
type KMS struct {
	client KeyService
	opts   KMSOptions
	ctx    map[string]string

	mu      sync.Mutex
	current *dataKey
	opened  boundedCache // data keys, by digest of the encrypted key
	refused boundedCache // encrypted keys KMS refused, so garbage sent again costs no call
}

// boundedCache maps digests of encrypted keys to opened keys, dropping the
// oldest entry past its bound. Refusals have their own cache, so a flood
// of garbage cannot evict the keys in use.
type boundedCache struct {
	max   int
	m     map[[32]byte]cipher.AEAD
	order [][32]byte
}

func newBoundedCache(max int) boundedCache {
	return boundedCache{max: max, m: map[[32]byte]cipher.AEAD{}}
}

func (c *boundedCache) get(id [32]byte) (cipher.AEAD, bool) {
	a, ok := c.m[id]
	return a, ok
}

func (c *boundedCache) put(id [32]byte, a cipher.AEAD) {
	if _, ok := c.m[id]; !ok {
		c.order = append(c.order, id)
	}
	c.m[id] = a
	for len(c.order) > c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

type dataKey struct {
	aead      cipher.AEAD
	encrypted []byte
	created   time.Time
	uses      int
}

const kmsPrefix = "k1."

// NewKMS returns a sealer rooted in the KMS key opts.KeyID.
func NewKMS(client KeyService, opts KMSOptions) (*KMS, error) {
	if opts.KeyID == "" {
		return nil, errors.New("reqstate: a KMS sealer needs a key id")
	}
	opts.LocalOptions = opts.LocalOptions.withDefaults()
	if opts.RotateAfter <= 0 {
		opts.RotateAfter = time.Hour
	}
	if opts.RotateUses <= 0 {
		opts.RotateUses = 1_000_000
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = 64
	}
	return &KMS{
		client:  client,
		opts:    opts,
		ctx:     map[string]string{"purpose": Purpose, "function": opts.Function},
		opened:  newBoundedCache(opts.CacheSize),
		refused: newBoundedCache(4 * opts.CacheSize),
	}, nil
}

var _ Sealer = (*KMS)(nil)

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealingKey returns the current data key, generating one when there is
// none or it is due for rotation.
func (k *KMS) sealingKey(ctx context.Context) (*dataKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.opts.Now()
	if c := k.current; c != nil && now.Sub(c.created) < k.opts.RotateAfter && c.uses < k.opts.RotateUses {
		c.uses++
		return c, nil
	}
	plaintext, encrypted, err := k.client.GenerateDataKey(ctx, k.opts.KeyID, k.ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: GenerateDataKey: %w", ErrUnavailable, err)
	}
	aead, err := newAEAD(plaintext)
	clear(plaintext)
	if err != nil {
		return nil, fmt.Errorf("reqstate: data key: %w", err)
	}
	k.current = &dataKey{aead: aead, encrypted: encrypted, created: now, uses: 1}
	// The instance that sealed can open without asking KMS.
	k.opened.put(sha256.Sum256(encrypted), aead)
	return k.current, nil
}

func (k *KMS) aad(b Binding) []byte { return additionalData(kmsPrefix, k.opts.Audience, b) }

// Seal implements [Sealer].
func (k *KMS) Seal(ctx context.Context, b Binding, state []byte) (string, error) {
	if len(state) > k.opts.MaxState {
		return "", fmt.Errorf("reqstate: state of %d bytes exceeds the %d-byte bound", len(state), k.opts.MaxState)
	}
	dk, err := k.sealingKey(ctx)
	if err != nil {
		return "", err
	}
	// The header (length and encrypted key) is authenticated too: KMS may
	// decrypt an altered blob to the same key, and a token must be
	// exactly what was issued.
	header := binary.AppendUvarint(make([]byte, 0, 8+len(dk.encrypted)), uint64(len(dk.encrypted)))
	header = append(header, dk.encrypted...)
	out := sealPayload(dk.aead, header, k.aad(b), state, k.opts.Now(), k.opts.TTL)
	return kmsPrefix + base64.RawURLEncoding.EncodeToString(out), nil
}

// maxEncryptedKey bounds the encrypted data key a token may carry (KMS
// ciphertext blobs for a 32-byte key are under 200 bytes).
const maxEncryptedKey = 1024

// Open implements [Sealer].
func (k *KMS) Open(ctx context.Context, b Binding, token string) ([]byte, error) {
	maxLen := len(kmsPrefix) + base64.RawURLEncoding.EncodedLen(10+maxEncryptedKey+12+16+k.opts.MaxState+16)
	raw, err := decodeToken(token, kmsPrefix, maxLen)
	if err != nil {
		return nil, err
	}
	n, w := binary.Uvarint(raw)
	if w <= 0 || n == 0 || n > maxEncryptedKey || uint64(len(raw)-w) < n {
		return nil, fmt.Errorf("%w: malformed key field", ErrInvalid)
	}
	header, encrypted, rest := raw[:w+int(n)], raw[w:w+int(n)], raw[w+int(n):]
	aead, err := k.openingKey(ctx, encrypted)
	if err != nil {
		return nil, err
	}
	return openPayload(aead, rest, append(k.aad(b), header...), k.opts.Now(), k.opts.Skew)
}

// openingKey returns the data key that encrypted is, from the cache or
// from one Decrypt.
func (k *KMS) openingKey(ctx context.Context, encrypted []byte) (cipher.AEAD, error) {
	id := sha256.Sum256(encrypted)
	k.mu.Lock()
	aead, ok := k.opened.get(id)
	_, refused := k.refused.get(id)
	k.mu.Unlock()
	switch {
	case ok:
		return aead, nil
	case refused:
		return nil, fmt.Errorf("%w: data key did not decrypt (remembered)", ErrInvalid)
	}
	plaintext, err := k.client.Decrypt(ctx, k.opts.KeyID, encrypted, k.ctx)
	if err != nil {
		if errors.Is(err, ErrKeyRefused) {
			k.mu.Lock()
			k.refused.put(id, nil)
			k.mu.Unlock()
			return nil, fmt.Errorf("%w: data key did not decrypt: %w", ErrInvalid, err)
		}
		return nil, fmt.Errorf("%w: Decrypt: %w", ErrUnavailable, err)
	}
	aead, err = newAEAD(plaintext)
	clear(plaintext)
	if err != nil {
		return nil, fmt.Errorf("%w: data key: %w", ErrInvalid, err)
	}
	k.mu.Lock()
	k.opened.put(id, aead)
	k.mu.Unlock()
	return aead, nil
}
