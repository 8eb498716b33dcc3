// Package stateless serves the Model Context Protocol, revision
// 2026-07-28, from one stateless HTTP endpoint: every request carries its
// protocol version and client capabilities in params._meta, so any
// instance of a fleet (any Lambda invocation) can answer any request, and
// nothing is kept between requests.
//
// Register tools, resources, resource templates, prompts and a completion
// handler on a [Server], then serve it with [Server.ServeHTTP], an
// [HTTPHandler] (which identifies callers), or [Server.Handle] from any
// other transport, such as an API Gateway event adapter.
//
//	srv := stateless.NewServer(stateless.Implementation{Name: "notes", Version: "1.0.0"}, nil)
//	stateless.AddTool(srv, &stateless.Tool{Name: "echo", Description: "Echo text."},
//		func(ctx context.Context, req *stateless.ToolRequest, in EchoIn) (*stateless.CallToolResult, EchoOut, error) {
//			return nil, EchoOut{Text: in.Text}, nil
//		})
//	http.Handle("/mcp", srv)
//
// # Extending the server
//
// Production features are built on two seams, not in the core:
//
//   - [Interceptor]s ([Options.Interceptors], or [Server.Use] before the
//     first request) wrap the server's work, and each sees what goes in
//     and what came out ([Answer]): every request (Request: a rate limit,
//     package ratelimit; tracing and audit see every method's answer), the
//     execution of every tools/call, prompts/get and resources/read once it
//     passed the server's checks (Execute: package claims's idempotency
//     claims and single-use state, package tasks's task creation), and
//     each tool's handler (Tool: package breaker's circuit breaker). The
//     core names none of them: what one gives besides its hooks is its
//     [Provides] — extensions to advertise, _meta for a tool's listed
//     definition, single-use state, task runs — and what it records of a
//     request is an [Execution.Note].
//   - [AddMethod] registers a method of the server's own, typed, served
//     like the protocol's: package tasks's tasks/get, tasks/update and
//     tasks/cancel. [Server.Invoke] runs a registered tool's handler for
//     work that no request carries (a task's worker).
//
// An extension that needs both installs itself in one call (package
// tasks's Extension.Install).
//
// Package endpoint composes them from the environment; package mcptest
// calls a server in tests.
//
// # Tool schemas
//
// The server infers and validates flat schemas itself: an object of
// string, number, integer and boolean properties, optionally nullable,
// with required members, a string enum, and no other properties or only
// such scalars (a map). It validates them on the JSON bytes, without
// decoding them, and infers them from flat Go types (structs of string,
// int, int64, float and bool fields, perhaps pointers, and maps of such
// values) byte for byte as package toolschema's engine would. So a typed
// tool whose types are flat, as most are, works with no options, and
// this package links no schema library: a function pays no schema
// library's package initialization at its cold start unless it sets one
// (docs/performance.md measures that link alone: the bare-jsonschema
// subject).
//
// Anything else, inferring the schema of a nested type (a list in a
// result, say) or validating a schema given by hand that goes beyond
// flat ones, takes [Options.SchemaEngine]: package toolschema has one,
// on google/jsonschema-go. A typed tool whose type needs an engine that
// the server has not is refused when it is registered, naming the
// fixes. Typed tools whose schemas are generated ahead of time
// ([GenerateToolSchemas], embedded as [Options.ToolSchemas], kept true
// by a test calling [CheckToolSchemas]) infer nothing at run time.
// Schemas are compiled on a tool's first use; [Server.Verify] compiles
// them all for tests.
//
// Resource templates are matched against URIs by [Options.URITemplates]
// (package uritemplate has an engine), which a function sets when it
// registers any: the package links no template library either.
//
// # The path of one request
//
// Each stage returns its answer, each refusal is one value of the
// taxonomy in package errors, which decides its JSON-RPC code, HTTP status
// and error.data:
//
//  1. Transport: POST only (405 with Allow: POST); Origin checked against
//     the allow-list, loopback origins allowed on a loopback host, no
//     Origin allowed (403); one Content-Type, application/json (415); an
//     Accept that admits JSON (406); the body size limit (413). A CORS
//     preflight (OPTIONS with Access-Control-Request-Method) is answered
//     204 for an allowed origin, 403 otherwise, and every answer to an
//     allowed origin carries its CORS headers (see [CORSAllowHeaders]).
//     A request its transport saw an identity source for but could not
//     identify ([Request.Unidentified]) is refused 401 here, before its
//     body is read.
//  2. Message: exactly one JSON-RPC request or notification, read
//     strictly: member names match exactly (a name in another case is
//     another, unknown member), and a name repeated in an object, invalid
//     UTF-8 or a lone surrogate anywhere make the body unparsable, as
//     I-JSON has it. Unparsable JSON is -32700; batches, responses and
//     malformed envelopes (an id that is neither a string nor an integer
//     written as one, such as 1.5, 1e2 or -0, among them) are -32600,
//     all with HTTP 400 and a JSON-RPC
//     error body. A notification, once authenticated (3), is answered 202
//     with no body. Each
//     method's params are decoded into its own type (the method table), so
//     a member named like another method's parameter is unknown, and
//     ignored.
//  3. Authentication, before the era, _meta, version or method is looked
//     at: with [Options.Auth], every request and notification carries one
//     bearer token in its one Authorization header, checked by the
//     [Authenticator]. None, a malformed header, a refused token or one
//     that names no principal is 401 with a WWW-Authenticate challenge
//     naming the protected-resource metadata (and, for a tools/call of a
//     tool no visibility rule hides, that tool's scopes); an
//     authenticator's other refusals, such as its issuer unreachable,
//     are answered as they are. The token's principal and scopes are the
//     request's from here on; without Options.Auth the caller is the
//     transport's [Request.Principal], else [Anonymous].
//  4. Era: a request whose _meta carries a protocol version is modern. One
//     without is legacy if it is initialize, or if its
//     MCP-Protocol-Version header is absent or names a served legacy
//     revision; with a modern header it is a malformed modern request.
//  5. _meta: protocolVersion must be a string and clientCapabilities an
//     object (-32602, HTTP 400).
//  6. Headers: MCP-Protocol-Version must equal the _meta version, Mcp-Method
//     the method, Mcp-Name the tool or prompt name or the resource URI,
//     each after trimming white space and decoding the =?base64?...?= form
//     (-32020, HTTP 400).
//  7. Version: a revision this server does not serve is -32022 with
//     data {supported, requested}, HTTP 400.
//  8. Method: unknown, removed (initialize, ping, logging/setLevel,
//     resources/subscribe on the modern wire) or not advertised is -32601,
//     HTTP 404. The method's params must have its shape (-32602).
//  9. The request interceptors run next, around the rest: they may
//     answer in its place (a refusal), and see its answer. For
//     tools/call, the tool must then exist and be visible to the caller (a
//     hidden tool is answered as an absent one, -32602), Mcp-Param-*
//     headers from x-mcp-header annotations must match the arguments
//     (-32020), the caller's scopes must cover the tool's (403, one
//     insufficient_scope challenge naming every scope the tool needs), a
//     tool that requires tasks needs a client that declares the
//     extension (-32021), and an idempotency key, in
//     params.idempotencyKey or the Idempotency-Key header, must be usable:
//     one non-empty printable string of at most [MaxIdempotencyKeyBytes],
//     the same in both places when both are sent. An empty, malformed or
//     ambiguous key is -32602 with data.type "idempotency_key_invalid",
//     for read-only tools too; it is never ignored.
//  10. Request state: on a multi-round-trip retry, requestState is opened
//     and checked against the request (principal, method, target, a
//     canonical digest of the arguments, expiry) before any handler runs.
//     Every failure is the same -32602.
//  11. Arguments are validated against the tool's input schema; a failure
//     is an isError result the model can correct.
//  12. The handler runs, inside the execution interceptors (the claim, the
//     single-use state's redemption, a task's creation). Its result is
//     decorated: resultType, the server's
//     identity in _meta, and cache hints where the spec requires them. An
//     [InputRequired] becomes an input_required result, after checking
//     that the client declared every capability its input requests need
//     (-32021 otherwise).
//  13. Progress and log notifications the handler emitted, if the request
//     asked for them, are sent first, as a server-sent event stream that
//     ends with the response.
//
// # Legacy clients
//
// Clients of revisions 2025-03-26 to 2025-11-25 are served on the same
// endpoint without sessions: initialize is answered with the client's
// version if served, else 2025-11-25 (never 2026-07-28), no session id is
// minted, notifications/initialized is accepted, and results carry none of
// the 2026-only members. What needs a server-to-client request is not
// possible statelessly and is not offered to legacy clients: elicitation,
// sampling and roots (a tool that needs input answers a legacy client with
// an isError result saying it needs revision 2026-07-28), and anything
// sent on a standalone GET stream (list-changed and resource-updated
// notifications; GET is answered 405). logging/setLevel is accepted but
// cannot be remembered; legacy requests get log messages at
// [Options.LegacyLogLevel].
package stateless
