// Package endpoint composes a production MCP endpoint from this
// module's public packages, configured from the environment as
// template.yaml configures the function: the protocol server
// (pkg/stateless) with idempotency claims in DynamoDB (pkg/claims),
// request state sealed under a key rooted in KMS (pkg/reqstate), durable
// tasks run by asynchronous invocations of the function itself
// (pkg/tasks), bearer-token authorization (pkg/auth), one log line and
// EMF metrics per request (pkg/observe), and the runner that serves it on
// Lambda (buffered or streamed, gateway event or task worker) or locally
// over HTTP (pkg/runner).
//
// A function of your own is a few lines: a Compose that makes the
// endpoint and registers your tools on its server, and a main that hands
// it to Main, which loads the configuration from the environment and runs
// the endpoint on Lambda or locally (the package's Example).
//
//	func main() { endpoint.Main("my-tools", compose) }
//
//	func compose(cfg *endpoint.Config, o endpoint.Options) (*endpoint.Endpoint, error) {
//		o.Implementation = stateless.Implementation{Name: "my-tools", Version: "1"}
//		ep, err := endpoint.New(cfg, o)
//		if err != nil {
//			return nil, err
//		}
//		stateless.AddTool(ep.Server, myTool, handle)
//		return ep, nil
//	}
//
// Every setting has a default that works locally with nothing set (claims,
// tasks and sealed state kept in memory, no authorization); on Lambda an
// endpoint without an issuer refuses to start unless MCP_ALLOW_ANONYMOUS
// is true. functions/mcp, the demo, is built this way.
package endpoint

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	"github.com/serverless-mcp/mcp-lambda/pkg/breaker"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/events"
	"github.com/serverless-mcp/mcp-lambda/pkg/items"
	"github.com/serverless-mcp/mcp-lambda/pkg/observe"
	"github.com/serverless-mcp/mcp-lambda/pkg/ratelimit"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate/awskms"
	"github.com/serverless-mcp/mcp-lambda/pkg/runner"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
)

// Options are what an endpoint is beyond its configuration: who it is and
// what its tools need.
type Options struct {
	// Implementation names the server (serverInfo).
	Implementation stateless.Implementation
	// Instructions are returned by server/discover and initialize.
	Instructions string
	// ToolSchemas, SchemaEngine and URITemplates are the server's
	// (stateless.Options): generated schemas of the tools, the JSON
	// Schema engine for what the built-in validator does not serve, and
	// the URI template engine its resource templates need.
	ToolSchemas  []byte
	SchemaEngine stateless.SchemaEngine
	URITemplates stateless.URITemplateEngine
	// DefaultScopes are the scopes the protected-resource metadata lists
	// when MCP_AUTH_SCOPES_SUPPORTED is unset; ScopeImplies is the scope
	// hierarchy; ResourceName the metadata's resource_name.
	DefaultScopes []string
	ScopeImplies  map[string][]string
	ResourceName  string
	// Stdout receives the log lines, the metrics and the local
	// endpoint's URL; nil is os.Stdout.
	Stdout io.Writer
	// Observer, if set, replaces the one made from the configuration
	// (writing to Stdout); Logger, if set, the observer's logger.
	Observer *observe.Observer
	Logger   *slog.Logger
	// Clients are the AWS clients; nil makes them from the default AWS
	// configuration, on first use.
	Clients *Clients
	// Interceptors are the server's interceptors beyond the endpoint's
	// own, which run first, in this order: the open-streams quota's
	// (Config.Quotas.Streams), the claims Guard's, the tasks extension's,
	// the calls quota's (Config.Quotas.Calls) and the circuit breaker's
	// (Config.BreakerFailures), the quotas' and the breaker's only when
	// they are on (see stateless.Interceptor). Tracing, auditing, quotas
	// go here. An Execute interceptor here runs inside the claim: what it
	// answers is what a keyed retry replays.
	Interceptors []stateless.Interceptor
}

