package endpoint

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	"github.com/serverless-mcp/mcp-lambda/pkg/runner"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
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
	// State is how request state is sealed: MCP_STATE_KMS_KEY (a KMS key
	// id, ARN or alias, template.yaml's), else MCP_STATE_KEY (32 bytes,
	// base64), else a random per-process key; MCP_STATE_TTL. Read as the
	// conformance fixture reads it (LoadState).
	State State
	// ClaimsTable is the DynamoDB table of idempotency claims and notes
	// (MCP_CLAIMS_TABLE). Unset: both are kept in memory, per instance.
	ClaimsTable string
	// Audience is the endpoint's canonical URL (MCP_AUDIENCE), which
	// request state is bound to: a custom domain's, say. Unset: on Lambda
	// each request's URL as API Gateway reports it (domain name and
	// path), locally the listening URL.
	Audience string
	// MetricsNamespace is the CloudWatch namespace of the metrics written
	// with the logs (MCP_METRICS_NAMESPACE; the template passes the stack
	// name).
	MetricsNamespace string
	// AuthIssuer is the OAuth authorization server whose bearer tokens
	// the endpoint accepts (MCP_AUTH_ISSUER). Unset: no authorization —
	// locally the endpoint is anonymous; on Lambda that needs
	// AllowAnonymous.
	AuthIssuer string
	// AuthJWKSURL overrides the issuer's discovered key set
	// (MCP_AUTH_JWKS_URL).
	AuthJWKSURL string
	// AuthClientIDs admit access tokens without an audience from these
	// clients (MCP_AUTH_CLIENT_IDS, comma-separated): Amazon Cognito's,
	// whose access tokens name no audience.
	AuthClientIDs []string
	// AuthScopesSupported are listed in the protected-resource metadata
	// (MCP_AUTH_SCOPES_SUPPORTED, space- or comma-separated). Unset: nil,
	// and Options.DefaultScopes apply.
	AuthScopesSupported []string
	// AuthScopePrefix is what the provider puts before the endpoint's
	// scope names (MCP_AUTH_SCOPE_PREFIX): Cognito's resource server
	// identifier and "/", Entra ID's Application ID URI and "/". See
	// auth.Resource.ScopePrefix.
	AuthScopePrefix string
	// AuthAudiences are accepted in a token's "aud" besides the
	// endpoint's canonical URL (MCP_AUTH_ACCEPTED_AUDIENCES,
	// comma-separated): the identifiers the provider gives this endpoint,
	// such as Entra ID's application (client) id. See auth.Config.Audiences.
	AuthAudiences []string
	// AuthRegistration is the registration facade, for clients that
	// register themselves with a provider that offers no registration
	// (Amazon Cognito, Entra ID): MCP_AUTH_REGISTRATION_CLIENT_ID names
	// the public client pre-registered at the provider,
	// MCP_AUTH_AUTHORIZATION_ENDPOINT and MCP_AUTH_TOKEN_ENDPOINT the
	// provider's endpoints, MCP_AUTH_REGISTRATION_REDIRECT_URIS
	// (comma-separated) the redirect URIs accepted besides loopback ones.
	// Unset: nil, no facade (see auth.Registration).
	AuthRegistration *auth.Registration
	// AuthProxy, when set, makes the registration facade's client an
	// authorization proxy's (MCP_AUTH_PROXY=true): the endpoint is then an
	// authorization server in front of the provider, with its own
	// callback (<endpoint>/callback, registered at the provider for
	// MCP_AUTH_REGISTRATION_CLIENT_ID), client ID metadata documents,
	// registration and per-client consent (see auth.Proxy). It needs the
	// facade's settings.
	AuthProxy *ProxyConfig
	// AllowAnonymous lets the function run on Lambda without an issuer
	// (MCP_ALLOW_ANONYMOUS=true): the endpoint is then open to anyone who
	// can reach it.
	AllowAnonymous bool
	// MetricsPerTool writes the metrics tools emit (Call.Metric) by
	// Function and Tool (MCP_METRICS_PER_TOOL, default true); false: by
	// Function alone, one CloudWatch series per metric name.
	MetricsPerTool bool
	// LogToolErrorText logs the text of tool errors and panic values,
	// which may quote arguments (MCP_LOG_TOOL_ERROR_TEXT=true). Off: their
	// type only.
	LogToolErrorText bool
	// DeadlineMargin is how long before the request's deadline a tool
	// call is answered, with a retryable timeout when its tool is still
	// running (MCP_DEADLINE_MARGIN, a Go duration; default 500ms).
	DeadlineMargin time.Duration
	// RequestTimeout bounds a gateway request on Lambda below the
	// invocation's deadline (MCP_REQUEST_TIMEOUT; template.yaml: 28s, as
	// the function's own timeout is a task worker's 15 minutes).
	RequestTimeout time.Duration
	// StreamKeepAlive is how long a streamed answer may go without a byte
	// before an SSE comment is sent (MCP_STREAM_KEEPALIVE, a Go duration
	// from 1s to 4m; default 60s): the REST door ends a stream idle for 5
	// minutes.
	StreamKeepAlive time.Duration
	// StreamKinds are the gateway event kinds the function is invoked for
	// as a response stream (MCP_STREAM_EVENTS: rest, function-url): their
	// notifications stream as they happen (docs/streaming.md).
	StreamKinds []apigw.Kind
	// TaskTTL is how long a task of the tasks extension is kept
	// (MCP_TASK_TTL, a Go duration from 1s to 30 days; default one hour).
	TaskTTL time.Duration
	// Quotas bound what one principal — or one anonymous caller's
	// address — can make the endpoint do (MCP_QUOTAS; DefaultQuotas
	// unless set): counted in the claims table when there is one (shared
	// by every instance) and per instance otherwise (package ratelimit).
	Quotas Quotas
	// BreakerFailures and BreakerCooldown open a tool's circuit after
	// that many consecutive failures of its dependencies, for that long
	// (MCP_CIRCUIT_BREAKER, "<failures>/<cooldown>", such as 5/30s); each
	// instance keeps its own. Unset: no breaker (package breaker).
	BreakerFailures int
	BreakerCooldown time.Duration
	// EventsTable is the DynamoDB table of the change events listen
	// streams deliver across instances (MCP_EVENTS_TABLE; default the
	// claims table; it needs a string sort key "sk"). Neither set: the
	// events of each instance reach its own listeners only.
	EventsTable string
	// Listen bounds listen streams (subscriptions/listen): MCP_LISTEN=off
	// serves none; MCP_LISTEN_MAX_DURATION (1s to 15m, default 5m) is how
	// long one stays open before it ends and the client listens again;
	// MCP_LISTEN_POLL (100ms to 1m, default 1s) how often an open one
	// reads the event log.
	Listen stateless.ListenOptions
	// FunctionName names the function: the Function of its log lines and
	// metrics, its name in the KMS encryption context and the event log's
	// scope, and on Lambda the function its tasks' workers are invoked
	// as (AWS_LAMBDA_FUNCTION_NAME, set by Lambda; elsewhere the name
	// given to Main, else "mcp").
	FunctionName string
	// ToolSettings is MCP_TOOL_SETTINGS, as it is set (template.yaml's
	// ToolSettings parameter): for the function's own tools, to learn where
	// their own resources are (a table's or a bucket's name). The library
	// never interprets it. At most MaxToolSettings bytes.
	ToolSettings string
}

