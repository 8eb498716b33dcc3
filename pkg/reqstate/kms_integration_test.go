//go:build integration

package reqstate_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/localkms"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/opcount"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate/awskms"
)

var (
	kmsServer *localkms.Server
	keyARN    string
)

func TestMain(m *testing.M) {
	ctx := context.Background()
	var err error
	if kmsServer, keyARN, err = localkms.StartWithKey(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	kmsServer.Stop()
	os.Exit(code)
}

func newKMSSealer(t testing.TB, c *opcount.Counter, function string, opts ...func(*kms.Options)) *reqstate.KMS {
	t.Helper()
	if c != nil {
		opts = append(opts, func(o *kms.Options) { o.APIOptions = append(o.APIOptions, c.Middleware) })
	}
	s, err := reqstate.NewKMS(awskms.New(kmsServer.Client(opts...)), reqstate.KMSOptions{KeyID: keyARN, Function: function,
		LocalOptions: reqstate.LocalOptions{Audience: "https://api.example.com/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestKMSAcrossInstances: a state sealed on one instance opens on another
// after one Decrypt, then from cache; in steady state a round costs no
// KMS call.
func TestKMSAcrossInstances(t *testing.T) {
	ca, cb := &opcount.Counter{}, &opcount.Counter{}
	a, b := newKMSSealer(t, ca, "mcp"), newKMSSealer(t, cb, "mcp")
	tok, err := a.Seal(ctx, binding(), []byte("round-1"))
	if err != nil {
		t.Fatal(err)
	}
	if ops := ca.Take(); ops["GenerateDataKey"] != 1 || len(ops) != 1 {
		t.Errorf("first seal: %v", ops)
	}
	got, err := b.Open(ctx, binding(), tok)
	if err != nil || string(got) != "round-1" {
		t.Fatalf("open on b: %q %v", got, err)
	}
	if ops := cb.Take(); ops["Decrypt"] != 1 || len(ops) != 1 {
		t.Errorf("cold open: %v", ops)
	}
	if _, err := b.Open(ctx, binding(), tok); err != nil {
		t.Fatal(err)
	}
	if ops := cb.Take(); len(ops) != 0 {
		t.Errorf("warm open: %v", ops)
	}
	// Rounds alternate between the instances: after each has its own key
	// and has opened the other's once, no round calls KMS.
	tokB, _ := b.Seal(ctx, binding(), []byte("x"))
	a.Open(ctx, binding(), tokB)
	ca.Take()
	cb.Take()
	for round := 0; round < 10; round++ {
		sealer, opener := a, b
		if round%2 == 1 {
			sealer, opener = b, a
		}
		tok, err := sealer.Seal(ctx, binding(), []byte(fmt.Sprint("round ", round)))
		if err != nil {
			t.Fatal(err)
		}
		if st, err := opener.Open(ctx, binding(), tok); err != nil || string(st) != fmt.Sprint("round ", round) {
			t.Fatalf("round %d: %q %v", round, st, err)
		}
	}
	if opsA, opsB := ca.Take(), cb.Take(); len(opsA)+len(opsB) != 0 {
		t.Errorf("steady state: %v %v, want no KMS calls", opsA, opsB)
	}
}

// TestKMSTampering: every alteration or transplant is ErrInvalid.
func TestKMSTampering(t *testing.T) {
	c := &opcount.Counter{}
	s := newKMSSealer(t, c, "mcp")
	tok, err := s.Seal(ctx, binding(), []byte("state"))
	if err != nil {
		t.Fatal(err)
	}
	other := newKMSSealer(t, nil, "other-function")
	otherTok, _ := other.Seal(ctx, binding(), []byte("state"))
	raw, _ := base64.RawURLEncoding.DecodeString(tok[3:])
	otherRaw, _ := base64.RawURLEncoding.DecodeString(otherTok[3:])
	n, w := binary.Uvarint(raw)
	on, ow := binary.Uvarint(otherRaw)
	enc := func(b []byte) string { return "k1." + base64.RawURLEncoding.EncodeToString(b) }

	cases := map[string]string{
		"empty":           "",
		"unknown version": "k2." + tok[3:],
		"suffix":          tok + "-TAMPERED",
		"truncated":       tok[:len(tok)-3],
		"extended":        tok + "AA",
		// The other function's encrypted key with this token's ciphertext,
		// and this key with the other's ciphertext.
		"swapped key":        enc(append(append(append([]byte{}, otherRaw[:ow]...), otherRaw[ow:ow+int(on)]...), raw[w+int(n):]...)),
		"swapped ciphertext": enc(append(append([]byte{}, raw[:w+int(n)]...), otherRaw[ow+int(on):]...)),
		"other function":     otherTok,
		"garbage key":        enc(append(binary.AppendUvarint(nil, 32), bytes.Repeat([]byte{7}, 32+12+16+16)...)),
	}
	for i := range raw {
		f := bytes.Clone(raw)
		f[i] ^= 0x01
		cases[fmt.Sprint("flip ", i)] = enc(f)
	}
	for name, tk := range cases {
		if _, err := s.Open(ctx, binding(), tk); !errors.Is(err, reqstate.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	for name, b := range map[string]reqstate.Binding{
		"other principal": {Principal: "mallory", Method: "tools/call", Target: "transfer", ArgsDigest: [32]byte{1, 2, 3}},
		"other target":    {Principal: "alice", Method: "tools/call", Target: "refund", ArgsDigest: [32]byte{1, 2, 3}},
		"other arguments": {Principal: "alice", Method: "tools/call", Target: "transfer", ArgsDigest: [32]byte{9}},
	} {
		if _, err := s.Open(ctx, b, tok); !errors.Is(err, reqstate.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Garbage presented again is refused from the cache, not by KMS.
	c.Take()
	s.Open(ctx, binding(), cases["garbage key"])
	if ops := c.Take(); len(ops) != 0 {
		t.Errorf("a known-bad key cost %v", ops)
	}
}

// TestKMSUnavailable: KMS unreachable or throttled fails closed with
// ErrUnavailable, never with a weaker key.
func TestKMSUnavailable(t *testing.T) {
	fast := func(o *kms.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = 10 * time.Millisecond })
	}
	down := &localkms.Server{Endpoint: "http://127.0.0.1:1"}
	throttle := func(o *kms.Options) {
		fast(o)
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("throttle", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, &types.KMSInternalException{Message: awsString("busy")}
			}), middleware.After)
		})
	}
	good := newKMSSealer(t, nil, "mcp")
	tok, _ := good.Seal(ctx, binding(), []byte("state"))
	for name, client := range map[string]*kms.Client{"down": down.Client(fast), "throttled": kmsServer.Client(throttle)} {
		s, _ := reqstate.NewKMS(awskms.New(client), reqstate.KMSOptions{KeyID: keyARN, Function: "mcp", LocalOptions: reqstate.LocalOptions{Audience: "https://api.example.com/mcp"}})
		if _, err := s.Seal(ctx, binding(), []byte("x")); !errors.Is(err, reqstate.ErrUnavailable) {
			t.Errorf("%s seal: %v", name, err)
		}
		if _, err := s.Open(ctx, binding(), tok); !errors.Is(err, reqstate.ErrUnavailable) {
			t.Errorf("%s open: %v", name, err)
		}
	}
}

func awsString(s string) *string { return &s }
