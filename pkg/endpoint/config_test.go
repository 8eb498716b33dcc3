package endpoint

import (
	"log/slog"
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
		c.StreamKeepAlive != time.Minute || c.Quotas != DefaultQuotas || c.BreakerFailures != 0 {
		t.Errorf("defaults: %+v", c)
	}
	c, err = LoadConfig(env(EnvRuntimeAPI, "127.0.0.1:9001", EnvLogLevel, "debug", EnvAllowedOrigins, " https://a.example , http://localhost:3000/ ",
		EnvStateKey, "c2FtcGxlLWV2ZW50cy1zdGF0ZS1rZXktMzItYnl0ZXM=", EnvStateTTL, "90s", EnvAllowAnonymous, "true", EnvDeadlineMargin, "250ms", EnvKeepAlive, "2s",
		EnvRateLimit, "600/1m", EnvBreaker, " 5 / 30s "))
	if err != nil {
		t.Fatal(err)
	}
	if !c.InLambda || c.LogLevel != slog.LevelDebug || len(c.State.Key) != 32 || c.State.TTL != 90*time.Second || c.DeadlineMargin != 250*time.Millisecond ||
		c.StreamKeepAlive != 2*time.Second || strings.Join(c.AllowedOrigins, " ") != "https://a.example http://localhost:3000" ||
		c.Quotas != (Quotas{Calls: 600, CallWindow: time.Minute, LiveTasks: 10, Streams: 10}) || c.BreakerFailures != 5 || c.BreakerCooldown != 30*time.Second {
		t.Errorf("parsed: %+v", c)
	}
	for _, bad := range [][2]string{
		{EnvLogLevel, "loud"},
		{EnvAllowedOrigins, "a.example"},
		{EnvStateKey, "c2hvcnQ="},
		{EnvStateKey, "not base64!"},
		{EnvStateTTL, "forever"},
		{EnvStateTTL, "-1s"},
		{EnvDeadlineMargin, "half a second"},
		{EnvDeadlineMargin, "0s"},
		{EnvDeadlineMargin, "1m"},
		{EnvKeepAlive, "500ms"},
		{EnvKeepAlive, "5m"},
		{EnvAudience, "mcp.example.com/mcp"},
		{EnvAuthAudience, "https://mcp.example.com/mcp?x=1"},
		{EnvAuthIssuer, "http://issuer.example.com"},
		{EnvAuthIssuer, "https://issuer.example.com/#frag"},
		{EnvAuthJWKS, "ftp://keys.example.com"},
		{EnvAllowAnonymous, "yes"},
		{EnvRateLimit, "600"},
		{EnvRateLimit, "0/1m"},
		{EnvRateLimit, "10/1ms"},
		{EnvRateLimit, "ten/1m"},
		{EnvQuotas, "calls=600"},
		{EnvQuotas, "calls=0/1m"},
		{EnvQuotas, "tasks=-1"},
		{EnvQuotas, "tasks=ten"},
		{EnvQuotas, "streams=10001"},
		{EnvQuotas, "workers=3"},
		{EnvQuotas, "tasks"},
		{EnvQuotas, "on"},
		{EnvBreaker, "5/1ms"},
		{EnvBreaker, "0/30s"},
		{EnvBreaker, "5/"},
		{EnvMetricsPerTool, "no"},
	} {
		_, err := LoadConfig(env(bad[0], bad[1]))
		if err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%s=%q: error %v does not name the variable", bad[0], bad[1], err)
		}
	}
}