// MaxToolSettings bounds MCP_TOOL_SETTINGS, as the template's parameter
// does.
const MaxToolSettings = 1024

// envLambdaFunctionName is the function's name, as Lambda sets it.
const envLambdaFunctionName = "AWS_LAMBDA_FUNCTION_NAME"

// Environment variable names.
const (
	EnvRuntimeAPI      = "AWS_LAMBDA_RUNTIME_API"
	EnvAddr            = "MCP_ADDR"
	EnvLogLevel        = "LOG_LEVEL"
	EnvAllowedOrigins  = "MCP_ALLOWED_ORIGINS"
	EnvClaimsTable     = "MCP_CLAIMS_TABLE"
	EnvAudience        = "MCP_AUDIENCE"
	EnvMetricsNS       = "MCP_METRICS_NAMESPACE"
	EnvToolErrorText   = "MCP_LOG_TOOL_ERROR_TEXT"
	EnvAuthIssuer      = "MCP_AUTH_ISSUER"
	EnvAuthAudience    = "MCP_AUTH_AUDIENCE"
	EnvAuthJWKS        = "MCP_AUTH_JWKS_URL"
	EnvAuthScopes      = "MCP_AUTH_SCOPES_SUPPORTED"
	EnvAuthClientIDs   = "MCP_AUTH_CLIENT_IDS"
	EnvAuthScopePrefix = "MCP_AUTH_SCOPE_PREFIX"
	EnvAuthAudiences   = "MCP_AUTH_ACCEPTED_AUDIENCES"
	// The registration facade (Config.AuthRegistration).
	EnvAuthRegistrationClientID     = "MCP_AUTH_REGISTRATION_CLIENT_ID"
	EnvAuthAuthorizationEndpoint    = "MCP_AUTH_AUTHORIZATION_ENDPOINT"
	EnvAuthTokenEndpoint            = "MCP_AUTH_TOKEN_ENDPOINT"
	EnvAuthRegistrationRedirectURIs = "MCP_AUTH_REGISTRATION_REDIRECT_URIS"
	// The authorization proxy (Config.AuthProxy).
	EnvAuthProxy             = "MCP_AUTH_PROXY"
	EnvAuthProxyPreApproved  = "MCP_AUTH_PROXY_PREAPPROVED_CLIENTS"
	EnvAuthProxyOmitResource = "MCP_AUTH_PROXY_OMIT_RESOURCE"
	EnvAuthProxyPrivateHosts = "MCP_AUTH_CLIENT_METADATA_PRIVATE_HOSTS"
	EnvAuthProxyClientSecret = "MCP_AUTH_PROXY_CLIENT_SECRET_ARN"
	EnvAllowAnonymous        = "MCP_ALLOW_ANONYMOUS"
	EnvDeadlineMargin        = "MCP_DEADLINE_MARGIN"
	EnvTaskTTL               = "MCP_TASK_TTL"
	EnvKeepAlive             = "MCP_STREAM_KEEPALIVE"
	EnvQuotas                = "MCP_QUOTAS"
	// EnvRateLimit is the calls quota alone, as MCP_QUOTAS' calls=
	// (deprecated: it is read when MCP_QUOTAS does not set calls).
	EnvRateLimit      = "MCP_RATE_LIMIT"
	EnvMetricsPerTool = "MCP_METRICS_PER_TOOL"
	EnvBreaker        = "MCP_CIRCUIT_BREAKER"

	EnvEventsTable       = "MCP_EVENTS_TABLE"
	EnvListen            = "MCP_LISTEN"
	EnvListenMaxDuration = "MCP_LISTEN_MAX_DURATION"
	EnvListenPoll        = "MCP_LISTEN_POLL"
	EnvToolSettings      = "MCP_TOOL_SETTINGS"
)

