package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// env is a getenv over key, value pairs.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestLoadConfig(t *testing.T) {
	c, err := LoadConfig(env())
	if err != nil {
		t.Fatal(err)
	}
	if c.InLambda || c.Addr != "127.0.0.1:8080" || c.LogLevel != slog.LevelInfo || c.State.TTL != 10*time.Minute || c.State.Key != nil || c.DeadlineMargin != 500*time.Millisecond ||
		c.StreamKeepAlive != time.Minute {
		t.Errorf("defaults: %+v", c)
	}
	c, err = LoadConfig(env(envRuntimeAPI, "127.0.0.1:9001", envLogLevel, "debug", envAllowedOrigins, " https://a.example , http://localhost:3000/ ",
		envStateKey, "c2FtcGxlLWV2ZW50cy1zdGF0ZS1rZXktMzItYnl0ZXM=", envStateTTL, "90s", envAllowAnonymous, "true", envDeadlineMargin, "250ms", envKeepAlive, "2s"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.InLambda || c.LogLevel != slog.LevelDebug || len(c.State.Key) != 32 || c.State.TTL != 90*time.Second || c.DeadlineMargin != 250*time.Millisecond ||
		c.StreamKeepAlive != 2*time.Second || strings.Join(c.AllowedOrigins, " ") != "https://a.example http://localhost:3000" {
		t.Errorf("parsed: %+v", c)
	}
	for _, bad := range [][2]string{
		{envLogLevel, "loud"},
		{envAllowedOrigins, "a.example"},
		{envStateKey, "c2hvcnQ="},
		{envStateKey, "not base64!"},
		{envStateTTL, "forever"},
		{envStateTTL, "-1s"},
		{envDeadlineMargin, "half a second"},
		{envDeadlineMargin, "0s"},
		{envDeadlineMargin, "1m"},
		{envKeepAlive, "500ms"},
		{envKeepAlive, "5m"},
		{envAudience, "mcp.example.com/mcp"},
		{envAuthAudience, "https://mcp.example.com/mcp?x=1"},
		{envAuthIssuer, "http://issuer.example.com"},
		{envAuthIssuer, "https://issuer.example.com/#frag"},
		{envAuthJWKS, "ftp://keys.example.com"},
		{envAllowAnonymous, "yes"},
	} {
		_, err := LoadConfig(env(bad[0], bad[1]))
		if err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%s=%q: error %v does not name the variable", bad[0], bad[1], err)
		}
	}
}

// TestLoadAuthConfig pins the authorization settings' rules: protected
// by default on Lambda, anonymous locally, and no contradictions.
func TestLoadAuthConfig(t *testing.T) {
	const lambda = "127.0.0.1:9001"
	tests := []struct {
		name    string
		env     []string
		wantErr string // a variable the error must name; "" for success
	}{
		{"local, no issuer: anonymous", nil, ""},
		{"lambda, no issuer: refused", []string{envRuntimeAPI, lambda}, envAuthIssuer},
		{"lambda, anonymous asked for", []string{envRuntimeAPI, lambda, envAllowAnonymous, "true"}, ""},
		{"lambda, issuer", []string{envRuntimeAPI, lambda, envAuthIssuer, "https://issuer.example.com/"}, ""},
		{"issuer and anonymous contradict", []string{envAuthIssuer, "https://issuer.example.com", envAllowAnonymous, "true"}, envAllowAnonymous},
		{"loopback http issuer for tests", []string{envAuthIssuer, "http://127.0.0.1:9999"}, ""},
		{"jwks without issuer", []string{envAuthJWKS, "https://keys.example.com/jwks.json"}, envAuthIssuer},
		{"scopes without issuer", []string{envAuthScopes, "a b"}, envAuthIssuer},
		{"client ids without issuer", []string{envAuthClientIDs, "abc"}, envAuthIssuer},
		{"client ids", []string{envAuthIssuer, "https://i.example.com", envAuthClientIDs, "abc, def"}, ""},
		{"a bad client id", []string{envAuthIssuer, "https://i.example.com", envAuthClientIDs, "a,,b"}, envAuthClientIDs},
		{"bad scope", []string{envAuthIssuer, "https://i.example.com", envAuthScopes, `a "b`}, envAuthScopes},
		{"two different endpoints", []string{envAudience, "https://a.example.com/mcp", envAuthAudience, "https://b.example.com/mcp"}, envAuthAudience},
		{"the same endpoint twice", []string{envAudience, "https://a.example.com/mcp", envAuthAudience, "https://a.example.com/mcp"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadConfig(env(tt.env...))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v does not name %s", err, tt.wantErr)
			case err == nil && len(c.AuthScopesSupported) == 0:
				t.Errorf("no scopes supported: %+v", c)
			}
		})
	}
}

// TestRunLocal starts the local mode on a free port, calls it, and shuts
// it down as SIGINT would.
func TestRunLocal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, func(k string) string {
			return map[string]string{envAddr: "127.0.0.1:0", envLogLevel: "error"}[k]
		}, pw)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "MCP endpoint: ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("first line %q", line)
	}
	go io.Copy(io.Discard, pr)
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "server/discover")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"mcp-lambda-demo"`) {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no graceful shutdown")
	}
}

func TestRunRefusesBadConfig(t *testing.T) {
	err := run(context.Background(), func(k string) string {
		if k == envStateTTL {
			return "soon"
		}
		return ""
	}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), envStateTTL) {
		t.Errorf("err = %v", err)
	}
}
