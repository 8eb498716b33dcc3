package reqstate_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
)

// violated fails t for a broken property, named by id.
func violated(t *testing.T, id, format string, args ...any) {
	t.Helper()
	t.Errorf(id+": "+format, args...)
}

// fuzzing reports whether this process runs generated inputs for go test
// -fuzz (a fuzz worker), not the seed corpus under go test.
func fuzzing() bool {
	f := flag.Lookup("test.fuzzworker")
	return f != nil && f.Value.String() == "true"
}

// maxFuzzInput bounds each input FuzzOpen and FuzzOpenTamper look at
// while fuzzing; under go test the seeds at the 4096-byte state bound and
// the token bound (4 to 6 KB) still run. Longer generated inputs only
// cost time: the engine minimizes every input that brings new coverage,
// trying up to n²/2 shorter candidates for n bytes, one run each, for up
// to -fuzzminimizetime, and counts no executions meanwhile (0 execs/s).
// Mutants of those seeds stalled fuzzing for 30 s and more each.
const maxFuzzInput = 512

// fuzzKey, fuzzEpoch and fuzzBinding fix the sealer of the fuzz targets,
// so that tokens kept in seed files stay valid.
var (
	fuzzKey     = bytes.Repeat([]byte{0x5a}, 32)
	fuzzEpoch   = time.Unix(1_800_000_000, 0)
	fuzzBinding = reqstate.Binding{Principal: "alice", Method: "tools/call", Target: "transfer", ArgsDigest: [32]byte{1, 2, 3}}
	fuzzStates  = []string{"", "step=2", `{"round":1,"answers":["yes"]}`, "\x00\xff binary"}
)

const fuzzTTL = 10 * time.Minute

// fuzzSealer returns the fixed sealer, reading the clock through now.
func fuzzSealer(now *time.Time) *reqstate.Local {
	return reqstate.NewLocal(fuzzKey, &reqstate.LocalOptions{
		TTL: fuzzTTL, Audience: "https://mcp.example/mcp", MaxState: 4096,
		Now: func() time.Time { return *now },
	})
}

// FuzzOpen opens arbitrary tokens under a fixed binding: Open never
// panics, and it fails with ErrInvalid unless the token is, byte for byte,
// one the sealer issued.
func FuzzOpen(f *testing.F) {
	now := fuzzEpoch
	s := fuzzSealer(&now)
	for _, st := range fuzzStates {
		tok, err := s.Seal(context.Background(), fuzzBinding, []byte(st))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tok)
		f.Add(tok[:len(tok)-1])
		f.Add(strings.ToUpper(tok))
	}
	for _, tok := range []string{
		"", "l1", "l1.", "l2.AAAA", "L1.AAAA", "l1.AAAA", "l1.====", "l1.!!!!", "l1.AA\nAA",
		"l1." + strings.Repeat("A", 64), "l1." + strings.Repeat("_", 100), "l1." + strings.Repeat("A", 6000),
		"l1.\xff\xfe", "l1.+/+/", "l1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
	} {
		f.Add(tok)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		if fuzzing() && len(tok) > maxFuzzInput {
			return
		}
		st, err := s.Open(context.Background(), fuzzBinding, tok)
		if err != nil {
			if !errors.Is(err, reqstate.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		// It opened, so its decoded bytes were sealed under fuzzKey (GCM
		// cannot be forged). The text must be exactly the sealer's
		// encoding of them.
		raw, derr := base64.RawURLEncoding.Strict().DecodeString(tok[len("l1."):])
		if derr != nil || "l1."+base64.RawURLEncoding.EncodeToString(raw) != tok {
			violated(t, "open/exact-token", "token %q opened, but it is not one the sealer issued", tok)
		}
		if !slices.Contains(fuzzStates, string(st)) {
			t.Errorf("opened to unknown state %q", st)
		}
	})
}

