package main

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/runner"
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
	// ClaimsTable is the DynamoDB table of idempotency claims and notes
	// (MCP_CLAIMS_TABLE). Unset: both are kept in memory, per instance.
	ClaimsTable string
	// StateKMSKey is the KMS key that roots request-state sealing
	// (MCP_STATE_KMS_KEY: a key id, ARN or alias). Unset: MCP_STATE_KEY or
	// a random per-process key.
	StateKMSKey string
	// Audience is the endpoint's canonical URL (MCP_AUDIENCE), which
	// request state is bound to: a custom domain's, say. Unset: on Lambda
	// each request's URL as API Gateway reports it (domain name and
	// path), locally the listening URL.
	Audience string
	// MetricsNamespace is the CloudWatch namespace of the metrics written
	// with the logs (MCP_METRICS_NAMESPACE; the template passes the stack
	// name).
	MetricsNamespace string
	// LogToolErrorText logs the text of tool errors and panic values,
	// which may quote arguments (MCP_LOG_TOOL_ERROR_TEXT=true). Off: their
	// type only.
	LogToolErrorText bool
	// FunctionName names the function in the KMS encryption context
	// (AWS_LAMBDA_FUNCTION_NAME, set by Lambda; "mcp" elsewhere).
	FunctionName string
}

// Environment variable names.
const (
	envRuntimeAPI     = "AWS_LAMBDA_RUNTIME_API"
	envAddr           = "MCP_ADDR"
	envLogLevel       = "LOG_LEVEL"
	envAllowedOrigins = "MCP_ALLOWED_ORIGINS"
	envStateKey       = "MCP_STATE_KEY"
	envStateTTL       = "MCP_STATE_TTL"
	envClaimsTable    = "MCP_CLAIMS_TABLE"
	envStateKMSKey    = "MCP_STATE_KMS_KEY"
	envAudience       = "MCP_AUDIENCE"
	envMetricsNS      = "MCP_METRICS_NAMESPACE"
	envToolErrorText  = "MCP_LOG_TOOL_ERROR_TEXT"
)

// LoadConfig reads the configuration through getenv (os.Getenv in
// production, a map in tests).
func LoadConfig(getenv func(string) string) (*Config, error) {
	c := &Config{
		InLambda: runner.InLambda(getenv),
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
	if v := getenv(envClaimsTable); v != "" {
		if !validTableName(v) {
			return nil, fmt.Errorf("%s=%q is not a DynamoDB table name (3-255 characters of a-z A-Z 0-9 _ - .)", envClaimsTable, v)
		}
		c.ClaimsTable = v
	}
	c.StateKMSKey = strings.TrimSpace(getenv(envStateKMSKey))
	if c.StateKMSKey != "" && c.StateKey != nil {
		return nil, fmt.Errorf("set one of %s and %s, not both", envStateKMSKey, envStateKey)
	}
	if v := getenv(envAudience); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("%s=%q: want the endpoint's absolute URL, such as https://mcp.example.com/mcp", envAudience, v)
		}
		c.Audience = v
	}
	c.MetricsNamespace = "mcp-lambda"
	if v := getenv(envMetricsNS); v != "" {
		if len(v) > 255 || strings.HasPrefix(v, "AWS/") || strings.ContainsAny(v, "\x00\n\r\t") {
			return nil, fmt.Errorf("%s=%q: want a CloudWatch namespace (at most 255 characters, not starting with AWS/)", envMetricsNS, v)
		}
		c.MetricsNamespace = v
	}
	switch v := getenv(envToolErrorText); v {
	case "", "false":
	case "true":
		c.LogToolErrorText = true
	default:
		return nil, fmt.Errorf("%s=%q: want true or false", envToolErrorText, v)
	}
	c.FunctionName = getenv("AWS_LAMBDA_FUNCTION_NAME")
	if c.FunctionName == "" {
		c.FunctionName = "mcp"
	}
	return c, nil
}

func validTableName(s string) bool {
	if len(s) < 3 || len(s) > 255 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}
