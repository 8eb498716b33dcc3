package reqstate_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
)

var ctx = context.Background()

func binding() reqstate.Binding {
	return reqstate.Binding{Principal: "alice", Method: "tools/call", Target: "transfer", ArgsDigest: [32]byte{1, 2, 3}}
}

func TestSealOpen(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	a := reqstate.NewLocal(key, nil)
	b := reqstate.NewLocal(key, nil) // another instance sharing the key
	tok, err := a.Seal(ctx, binding(), []byte("step=2"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, "l1.") || strings.ContainsAny(tok, "+/=") {
		t.Errorf("token %q is not l1.<base64url>", tok)
	}
	got, err := b.Open(ctx, binding(), tok)
	if err != nil || string(got) != "step=2" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	// Nonces are random: the same state never gives the same token.
	tok2, _ := a.Seal(ctx, binding(), []byte("step=2"))
	if tok2 == tok {
		t.Error("two seals gave the same token")
	}
	// Empty state is a state.
	tok3, _ := a.Seal(ctx, binding(), nil)
	if got, err := a.Open(ctx, binding(), tok3); err != nil || len(got) != 0 {
		t.Errorf("empty state: %q %v", got, err)
	}
}

// TestTampering is the matrix of ways a client can change a token or move
// it to another request: every one is ErrInvalid.
func TestTampering(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	key := bytes.Repeat([]byte{9}, 32)
	s := reqstate.NewLocal(key, &reqstate.LocalOptions{TTL: time.Minute, Now: clock, Audience: "https://a.example/mcp"})
	tok, err := s.Seal(ctx, binding(), []byte("state"))
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(b reqstate.Binding) reqstate.Binding) reqstate.Binding { return f(binding()) }
	type tc struct {
		name  string
		s     *reqstate.Local
		b     reqstate.Binding
		token string
	}
	cases := []tc{
		{"other principal", s, mutate(func(b reqstate.Binding) reqstate.Binding { b.Principal = "mallory"; return b }), tok},
		{"other method", s, mutate(func(b reqstate.Binding) reqstate.Binding { b.Method = "prompts/get"; return b }), tok},
		{"other target", s, mutate(func(b reqstate.Binding) reqstate.Binding { b.Target = "transfer2"; return b }), tok},
		{"other arguments", s, mutate(func(b reqstate.Binding) reqstate.Binding { b.ArgsDigest[0] ^= 1; return b }), tok},
		{"other audience", reqstate.NewLocal(key, &reqstate.LocalOptions{Now: clock, Audience: "https://b.example/mcp"}), binding(), tok},
		{"other key", reqstate.NewLocal(bytes.Repeat([]byte{8}, 32), &reqstate.LocalOptions{Now: clock, Audience: "https://a.example/mcp"}), binding(), tok},
		{"empty", s, binding(), ""},
		{"prefix only", s, binding(), "l1."},
		{"unknown version", s, binding(), "l2." + tok[3:]},
		{"suffix", s, binding(), tok + "-TAMPERED"},
		{"padding", s, binding(), tok + "="},
		{"truncated", s, binding(), tok[:len(tok)-4]},
		{"extended", s, binding(), tok + "AAAA"},
		{"not base64", s, binding(), "l1.!!!!"},
		{"huge", s, binding(), "l1." + strings.Repeat("A", 1<<20)},
	}
	// Every single-byte flip of the decoded token.
	raw, _ := base64.RawURLEncoding.DecodeString(tok[3:])
	for i := range raw {
		flipped := bytes.Clone(raw)
		flipped[i] ^= 0x80
		cases = append(cases, tc{"flip", s, binding(), "l1." + base64.RawURLEncoding.EncodeToString(flipped)})
	}
	for _, c := range cases {
		if _, err := c.s.Open(ctx, c.b, c.token); !errors.Is(err, reqstate.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", c.name, err)
		}
	}

	// Expiry and issue time.
	now = now.Add(61 * time.Second)
	if _, err := s.Open(ctx, binding(), tok); !errors.Is(err, reqstate.ErrInvalid) {
		t.Errorf("expired: %v", err)
	}
	now = now.Add(-10 * time.Minute) // the opener's clock is far behind the sealer's
	if _, err := s.Open(ctx, binding(), tok); !errors.Is(err, reqstate.ErrInvalid) {
		t.Errorf("not yet valid: %v", err)
	}
}

func TestBounds(t *testing.T) {
	s := reqstate.NewLocal(nil, &reqstate.LocalOptions{MaxState: 8})
	if _, err := s.Seal(ctx, binding(), make([]byte, 9)); err == nil {
		t.Error("sealed a state over the bound")
	}
	if _, err := reqstate.NewLocalKey(make([]byte, 16), nil); err == nil {
		t.Error("accepted a 16-byte key")
	}
}

func TestBindingEncodingIsUnambiguous(t *testing.T) {
	a := reqstate.Binding{Principal: "ab", Method: "c"}
	b := reqstate.Binding{Principal: "a", Method: "bc"}
	if a.Digest() == b.Digest() {
		t.Error("shifting bytes between fields gives the same binding")
	}
}