// LoadConfig reads the configuration through getenv (os.Getenv in
// production, a map in tests).
func LoadConfig(getenv func(string) string) (*Config, error) {
	c := &Config{
		InLambda: runner.InLambda(getenv),
		Addr:     "127.0.0.1:8080",
		LogLevel: slog.LevelInfo,

		DeadlineMargin:  500 * time.Millisecond,
		StreamKeepAlive: 60 * time.Second,
		MetricsPerTool:  true,
	}
	if v := getenv(EnvAddr); v != "" {
		c.Addr = v
	}
	if v := getenv(EnvLogLevel); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return nil, fmt.Errorf("%s=%q: want debug, info, warn or error", EnvLogLevel, v)
		}
	}
	if v := getenv(EnvAllowedOrigins); v != "" {
		for _, o := range strings.Split(v, ",") {
			o = strings.TrimSpace(o)
			if o == "" {
				continue
			}
			if o != "*" && !strings.HasPrefix(o, "https://") && !strings.HasPrefix(o, "http://") {
				return nil, fmt.Errorf("%s: origin %q must start with https:// or http://", EnvAllowedOrigins, o)
			}
			c.AllowedOrigins = append(c.AllowedOrigins, strings.TrimSuffix(o, "/"))
		}
	}
	var err error
	if c.State, err = LoadState(getenv); err != nil {
		return nil, err
	}
	if c.RequestTimeout, err = runner.RequestTimeout(getenv); err != nil {
		return nil, err
	}
	if c.StreamKinds, err = runner.StreamEvents(getenv); err != nil {
		return nil, err
	}
	if v := getenv(EnvDeadlineMargin); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Millisecond || d > 10*time.Second {
			return nil, fmt.Errorf("%s=%q: want a Go duration between 10ms and 10s, such as 500ms", EnvDeadlineMargin, v)
		}
		c.DeadlineMargin = d
	}
	if v := getenv(EnvKeepAlive); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > 4*time.Minute {
			return nil, fmt.Errorf("%s=%q: want a Go duration between 1s and 4m, such as 60s", EnvKeepAlive, v)
		}
		c.StreamKeepAlive = d
	}
	if v := getenv(EnvTaskTTL); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > 30*24*time.Hour {
			return nil, fmt.Errorf("%s=%q: want a Go duration between 1s and 720h, such as 1h", EnvTaskTTL, v)
		}
		c.TaskTTL = d
	}
	if c.Quotas, err = loadQuotas(getenv); err != nil {
		return nil, err
	}
	if v := getenv(EnvBreaker); v != "" {
		n, d, ok := countPer(v)
		if !ok || n < 1 || n > 1000 || d < time.Second || d > time.Hour {
			return nil, fmt.Errorf("%s=%q: want <failures>/<cooldown>, 1 to 1000 failures and a cooldown of 1s to 1h, such as 5/30s", EnvBreaker, v)
		}
		c.BreakerFailures, c.BreakerCooldown = int(n), d
	}
	if v := getenv(EnvToolSettings); len(v) > MaxToolSettings {
		return nil, fmt.Errorf("%s is %d bytes: at most %d", EnvToolSettings, len(v), MaxToolSettings)
	} else {
		c.ToolSettings = v
	}
	if v := getenv(EnvClaimsTable); v != "" {
		if !validTableName(v) {
			return nil, fmt.Errorf("%s=%q is not a DynamoDB table name (3-255 characters of a-z A-Z 0-9 _ - .)", EnvClaimsTable, v)
		}
		c.ClaimsTable = v
	}
	if err := c.loadListen(getenv); err != nil {
		return nil, err
	}
	if v := getenv(EnvAudience); v != "" {
		if _, err := endpointURL(EnvAudience, v); err != nil {
			return nil, err
		}
		c.Audience = v
	}
	if v := getenv(EnvAuthAudience); v != "" {
		if _, err := endpointURL(EnvAuthAudience, v); err != nil {
			return nil, err
		}
		if c.Audience != "" && c.Audience != v {
			return nil, fmt.Errorf("%s and %s name different endpoints: both are the endpoint's canonical URL, set one", EnvAuthAudience, EnvAudience)
		}
		c.Audience = v
	}
	if err := c.loadAuth(getenv); err != nil {
		return nil, err
	}
	c.MetricsNamespace = "mcp-lambda"
	if v := getenv(EnvMetricsNS); v != "" {
		if len(v) > 255 || strings.HasPrefix(v, "AWS/") || strings.ContainsAny(v, "\x00\n\r\t") {
			return nil, fmt.Errorf("%s=%q: want a CloudWatch namespace (at most 255 characters, not starting with AWS/)", EnvMetricsNS, v)
		}
		c.MetricsNamespace = v
	}
	switch v := getenv(EnvMetricsPerTool); v {
	case "", "true":
	case "false":
		c.MetricsPerTool = false
	default:
		return nil, fmt.Errorf("%s=%q: want true or false", EnvMetricsPerTool, v)
	}
	switch v := getenv(EnvToolErrorText); v {
	case "", "false":
	case "true":
		c.LogToolErrorText = true
	default:
		return nil, fmt.Errorf("%s=%q: want true or false", EnvToolErrorText, v)
	}
	c.FunctionName = getenv(envLambdaFunctionName)
	if c.FunctionName == "" {
		c.FunctionName = "mcp"
	}
	return c, nil
}