// Endpoint is a composed endpoint: register tools on Server, then Run.
type Endpoint struct {
	Server *stateless.Server
	Config *Config
	// Clients are the endpoint's AWS clients, for tools of your own.
	Clients *Clients
	// Claims is the idempotency claims store: in DynamoDB when
	// Config.ClaimsTable is set, else in memory. It is a
	// claims.Transactor on DynamoDB: a tool that writes the same table
	// commits its writes with its claim (claims.Enlist); and a
	// claims.Committer on DynamoDB and in memory: a tool with no effect
	// but its enlisted writes (Tool.EnlistedEffectsOnly) commits a keyed
	// call in one request.
	Claims claims.Store
	// Tasks is the tasks extension the server serves (package tasks):
	// its store is the claims table's on DynamoDB, else memory.
	Tasks *tasks.Extension
	// Items is where the function's tools keep their own items (package
	// items): the claims table on DynamoDB, so that a keyed call's writes
	// commit with its claim, else memory. Write through it and a tool's
	// effect is made once in every mode.
	Items    items.Table
	Observer *observe.Observer
	Logger   *slog.Logger
	stdout   io.Writer

	// Auth is the endpoint as an OAuth protected resource, when an
	// issuer is configured (nil: anonymous); Documents are its OAuth
	// documents, which both doors serve beside the endpoint (absent, 404,
	// without Auth).
	Auth      *auth.Resource
	Documents *auth.Documents
}

// New composes the endpoint cfg describes.
func New(cfg *Config, o Options) (*Endpoint, error) {
	e := &Endpoint{Config: cfg, Clients: o.Clients, Observer: o.Observer, Logger: o.Logger, stdout: o.Stdout}
	if e.stdout == nil {
		e.stdout = os.Stdout
	}
	if e.Clients == nil {
		e.Clients = &Clients{}
	}
	if e.Observer == nil && o.Logger == nil {
		e.Observer = observe.New(e.stdout, observe.Options{
			Level:           cfg.LogLevel,
			Namespace:       cfg.MetricsNamespace,
			Function:        cfg.FunctionName,
			ToolErrorText:   cfg.LogToolErrorText,
			NoToolDimension: !cfg.MetricsPerTool,
		})
	}
	if e.Logger == nil {
		e.Logger = e.Observer.Logger()
	}
	// Request state is bound to the endpoint's URL per request (see
	// Config.Audience), so the sealer itself names no audience.
	sealer, err := cfg.State.Sealer(func() awskms.API { return lazyKMS{e.Clients} }, "", cfg.FunctionName)
	if err != nil {
		return nil, err
	}
	e.Claims = claims.NewMemory()
	e.Items = items.NewMemory(items.MemoryOptions{TTL: TableTTL})
	var taskStore tasks.Store = tasks.NewMemory()
	if cfg.ClaimsTable != "" {
		e.Claims = &lazyStore{aws: e.Clients, table: cfg.ClaimsTable}
		e.Items = items.NewDynamoDB(lazyDynamo{e.Clients}, cfg.ClaimsTable)
		taskStore = &tasks.DynamoDB{Client: lazyDynamo{e.Clients}, Table: cfg.ClaimsTable, SortKey: TableSortKey}
	} else if cfg.InLambda {
		e.Logger.Warn("no " + EnvClaimsTable + ": idempotency claims and tasks are kept per instance")
	}
	// Tasks run in this process locally; on Lambda each runs in an
	// asynchronous invocation of the function itself.
	q := cfg.Quotas
	slots := func(kind string) ratelimit.Slots {
		if cfg.ClaimsTable != "" {
			return &ratelimit.DynamoDBSlots{Client: lazyDynamo{e.Clients}, Table: cfg.ClaimsTable, SortKey: TableSortKey, Kind: kind}
		}
		return &ratelimit.MemorySlots{}
	}
	taskOpts := tasks.Options{Store: taskStore, TTL: cfg.TaskTTL, LiveTasks: q.LiveTasks}
	if q.LiveTasks > 0 {
		taskOpts.Slots = slots("tasks")
	}
	if cfg.InLambda {
		taskOpts.Dispatch = (&tasks.Lambda{Client: e.Clients.lambdaAPI, Function: cfg.FunctionName}).Dispatch
	}
	// Without a table a listen stream hears this process only, which is
	// all there is locally. The function's name scopes the log: another
	// function on the same table (the conformance fixture) neither hears
	// its events nor announces its deploys.
	var eventLog *events.DynamoDB
	if cfg.EventsTable != "" {
		eventLog = &events.DynamoDB{Client: lazyDynamo{e.Clients}, Table: cfg.EventsTable, SortKey: TableSortKey, Scope: cfg.FunctionName}
	}
	var claimOpts claims.Options
	if eventLog != nil {
		// A keyed call's change events commit with its effect.
		claimOpts.Changes = eventLog
	}
	guard := claims.New(e.Claims, &claimOpts)
	e.Tasks = tasks.New(taskOpts)
	var ics []stateless.Interceptor
	if q.Streams > 0 {
		// Before the claim: a refused stream touches no claim.
		ics = append(ics, (&ratelimit.StreamLimit{Slots: slots("streams"), Max: q.Streams}).Interceptor())
	}
	ics = append(ics, guard.Interceptor())
	// The tasks extension's interceptor comes next (Install, below); then
	// these.
	var after []stateless.Interceptor
	if q.Calls > 0 {
		var counter ratelimit.Counter = &ratelimit.Memory{}
		if cfg.ClaimsTable != "" {
			counter = &ratelimit.DynamoDB{Client: lazyDynamo{e.Clients}, Table: cfg.ClaimsTable, SortKey: TableSortKey}
		}
		after = append(after, (&ratelimit.Limiter{Counter: counter, Limit: q.Calls, Window: q.CallWindow}).Interceptor())
	}
	if cfg.BreakerFailures > 0 {
		after = append(after, (&breaker.Breaker{Failures: cfg.BreakerFailures, Cooldown: cfg.BreakerCooldown}).Interceptor())
	}
	opts := &stateless.Options{
		Instructions:    o.Instructions,
		AllowedOrigins:  cfg.AllowedOrigins,
		Sealer:          sealer,
		Interceptors:    ics,
		ToolSchemas:     o.ToolSchemas,
		SchemaEngine:    o.SchemaEngine,
		URITemplates:    o.URITemplates,
		DeadlineMargin:  cfg.DeadlineMargin,
		StreamKeepAlive: cfg.StreamKeepAlive,
		Listen:          cfg.Listen,
	}
	if eventLog != nil {
		opts.Events = eventLog
	}
	if e.Observer != nil {
		opts.Observe = e.Observer.Observe
	}
	opts.HandlerLogger = e.Logger
	proxy := func() (reqstate.Sealer, auth.Spender) { return sealer, guard }
	if e.Auth, err = newAuth(cfg, &o, e.Clients, proxy); err != nil {
		return nil, err
	}
	if e.Auth != nil {
		opts.Auth = &stateless.AuthOptions{Authenticator: e.Auth, ScopeImplies: o.ScopeImplies}
	}
	if cfg.AuthIssuer == "" && !cfg.InLambda && !loopbackAddr(cfg.Addr) {
		e.Logger.Warn("no " + EnvAuthIssuer + ": the endpoint serves anyone who can reach " + cfg.Addr)
	}
	e.Server = stateless.NewServer(o.Implementation, opts)
	e.Documents = &auth.Documents{Server: e.Server, Resource: e.Auth}
	e.Tasks.Install(e.Server)
	e.Server.Use(append(after, o.Interceptors...)...)
	return e, nil
}