// TestLoadQuotas: MCP_QUOTAS sets each quota over the defaults, turns one
// or all off, and MCP_RATE_LIMIT still sets calls, never beside
// MCP_QUOTAS' own.
func TestLoadQuotas(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want Quotas
	}{
		{nil, DefaultQuotas},
		{[]string{EnvQuotas, "off"}, Quotas{}},
		{[]string{EnvQuotas, " calls = 100/10s , tasks=3"}, Quotas{Calls: 100, CallWindow: 10 * time.Second, LiveTasks: 3, Streams: 10}},
		{[]string{EnvQuotas, "tasks=off,streams=0"}, Quotas{Calls: 600, CallWindow: time.Minute}},
		{[]string{EnvQuotas, "calls=off"}, Quotas{LiveTasks: 10, Streams: 10}},
		{[]string{EnvRateLimit, "3/1h"}, Quotas{Calls: 3, CallWindow: time.Hour, LiveTasks: 10, Streams: 10}},
		{[]string{EnvRateLimit, "3/1h", EnvQuotas, "tasks=2"}, Quotas{Calls: 3, CallWindow: time.Hour, LiveTasks: 2, Streams: 10}},
	} {
		c, err := LoadConfig(env(tt.env...))
		if err != nil {
			t.Errorf("%q: %v", tt.env, err)
			continue
		}
		if c.Quotas != tt.want {
			t.Errorf("%q: %+v, want %+v", tt.env, c.Quotas, tt.want)
		}
	}
	for _, both := range [][]string{{EnvRateLimit, "3/1h", EnvQuotas, "calls=5/1m"}, {EnvRateLimit, "3/1h", EnvQuotas, "off"}} {
		if _, err := LoadConfig(env(both...)); err == nil || !strings.Contains(err.Error(), EnvRateLimit) {
			t.Errorf("%q: error %v", both, err)
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
		{"lambda, no issuer: refused", []string{EnvRuntimeAPI, lambda}, EnvAuthIssuer},
		{"lambda, anonymous asked for", []string{EnvRuntimeAPI, lambda, EnvAllowAnonymous, "true"}, ""},
		{"lambda, issuer", []string{EnvRuntimeAPI, lambda, EnvAuthIssuer, "https://issuer.example.com/"}, ""},
		{"issuer and anonymous contradict", []string{EnvAuthIssuer, "https://issuer.example.com", EnvAllowAnonymous, "true"}, EnvAllowAnonymous},
		{"loopback http issuer for tests", []string{EnvAuthIssuer, "http://127.0.0.1:9999"}, ""},
		{"jwks without issuer", []string{EnvAuthJWKS, "https://keys.example.com/jwks.json"}, EnvAuthIssuer},
		{"scopes without issuer", []string{EnvAuthScopes, "a b"}, EnvAuthIssuer},
		{"client ids without issuer", []string{EnvAuthClientIDs, "abc"}, EnvAuthIssuer},
		{"client ids", []string{EnvAuthIssuer, "https://i.example.com", EnvAuthClientIDs, "abc, def"}, ""},
		{"a bad client id", []string{EnvAuthIssuer, "https://i.example.com", EnvAuthClientIDs, "a,,b"}, EnvAuthClientIDs},
		{"bad scope", []string{EnvAuthIssuer, "https://i.example.com", EnvAuthScopes, `a "b`}, EnvAuthScopes},
		{"two different endpoints", []string{EnvAudience, "https://a.example.com/mcp", EnvAuthAudience, "https://b.example.com/mcp"}, EnvAuthAudience},
		{"the same endpoint twice", []string{EnvAudience, "https://a.example.com/mcp", EnvAuthAudience, "https://a.example.com/mcp"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadConfig(env(tt.env...))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v does not name %s", err, tt.wantErr)
			case err == nil && c.AuthIssuer == "" && c.AuthScopesSupported != nil:
				t.Errorf("scopes without an issuer: %+v", c)
			}
		})
	}
}

// TestToolSettings: MCP_TOOL_SETTINGS reaches Config.ToolSettings as it
// is set, for the function's tools; longer than the template allows, the
// endpoint refuses to start, naming the variable and not its value.
func TestToolSettings(t *testing.T) {
	v := "table=counter-counts,bucket=counter-exports"
	cfg, err := LoadConfig(func(k string) string { return map[string]string{EnvToolSettings: v}[k] })
	if err != nil || cfg.ToolSettings != v {
		t.Fatalf("%q %v", cfg.ToolSettings, err)
	}
	long := strings.Repeat("x", MaxToolSettings+1)
	_, err = LoadConfig(func(k string) string { return map[string]string{EnvToolSettings: long}[k] })
	if err == nil || !strings.Contains(err.Error(), EnvToolSettings) || strings.Contains(err.Error(), "xxxx") {
		t.Fatalf("too long: %v", err)
	}
}