// countPer reads "<count>/<duration>".
func countPer(v string) (int64, time.Duration, bool) {
	ns, ds, ok := strings.Cut(v, "/")
	if !ok {
		return 0, 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(ns), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	d, err := time.ParseDuration(strings.TrimSpace(ds))
	if err != nil {
		return 0, 0, false
	}
	return n, d, true
}

// Quotas are the per-principal quotas: each bounds what one caller can
// cost, set far above what an interactive client uses. 0 turns one off.
type Quotas struct {
	// Calls and CallWindow: at most Calls tools/call, prompts/get and
	// resources/read in each CallWindow (calls=<n>/<window>). Discovery,
	// the lists and the task methods are not counted.
	Calls      int64
	CallWindow time.Duration
	// LiveTasks: tasks one caller holds working or waiting for input at
	// once (tasks=<n>).
	LiveTasks int
	// Streams: calls one caller holds open on a stream at once — the
	// local server, the REST streaming door, a function URL in stream
	// mode, where each holds an invocation until it is answered
	// (streams=<n>).
	Streams int
}

// DefaultQuotas are the quotas of an endpoint whose MCP_QUOTAS is unset:
// 600 calls a minute (10 a second, sustained), 10 live tasks and 10 open
// streams per caller. docs/operations.md ("Quotas") gives what they let
// one token cost at the template's defaults.
var DefaultQuotas = Quotas{Calls: 600, CallWindow: time.Minute, LiveTasks: 10, Streams: 10}

// loadQuotas reads MCP_QUOTAS: "off", or comma-separated settings over
// DefaultQuotas, each "calls=<n>/<window>", "tasks=<n>" or "streams=<n>",
// and "off" or 0 as a value turns that quota off. MCP_RATE_LIMIT, the
// older setting of calls, is read when MCP_QUOTAS does not set calls.
func loadQuotas(getenv func(string) string) (Quotas, error) {
	q := DefaultQuotas
	v := strings.TrimSpace(getenv(EnvQuotas))
	bad := func(why string) (Quotas, error) {
		return Quotas{}, fmt.Errorf("%s=%q: %s; want off, or settings such as calls=600/1m,tasks=10,streams=10", EnvQuotas, v, why)
	}
	setCalls := false
	if v == "off" {
		q = Quotas{}
		setCalls = true
	} else if v != "" {
		for _, item := range strings.Split(v, ",") {
			name, val, ok := strings.Cut(strings.TrimSpace(item), "=")
			name, val = strings.TrimSpace(name), strings.TrimSpace(val)
			if !ok {
				return bad("a setting without =")
			}
			off := val == "off" || val == "0"
			switch name {
			case "calls":
				setCalls = true
				if off {
					q.Calls, q.CallWindow = 0, 0
					continue
				}
				n, d, ok := countPer(val)
				if !ok || n < 1 || d < time.Second || d > 24*time.Hour {
					return bad("calls wants <n>/<window>, at least 1 call in a window of 1s to 24h")
				}
				q.Calls, q.CallWindow = n, d
			case "tasks", "streams":
				n := 0
				if !off {
					var err error
					if n, err = strconv.Atoi(val); err != nil || n < 1 || n > 10_000 {
						return bad(name + " wants a number from 1 to 10000, or off")
					}
				}
				if name == "tasks" {
					q.LiveTasks = n
				} else {
					q.Streams = n
				}
			default:
				return bad("an unknown setting")
			}
		}
	}
	if r := getenv(EnvRateLimit); r != "" {
		if setCalls {
			return Quotas{}, fmt.Errorf("%s and %s's calls are both set: keep %s", EnvRateLimit, EnvQuotas, EnvQuotas)
		}
		n, d, ok := countPer(r)
		if !ok || n < 1 || d < time.Second || d > 24*time.Hour {
			return Quotas{}, fmt.Errorf("%s=%q: want <requests>/<window>, at least 1 request in a window of 1s to 24h, such as 600/1m", EnvRateLimit, r)
		}
		q.Calls, q.CallWindow = n, d
	}
	return q, nil
}

// loadAuth reads the authorization settings. Without an issuer a Lambda
// function refuses to start unless anonymous access is asked for: a
// forgotten setting must not deploy an open endpoint.
func (c *Config) loadAuth(getenv func(string) string) error {
	switch v := getenv(EnvAllowAnonymous); v {
	case "", "false":
	case "true":
		c.AllowAnonymous = true
	default:
		return fmt.Errorf("%s=%q: want true or false", EnvAllowAnonymous, v)
	}
	if v := getenv(EnvAuthIssuer); v != "" {
		u, err := issuerURL(EnvAuthIssuer, v)
		if err != nil {
			return err
		}
		c.AuthIssuer = u
	}
	if v := getenv(EnvAuthJWKS); v != "" {
		if _, err := issuerURL(EnvAuthJWKS, v); err != nil {
			return err
		}
		c.AuthJWKSURL = v
	}
	var err error
	if c.AuthClientIDs, err = tokenList(EnvAuthClientIDs, getenv(EnvAuthClientIDs), "a client id"); err != nil {
		return err
	}
	if v := getenv(EnvAuthScopes); v != "" {
		c.AuthScopesSupported = strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' })
		for _, s := range c.AuthScopesSupported {
			if !validScope(s) {
				return fmt.Errorf("%s: %q is not an OAuth scope token", EnvAuthScopes, s)
			}
		}
	}
	if v := getenv(EnvAuthScopePrefix); v != "" {
		if !validScope(v) {
			return fmt.Errorf("%s=%q: a scope prefix is made of scope characters (no space, quote or backslash)", EnvAuthScopePrefix, v)
		}
		c.AuthScopePrefix = v
	}
	if c.AuthAudiences, err = tokenList(EnvAuthAudiences, getenv(EnvAuthAudiences), "an audience"); err != nil {
		return err
	}
	if err := c.loadRegistration(getenv); err != nil {
		return err
	}
	if err := c.loadProxy(getenv); err != nil {
		return err
	}
	switch {
	case c.AuthIssuer == "" && (c.AuthScopePrefix != "" || c.AuthAudiences != nil):
		return fmt.Errorf("%s and %s need %s", EnvAuthScopePrefix, EnvAuthAudiences, EnvAuthIssuer)
	case c.AuthIssuer == "" && c.AuthRegistration != nil:
		return fmt.Errorf("%s needs %s: the facade hands out a client of that issuer", EnvAuthRegistrationClientID, EnvAuthIssuer)
	case c.AuthIssuer == "" && (c.AuthJWKSURL != "" || getenv(EnvAuthScopes) != "" || c.AuthClientIDs != nil):
		return fmt.Errorf("%s, %s and %s need %s", EnvAuthJWKS, EnvAuthScopes, EnvAuthClientIDs, EnvAuthIssuer)
	case c.AuthIssuer != "" && c.AllowAnonymous:
		return fmt.Errorf("%s=true and %s contradict each other: set one", EnvAllowAnonymous, EnvAuthIssuer)
	case c.AuthIssuer == "" && c.InLambda && !c.AllowAnonymous:
		return fmt.Errorf("no %s: set it to your OAuth/OIDC issuer (a Cognito user pool's, Auth0's, ...) to protect the endpoint, or %s=true to serve anyone", EnvAuthIssuer, EnvAllowAnonymous)
	}
	return nil
}

// tokenList reads the comma-separated list v of the variable name, each
// item trimmed and made of scope characters (what is: "a client id");
// "" is nil.
func tokenList(name, v, what string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); !validScope(item) {
			return nil, fmt.Errorf("%s: %q is not %s", name, item, what)
		}
		out = append(out, item)
	}
	return out, nil
}

