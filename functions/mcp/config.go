package main

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Config is the function's configuration, read once from the environment
// at start. Every setting has a default that works locally with nothing
// set; a setting that is present but malformed fails the start with a
// sentence naming the variable.
type Config struct {
	// InLambda is true when the Lambda runtime API is present.
	InLambda bool
	// Addr is where the local HTTP server listens (MCP_ADDR).
	Addr string
	// LogLevel is the least severe level logged (LOG_LEVEL).
	LogLevel slog.Level
	// AllowedOrigins are the browser origins allowed to call
	// (MCP_ALLOWED_ORIGINS, comma-separated).
	AllowedOrigins []string
	// StateKey, if set, is the 32-byte key that seals request state
	// locally (MCP_STATE_KEY, base64). Unset: a random per-process key.
	StateKey []byte
	// StateTTL is how long a multi-round-trip state stays valid
	// (MCP_STATE_TTL, a Go duration).
	StateTTL time.Duration
}

// Environment variable names.
const (
	envRuntimeAPI     = "AWS_LAMBDA_RUNTIME_API"
	envAddr           = "MCP_ADDR"
	envLogLevel       = "LOG_LEVEL"
	envAllowedOrigins = "MCP_ALLOWED_ORIGINS"
	envStateKey       = "MCP_STATE_KEY"
	envStateTTL       = "MCP_STATE_TTL"
)

// LoadConfig reads the configuration through getenv (os.Getenv in
// production, a map in tests).
func LoadConfig(getenv func(string) string) (*Config, error) {
	c := &Config{
		InLambda: getenv(envRuntimeAPI) != "",
		Addr:     "127.0.0.1:8080",
		LogLevel: slog.LevelInfo,
		StateTTL: 10 * time.Minute,
	}
	if v := getenv(envAddr); v != "" {
		c.Addr = v
	}
	if v := getenv(envLogLevel); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return nil, fmt.Errorf("%s=%q: want debug, info, warn or error", envLogLevel, v)
		}
	}
	if v := getenv(envAllowedOrigins); v != "" {
		for _, o := range strings.Split(v, ",") {
			o = strings.TrimSpace(o)
			if o == "" {
				continue
			}
			if o != "*" && !strings.HasPrefix(o, "https://") && !strings.HasPrefix(o, "http://") {
				return nil, fmt.Errorf("%s: origin %q must start with https:// or http://", envAllowedOrigins, o)
			}
			c.AllowedOrigins = append(c.AllowedOrigins, strings.TrimSuffix(o, "/"))
		}
	}
	if v := getenv(envStateKey); v != "" {
		k, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(k) != 32 {
			return nil, fmt.Errorf("%s must be 32 bytes in standard base64 (for example from `openssl rand -base64 32`)", envStateKey)
		}
		c.StateKey = k
	}
	if v := getenv(envStateTTL); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > 24*time.Hour {
			return nil, fmt.Errorf("%s=%q: want a Go duration between 1s and 24h, such as 10m", envStateTTL, v)
		}
		c.StateTTL = d
	}
	return c, nil
}
