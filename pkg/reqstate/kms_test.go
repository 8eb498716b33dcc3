package reqstate_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
)

// fakeKMS wraps data keys under a key in memory. It stands in for KMS in
// fast unit tests, fuzzing and benchmarks; the integration tests use
// local-kms.
type fakeKMS struct {
	aead     cipher.AEAD
	generate atomic.Int32
	decrypt  atomic.Int32
	fail     error
}

func newFakeKMS() *fakeKMS {
	k := make([]byte, 32)
	rand.Read(k)
	b, _ := aes.NewCipher(k)
	a, _ := cipher.NewGCM(b)
	return &fakeKMS{aead: a}
}

func contextAAD(ec map[string]string) []byte {
	keys := make([]string, 0, len(ec))
	for k := range ec {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b []byte
	for _, k := range keys {
		b = append(b, k+"="+ec[k]+";"...)
	}
	return b
}

func (f *fakeKMS) GenerateDataKey(ctx context.Context, keyID string, encCtx map[string]string) ([]byte, []byte, error) {
	f.generate.Add(1)
	if f.fail != nil {
		return nil, nil, f.fail
	}
	pt := make([]byte, 32)
	rand.Read(pt)
	nonce := make([]byte, 12)
	rand.Read(nonce)
	blob := f.aead.Seal(nonce, nonce, pt, contextAAD(encCtx))
	return bytes.Clone(pt), blob, nil
}

func (f *fakeKMS) Decrypt(ctx context.Context, keyID string, encrypted []byte, encCtx map[string]string) ([]byte, error) {
	f.decrypt.Add(1)
	if f.fail != nil {
		return nil, f.fail
	}
	if len(encrypted) < 12 {
		return nil, reqstate.ErrKeyRefused
	}
	pt, err := f.aead.Open(nil, encrypted[:12], encrypted[12:], contextAAD(encCtx))
	if err != nil {
		return nil, reqstate.ErrKeyRefused
	}
	return pt, nil
}

func newFakeSealer(t testing.TB, f *fakeKMS, opts reqstate.KMSOptions) *reqstate.KMS {
	t.Helper()
	opts.KeyID = "alias/test"
	s, err := reqstate.NewKMS(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestKMSRotation(t *testing.T) {
	f := newFakeKMS()
	now := time.Unix(1_800_000_000, 0)
	s := newFakeSealer(t, f, reqstate.KMSOptions{RotateAfter: time.Minute, RotateUses: 3,
		LocalOptions: reqstate.LocalOptions{Now: func() time.Time { return now }}})
	var toks []string
	for i := 0; i < 4; i++ {
		tok, err := s.Seal(ctx, binding(), []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, tok)
	}
	if got := f.generate.Load(); got != 2 {
		t.Errorf("4 seals with 3 uses per key: %d data keys, want 2", got)
	}
	now = now.Add(2 * time.Minute)
	s.Seal(ctx, binding(), []byte("x"))
	if got := f.generate.Load(); got != 3 {
		t.Errorf("after RotateAfter: %d data keys, want 3", got)
	}
	// Old tokens still open (within their TTL), from the cache.
	now = now.Add(-time.Minute)
	for _, tok := range toks {
		if _, err := s.Open(ctx, binding(), tok); err != nil {
			t.Error(err)
		}
	}
	if d := f.decrypt.Load(); d != 0 {
		t.Errorf("opening own tokens cost %d Decrypts", d)
	}
}

func TestKMSFailsClosed(t *testing.T) {
	f := newFakeKMS()
	good := newFakeSealer(t, f, reqstate.KMSOptions{})
	tok, _ := good.Seal(ctx, binding(), []byte("x"))
	f.fail = errors.New("connection refused")
	cold := newFakeSealer(t, f, reqstate.KMSOptions{})
	if _, err := cold.Seal(ctx, binding(), []byte("x")); !errors.Is(err, reqstate.ErrUnavailable) {
		t.Errorf("seal: %v", err)
	}
	if _, err := cold.Open(ctx, binding(), tok); !errors.Is(err, reqstate.ErrUnavailable) {
		t.Errorf("open: %v", err)
	}
	if _, err := reqstate.NewKMS(f, reqstate.KMSOptions{}); err == nil {
		t.Error("a sealer without a key id")
	}
}

// maxFuzzKMSToken bounds the tokens FuzzKMSOpen looks at: above the
// issued token's 150 bytes and every seed. Longer inputs only cost time:
// the coverage counters of the per-byte loops (base64) make a long token
// "new coverage" that no shorter one has, and the engine's minimizer then
// tries up to n²/2 shorter candidates of n bytes each, for up to
// -fuzzminimizetime, counting no executions meanwhile (0 execs/s).
const maxFuzzKMSToken = 256

// FuzzKMSOpen: arbitrary tokens never panic and never open, unless they
// are exactly a token the sealer issued.
func FuzzKMSOpen(f *testing.F) {
	fk := newFakeKMS()
	s, _ := reqstate.NewKMS(fk, reqstate.KMSOptions{KeyID: "alias/test"})
	issued, _ := s.Seal(context.Background(), binding(), []byte("state"))
	f.Add(issued)
	f.Add(issued + "A")
	f.Add(strings.Replace(issued, "k1.", "l1.", 1))
	f.Add("k1.")
	f.Add("k1.AA")
	f.Add("k1.gICAgICAgICAgAE")
	f.Add("k1." + strings.Repeat("_", 200))
	f.Fuzz(func(t *testing.T, tok string) {
		if len(tok) > maxFuzzKMSToken {
			return
		}
		st, err := s.Open(context.Background(), binding(), tok)
		if tok == issued {
			if err != nil || string(st) != "state" {
				t.Fatalf("issued token: %q %v", st, err)
			}
			return
		}
		if err == nil {
			t.Fatalf("token %q opened to %q", tok, st)
		}
		if !errors.Is(err, reqstate.ErrInvalid) {
			t.Fatalf("token %q: %v, want ErrInvalid", tok, err)
		}
	})
}

func BenchmarkKMSSeal(b *testing.B) {
	s := newFakeSealer(b, newFakeKMS(), reqstate.KMSOptions{})
	state := bytes.Repeat([]byte("s"), 256)
	s.Seal(ctx, binding(), state) // warm: the data key exists
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Seal(ctx, binding(), state); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKMSOpen(b *testing.B) {
	f := newFakeKMS()
	sealer := newFakeSealer(b, f, reqstate.KMSOptions{})
	opener := newFakeSealer(b, f, reqstate.KMSOptions{})
	tok, _ := sealer.Seal(ctx, binding(), bytes.Repeat([]byte("s"), 256))
	opener.Open(ctx, binding(), tok) // warm: the data key is cached
	before := f.decrypt.Load()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := opener.Open(ctx, binding(), tok); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(f.decrypt.Load()-before)/float64(b.N), "decrypts/op")
}

func BenchmarkLocalSeal(b *testing.B) {
	s := reqstate.NewLocal(nil, nil)
	state := bytes.Repeat([]byte("s"), 256)
	b.ReportAllocs()
	for b.Loop() {
		s.Seal(ctx, binding(), state)
	}
}