// loadRegistration reads the registration facade's settings: all of
// them or none, the client id and the provider's two endpoints at least.
func (c *Config) loadRegistration(getenv func(string) string) error {
	id, authz, token, redirects := getenv(EnvAuthRegistrationClientID), getenv(EnvAuthAuthorizationEndpoint), getenv(EnvAuthTokenEndpoint), getenv(EnvAuthRegistrationRedirectURIs)
	if id == "" {
		if authz != "" || token != "" || redirects != "" {
			return fmt.Errorf("%s, %s and %s configure the registration facade, which %s turns on: set it too, or none of them", EnvAuthAuthorizationEndpoint, EnvAuthTokenEndpoint, EnvAuthRegistrationRedirectURIs, EnvAuthRegistrationClientID)
		}
		return nil
	}
	if !validScope(id) {
		return fmt.Errorf("%s: %q is not a client id", EnvAuthRegistrationClientID, id)
	}
	reg := &auth.Registration{ClientID: id}
	for _, e := range []struct {
		name, v string
		to      *string
	}{{EnvAuthAuthorizationEndpoint, authz, &reg.AuthorizationEndpoint}, {EnvAuthTokenEndpoint, token, &reg.TokenEndpoint}} {
		if e.v == "" {
			return fmt.Errorf("%s needs %s: the provider's endpoint that the facade's metadata names", EnvAuthRegistrationClientID, e.name)
		}
		if _, err := issuerURL(e.name, e.v); err != nil {
			return err
		}
		*e.to = e.v
	}
	if redirects != "" {
		for _, r := range strings.Split(redirects, ",") {
			r = strings.TrimSpace(r)
			u, err := url.Parse(r)
			if err != nil || !u.IsAbs() || u.Fragment != "" || strings.ContainsAny(r, "# \"\\") {
				return fmt.Errorf("%s: %q is not an absolute redirect URI without a fragment", EnvAuthRegistrationRedirectURIs, r)
			}
			// A hosted client's callback is https; a native one's a
			// private-use scheme (RFC 8252 section 7.1). Plain http only
			// on loopback, which the facade accepts anyway; never a scheme
			// that runs or reads something in place.
			switch scheme := strings.ToLower(u.Scheme); {
			case scheme == "http" && !isLoopback(u.Hostname()), scheme == "javascript", scheme == "data", scheme == "file", scheme == "vbscript":
				return fmt.Errorf("%s: %q: a redirect URI is https, a private-use scheme, or http on loopback", EnvAuthRegistrationRedirectURIs, r)
			}
			reg.RedirectURIs = append(reg.RedirectURIs, r)
		}
	}
	c.AuthRegistration = reg
	return nil
}

