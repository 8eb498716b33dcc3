package endpoint

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate/awskms"
)

func TestLoadState(t *testing.T) {
	s, err := LoadState(env())
	if err != nil || s.TTL != DefaultStateTTL || s.Key != nil || s.KMSKey != "" {
		t.Fatalf("defaults: %+v %v", s, err)
	}
	s, err = LoadState(env(EnvStateKey, "c2FtcGxlLWV2ZW50cy1zdGF0ZS1rZXktMzItYnl0ZXM=", EnvStateTTL, "90s"))
	if err != nil || len(s.Key) != 32 || s.TTL != 90*time.Second {
		t.Fatalf("set: %+v %v", s, err)
	}
	for _, bad := range [][]string{
		{EnvStateKey, "c2hvcnQ="}, // 5 bytes: the fixture once took it
		{EnvStateKey, "not base64!"},
		{EnvStateTTL, "forever"}, {EnvStateTTL, "-1s"}, {EnvStateTTL, "25h"},
		{EnvStateKMSKey, "alias/x", EnvStateKey, "c2FtcGxlLWV2ZW50cy1zdGF0ZS1rZXktMzItYnl0ZXM="},
	} {
		if _, err := LoadState(env(bad...)); err == nil || !strings.Contains(err.Error(), "MCP_STATE_") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// TestSealer: the key decides the sealer, and a KMS client is asked for
// only when KMS roots sealing.
func TestSealer(t *testing.T) {
	asked := 0
	kms := func() awskms.API { asked++; return nil }
	s, _ := LoadState(env(EnvStateKey, "c2FtcGxlLWV2ZW50cy1zdGF0ZS1rZXktMzItYnl0ZXM="))
	a, err := s.Sealer(kms, "", "f")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Sealer(kms, "", "f")
	bind := reqstate.Binding{Principal: "p", Method: "tools/call", Target: "t", Endpoint: "https://api.example.com/mcp"}
	tok, err := a.Seal(context.Background(), bind, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Open(context.Background(), bind, tok); err != nil || string(got) != "x" {
		t.Errorf("two sealers of one key: %q %v", got, err)
	}
	if _, ok := a.(*reqstate.Local); !ok || asked != 0 {
		t.Errorf("%T, KMS asked %d times", a, asked)
	}
	s, _ = LoadState(env(EnvStateKMSKey, "alias/mcp"))
	if k, err := s.Sealer(kms, "", "f"); err != nil || asked != 1 {
		t.Errorf("%T %v, KMS asked %d times", k, err, asked)
	}
}