// Run serves the endpoint: on Lambda forever, locally until ctx ends or
// the process is told to stop (SIGINT, SIGTERM), then gracefully.
func (e *Endpoint) Run(ctx context.Context) error {
	cfg := e.Config
	opts := runner.Options{InLambda: cfg.InLambda, Addr: cfg.Addr, Endpoint: cfg.Audience, Logger: e.Logger, Stdout: e.stdout, Name: cfg.FunctionName,
		RequestTimeout: cfg.RequestTimeout, StreamKinds: cfg.StreamKinds, Events: []runner.EventHandler{e.Tasks.HandleEvent}, Documents: e.Documents}
	e.announceCatalog(ctx)
	if err := runner.Run(ctx, e.Server, opts); err != nil {
		return fmt.Errorf("%s=%s: %w", EnvAddr, cfg.Addr, err)
	}
	return nil
}

// announceBound bounds the recording of the catalog at start: a slow
// table delays no request, and a failure only costs listeners the news.
const announceBound = 3 * time.Second

// announceCatalog records the server's tools, prompts and resources in the
// event log, so that listen streams held open on instances of an earlier
// deploy announce what changed (see stateless.Server.AnnounceCatalog). It
// runs beside the first requests rather than before them: on Lambda it
// would otherwise add its DynamoDB round trips to every cold start.
func (e *Endpoint) announceCatalog(ctx context.Context) {
	if e.Config.EventsTable == "" {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceBound)
		defer cancel()
		if err := e.Server.AnnounceCatalog(ctx); err != nil {
			e.Logger.Warn("the catalog was not recorded: listen streams on other instances may not hear of its changes", "error", err)
		}
	}()
}

// loopbackAddr reports whether a listening address is a loopback one.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && isLoopback(host)
}