// ProxyConfig is the authorization proxy's own settings; the provider's
// client and endpoints are the registration facade's (Config.
// AuthRegistration).
type ProxyConfig struct {
	// PreApproved are client ids whose flows need no consent page
	// (MCP_AUTH_PROXY_PREAPPROVED_CLIENTS, comma-separated): metadata
	// document URLs of the clients the operator vouches for.
	PreApproved []string
	// OmitResource keeps the resource parameter from the provider
	// (MCP_AUTH_PROXY_OMIT_RESOURCE=true): for Entra ID, whose API's
	// Application ID URI is not the endpoint's URL (see auth.Proxy).
	OmitResource bool
	// PrivateHosts are the hosts whose client ID metadata documents may
	// be fetched from non-public addresses
	// (MCP_AUTH_CLIENT_METADATA_PRIVATE_HOSTS, comma-separated): a
	// deployment whose clients' documents live inside its network. Unset:
	// every fetch goes to a public address only.
	PrivateHosts []string
	// ClientSecretARN names the Secrets Manager secret (its ARN, or its
	// name) whose SecretString is the client secret of the endpoint's
	// client at the provider (MCP_AUTH_PROXY_CLIENT_SECRET_ARN), for a
	// provider whose client is confidential. Unset: a public client.
	ClientSecretARN string
}