// tamper edits tok as ops directs: each three bytes are an operation
// (flip, insert, delete, or set), a position and a byte value.
func tamper(tok string, ops []byte) string {
	b := []byte(tok)
	for i := 0; i+2 < len(ops); i += 3 {
		op, pos, val := ops[i]%4, int(ops[i+1]), ops[i+2]
		if len(b) > 0 {
			pos %= len(b) + 1
		} else {
			pos = 0
		}
		switch op {
		case 0: // flip bits
			if pos < len(b) {
				b[pos] ^= val | 1
			}
		case 1: // insert a byte
			b = slices.Insert(b, pos, val)
		case 2: // delete a byte
			if pos < len(b) {
				b = slices.Delete(b, pos, pos+1)
			}
		case 3: // set a byte
			if pos < len(b) {
				b[pos] = val
			}
		}
	}
	return string(b)
}

// FuzzOpenTamper seals a state, edits the token as directed, and opens it
// at a clock offset: it opens to the same state exactly when the token is
// unchanged and the clock is inside the validity window, and fails with
// ErrInvalid otherwise. A moved token (another binding, audience or key)
// never opens.
func FuzzOpenTamper(f *testing.F) {
	f.Add([]byte("step=2"), []byte{}, int64(0))
	f.Add([]byte("step=2"), []byte{0, 10, 0x80}, int64(0))
	f.Add([]byte(`{"a":1}`), []byte{1, 3, 'A'}, int64(30))
	f.Add([]byte{}, []byte{2, 40, 0}, int64(-30))
	f.Add([]byte("x"), []byte{3, 0, 'L'}, int64(0))
	f.Add([]byte("x"), []byte{1, 255, '='}, int64(0))
	f.Add([]byte("x"), []byte{1, 20, ' '}, int64(0))
	f.Add([]byte("x"), []byte{0, 7, 0x40, 2, 8, 0}, int64(0))
	f.Add([]byte("expire"), []byte{}, int64(600))
	f.Add([]byte("expire"), []byte{}, int64(599))
	f.Add([]byte("early"), []byte{}, int64(-60))
	f.Add([]byte("early"), []byte{}, int64(-61))
	f.Add(bytes.Repeat([]byte("big"), 2000), []byte{}, int64(1))
	f.Fuzz(func(t *testing.T, state, ops []byte, offset int64) {
		if fuzzing() && (len(state) > maxFuzzInput || len(ops) > maxFuzzInput) {
			return
		}
		cryptotest.SetGlobalRandom(t, 1) // one nonce: reproducible tokens
		now := fuzzEpoch
		s := fuzzSealer(&now)
		ctx := context.Background()
		tok, err := s.Seal(ctx, fuzzBinding, state)
		if len(state) > 4096 {
			if err == nil {
				t.Fatalf("sealed a %d-byte state over the bound", len(state))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		edited := tamper(tok, ops)
		offset %= 1 << 32 // keep the clock representable
		now = fuzzEpoch.Add(time.Duration(offset) * time.Second)
		inWindow := offset >= -60 && offset < int64(fuzzTTL/time.Second)
		got, err := s.Open(ctx, fuzzBinding, edited)
		switch {
		case err != nil && !errors.Is(err, reqstate.ErrInvalid):
			t.Fatalf("error %v does not wrap ErrInvalid", err)
		case edited == tok && inWindow:
			if err != nil || !bytes.Equal(got, state) {
				t.Fatalf("unchanged token at offset %ds: %q, %v", offset, got, err)
			}
		case edited == tok:
			if err == nil {
				t.Fatalf("opened outside the window at offset %ds", offset)
			}
		case err == nil:
			violated(t, "open/exact-token", "edited token %q (from %q) opened to %q", edited, tok, got)
		}
		now = fuzzEpoch
		other := fuzzBinding
		other.Target += string(ops)
		if string(ops) != "" {
			if _, err := s.Open(ctx, other, tok); !errors.Is(err, reqstate.ErrInvalid) {
				t.Fatalf("token opened under another binding: %v", err)
			}
		}
		moved := reqstate.NewLocal(fuzzKey, &reqstate.LocalOptions{Now: func() time.Time { return now }})
		if _, err := moved.Open(ctx, fuzzBinding, tok); !errors.Is(err, reqstate.ErrInvalid) {
			t.Fatalf("token opened for another audience: %v", err)
		}
	})
}
