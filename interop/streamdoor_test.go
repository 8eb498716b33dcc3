//go:build unix && !integration

package interop

import (
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/oauthmock"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
)

// TestStreamingDoorKeepAlive: a REST API ends a response stream that goes
// its idle timeout without a byte (5 minutes; 1.5 s here). The function,
// through the protected streaming door, keeps a quiet stream alive with
// SSE comments (MCP_STREAM_KEEPALIVE, 1 s here), so that a tool that runs
// on silently after its first progress report is still answered in the
// stream; with the keep-alive longer than the idle timeout, the door cuts
// the same call.
func TestStreamingDoorKeepAlive(t *testing.T) {
	ctx := authContext(t)
	as := oauthmock.New(t)
	digest := rpcCall{Method: "tools/call", Tool: "notes_digest", Args: `{"pauseMs":3000}`, Meta: `"progressToken":"p"`}
	for _, v := range []struct {
		name      string
		keepAlive string
		cut       bool
	}{
		{"KeptAlive", "1s", false},
		{"Silent", "4m", true},
	} {
		t.Run(v.name, func(t *testing.T) {
			ep := reserveStream(t, rie.RESTAPI, true, 1500*time.Millisecond)
			ep.cutOK = true
			ep.Start(append(ep.AuthEnv(as.Issuer), "MCP_STREAM_KEEPALIVE="+v.keepAlive)...)
			tok, err := as.Token(ctx, "svc-quiet", []string{scopeRead, scopeWrite}, ep.URL)
			if err != nil {
				t.Fatal(err)
			}
			ep.call(ctx, t, tok, addNote("one note, one progress report")).result(t)
			start := time.Now()
			r := ep.call(ctx, t, tok, digest)
			took := time.Since(start)
			if v.cut {
				if r.Cut == nil {
					t.Fatalf("a stream silent for 3 s was not cut by a door whose idle timeout is 1.5 s: %s", r)
				}
				return
			}
			if r.Cut != nil {
				t.Fatalf("the stream was cut after %v: %v (%q)", took, r.Cut, r.Body)
			}
			if n := strings.Count(string(r.Body), ": keep-alive"); n < 2 || took < 3*time.Second {
				t.Errorf("%d keep-alives in %v: %q", n, took, r.Body)
			}
			if d := structuredOf(t, r.result(t)); d["notes"] != float64(1) {
				t.Errorf("digest %v", d)
			}
		})
	}
}