// loadProxy reads the proxy's settings; MCP_AUTH_PROXY turns it on, and
// the others need it.
func (c *Config) loadProxy(getenv func(string) string) error {
	on, pre, omit, private, secret := getenv(EnvAuthProxy), getenv(EnvAuthProxyPreApproved), getenv(EnvAuthProxyOmitResource), getenv(EnvAuthProxyPrivateHosts), getenv(EnvAuthProxyClientSecret)
	switch on {
	case "", "false":
		if pre != "" || omit != "" || private != "" || secret != "" {
			return fmt.Errorf("%s, %s, %s and %s configure the authorization proxy, which %s=true turns on", EnvAuthProxyPreApproved, EnvAuthProxyOmitResource, EnvAuthProxyPrivateHosts, EnvAuthProxyClientSecret, EnvAuthProxy)
		}
		return nil
	case "true":
	default:
		return fmt.Errorf("%s=%q: true or false", EnvAuthProxy, on)
	}
	if c.AuthRegistration == nil {
		return fmt.Errorf("%s=true needs %s, %s and %s: the client registered at the provider, with <endpoint>/callback as its redirect URI, and the provider's endpoints", EnvAuthProxy, EnvAuthRegistrationClientID, EnvAuthAuthorizationEndpoint, EnvAuthTokenEndpoint)
	}
	p := &ProxyConfig{}
	if pre != "" {
		for _, id := range strings.Split(pre, ",") {
			id = strings.TrimSpace(id)
			if !auth.IsClientMetadataURL(id) {
				return fmt.Errorf("%s: %q is not a client ID metadata document URL (https, with a path)", EnvAuthProxyPreApproved, id)
			}
			p.PreApproved = append(p.PreApproved, id)
		}
	}
	switch omit {
	case "", "false":
	case "true":
		p.OmitResource = true
	default:
		return fmt.Errorf("%s=%q: true or false", EnvAuthProxyOmitResource, omit)
	}
	if private != "" {
		for _, h := range strings.Split(private, ",") {
			h = strings.TrimSpace(h)
			if h == "" || strings.ContainsAny(h, "/:@ ") && !strings.HasPrefix(h, "[") {
				return fmt.Errorf("%s: %q is not a host name", EnvAuthProxyPrivateHosts, h)
			}
			p.PrivateHosts = append(p.PrivateHosts, h)
		}
	}
	if secret != "" {
		// An ARN (arn:<partition>:secretsmanager:...) or a secret's name:
		// what GetSecretValue's SecretId takes.
		if !validScope(secret) || len(secret) > 2048 {
			return fmt.Errorf("%s: %q is not a Secrets Manager secret ARN or name", EnvAuthProxyClientSecret, secret)
		}
		p.ClientSecretARN = secret
	}
	c.AuthProxy = p
	return nil
}

// endpointURL checks that v is an endpoint's absolute URL.
func endpointURL(name, v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s=%q: want the endpoint's absolute URL, such as https://mcp.example.com/mcp", name, v)
	}
	return u, nil
}

// issuerURL checks an authorization server's URL: https, or http on a
// loopback host (a local test server); no query or fragment. It returns
// it without a trailing slash only when one was not part of the issuer
// (issuers compare exactly, so it is returned as given).
func issuerURL(name, v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		!(u.Scheme == "https" || u.Scheme == "http" && isLoopback(u.Hostname())) {
		return "", fmt.Errorf("%s=%q: want an https URL (http only on a loopback host)", name, v)
	}
	return v, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validScope reports whether s is an RFC 6749 scope token.
func validScope(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
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

// loadListen reads the event table and the listen streams' bounds.
func (c *Config) loadListen(getenv func(string) string) error {
	c.EventsTable = c.ClaimsTable
	if v := getenv(EnvEventsTable); v != "" {
		if !validTableName(v) {
			return fmt.Errorf("%s=%q is not a DynamoDB table name (3-255 characters of a-z A-Z 0-9 _ - .)", EnvEventsTable, v)
		}
		c.EventsTable = v
	}
	var err error
	c.Listen, err = LoadListen(getenv)
	return err
}

// LoadListen reads the listen streams' settings (MCP_LISTEN,
// MCP_LISTEN_MAX_DURATION, MCP_LISTEN_POLL) as the endpoint does, for a
// function composed without it (the conformance fixture).
func LoadListen(getenv func(string) string) (stateless.ListenOptions, error) {
	var lo stateless.ListenOptions
	switch v := getenv(EnvListen); v {
	case "", "on":
	case "off":
		lo.Off = true
	default:
		return lo, fmt.Errorf("%s=%q: want on or off", EnvListen, v)
	}
	for _, d := range []struct {
		env      string
		min, max time.Duration
		to       *time.Duration
	}{
		{EnvListenMaxDuration, time.Second, 15 * time.Minute, &lo.MaxDuration},
		{EnvListenPoll, 100 * time.Millisecond, time.Minute, &lo.Poll},
	} {
		v := getenv(d.env)
		if v == "" {
			continue
		}
		t, err := time.ParseDuration(v)
		if err != nil || t < d.min || t > d.max {
			return lo, fmt.Errorf("%s=%q: want a Go duration between %v and %v", d.env, v, d.min, d.max)
		}
		*d.to = t
	}
	return lo, nil
}
