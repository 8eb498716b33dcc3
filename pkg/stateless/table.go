package stateless

import (
	"context"
)

// era says which revisions of the protocol serve a method.
type era uint8

const (
	modernEra era = 1 << iota // 2026-07-28
	legacyEra                 // the 2025 revisions
	everyEra  = modernEra | legacyEra
)

// methodInfo is one row of the method table: everything the request path
// needs to know about a method, in one place. Dispatch, header checks,
// advertising and the decoding of params all read it; a method is added
// with one row and one handler.
type methodInfo struct {
	// name is the method's name.
	name string
	era  era
	// feature is the registry feature that must be present for the method
	// to exist ("" for the methods every server has): a method of a
	// feature the server does not advertise is unknown.
	feature string
	// named says the request must carry an Mcp-Name header equal to its
	// params' target (in a legacy era: when it carries one).
	named bool
	// params returns a fresh value of the method's params type.
	params func() paramsOf
	// targetMember names the string member of a server's own method's
	// params that Mcp-Name must equal (MethodOptions.Target), with named;
	// extension is the extension it is of (MethodOptions.Extension).
	targetMember, extension string
	// own marks a server's own method (AddMethod).
	own bool
	// handlers says the method runs a handler of the server's other than
	// a tool's (which has a deadline of its own): its context is given
	// the request's deadline. listed, for a list, says whether the
	// registry has visibility rules for its items, which it runs.
	handlers bool
	listed   func(r *registry) bool
	// executes says the method runs a handler of the server's through
	// execute (a tool's, a prompt's, a resource's): its request needs
	// the exchange's running part.
	executes bool
	// serve answers the request; x.d.params holds its decoded params.
	serve func(x *exchange, ctx context.Context) Answer
}

// row makes the row of a server's own method (AddMethod), whose handler
// takes its params typed: the row makes the params value and hands the
// same value back to serve, so that no handler asserts a type. The
// protocol's rows are written out instead (protocolMethods): static
// data, which a call of row at start would not be.
func row[P any, PP interface {
	*P
	paramsOf
}](e era, feature string, named bool, serve func(x *exchange, ctx context.Context, p PP) Answer) *methodInfo {
	return &methodInfo{era: e, feature: feature, named: named,
		params: func() paramsOf { return PP(new(P)) },
		serve:  func(x *exchange, ctx context.Context) Answer { return serve(x, ctx, x.d.params.(PP)) }}
}

// paramsOf is a method's params type: each embeds baseParams.
type paramsOf interface {
	base() *baseParams
	// target is the body value Mcp-Name must equal: the tool's or
	// prompt's name, the resource's URI; nil for a method that names
	// none.
	target() *string
}

// baseParams are the members every request's params may carry.
type baseParams struct {
	Meta *requestMeta `json:"_meta"`
}

func (b *baseParams) base() *baseParams { return b }
func (b *baseParams) target() *string   { return nil }

// requestMeta is params._meta. The two required members are kept raw so
// that absent, null and wrongly typed can be told apart.
type requestMeta struct {
	ProtocolVersion    span `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities span `json:"io.modelcontextprotocol/clientCapabilities"`
	ClientInfo         span `json:"io.modelcontextprotocol/clientInfo"`
	LogLevel           span `json:"io.modelcontextprotocol/logLevel"`
	ProgressToken      span `json:"progressToken"`
}

// roundTrip are the members of a multi-round-trip retry.
type roundTrip struct {
	InputResponses span    `json:"inputResponses"`
	RequestState   *string `json:"requestState"`
}

type listParams struct {
	baseParams
	Cursor *string `json:"cursor"`
}

type callToolParams struct {
	baseParams
	roundTrip
	Name      *string `json:"name"`
	Arguments span    `json:"arguments"`
	// request idempotency (proposed for tools/call); kept raw so that a
	// key of the wrong type is refused as a key (see idempotencyKey)
	IdempotencyKey span `json:"idempotencyKey"`
}

func (p *callToolParams) target() *string { return p.Name }

type getPromptParams struct {
	baseParams
	roundTrip
	Name      *string `json:"name"`
	Arguments span    `json:"arguments"`
}

func (p *getPromptParams) target() *string { return p.Name }

type readResourceParams struct {
	baseParams
	roundTrip
	URI *string `json:"uri"`
}

func (p *readResourceParams) target() *string { return p.URI }

type completeParams struct {
	baseParams
	Ref *struct {
		Type string `json:"type"`
		Name string `json:"name"`
		URI  string `json:"uri"`
	} `json:"ref"`
	Argument *struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"argument"`
	Context *struct {
		Arguments map[string]string `json:"arguments"`
	} `json:"context"`
}

// initializeParams are the legacy handshake's.
type initializeParams struct {
	baseParams
	ProtocolVersion *string `json:"protocolVersion"`
	Capabilities    span    `json:"capabilities"`
	ClientInfo      span    `json:"clientInfo"`
}

// setLevelParams are legacy logging/setLevel's.
type setLevelParams struct {
	baseParams
	Level *string `json:"level"`
}

// subscribeParams are legacy resources/subscribe's and unsubscribe's.
type subscribeParams struct {
	baseParams
	URI *string `json:"uri"`
}

// protocolMethods is the method table: the protocol's rows. It is static
// data, laid out by the linker rather than built at start (a cold start
// runs no code for it), and looked up by a walk that compares lengths
// first (protocolMethod): fifteen rows cost less to walk than a map
// lookup's hash. The features are the registry's: "tools", "prompts",
// "resources", "completions". An extension's methods are the server's own
// (AddMethod): the tasks extension's are package tasks's. Each row's
// params makes its method's params type and its serve hands the same type
// to the handler, so that no handler asserts a type.
var protocolMethods = [...]methodInfo{
	{name: "server/discover", era: modernEra,
		params: func() paramsOf { return new(baseParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return serveDiscover(x, ctx, x.d.params.(*baseParams))
		}},

	{name: "initialize", era: legacyEra,
		params: func() paramsOf { return new(initializeParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return serveInitialize(x, ctx, x.d.params.(*initializeParams))
		}},
	{name: "ping", era: legacyEra,
		params: func() paramsOf { return new(baseParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return servePing(x, ctx, x.d.params.(*baseParams))
		}},
	{name: "logging/setLevel", era: legacyEra,
		params: func() paramsOf { return new(setLevelParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return serveSetLevel(x, ctx, x.d.params.(*setLevelParams))
		}},
	{name: "resources/subscribe", era: legacyEra, feature: "resources",
		params: func() paramsOf { return new(subscribeParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return serveSubscribe(x, ctx, x.d.params.(*subscribeParams))
		}},
	{name: "resources/unsubscribe", era: legacyEra, feature: "resources",
		params: func() paramsOf { return new(subscribeParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return serveSubscribe(x, ctx, x.d.params.(*subscribeParams))
		}},

	{name: "tools/list", era: everyEra, feature: "tools",
		listed: func(r *registry) bool { return r.toolsHidden },
		params: func() paramsOf { return new(listParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return x.serveListTools(ctx, x.d.params.(*listParams))
		}},
	{name: "tools/call", era: everyEra, feature: "tools", named: true, executes: true,
		params: func() paramsOf { return new(callToolParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return x.serveCallTool(ctx, x.d.params.(*callToolParams))
		}},
	{name: "prompts/list", era: everyEra, feature: "prompts",
		listed: func(r *registry) bool { return r.promptsHidden },
		params: func() paramsOf { return new(listParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return x.serveListPrompts(ctx, x.d.params.(*listParams))
		}},
	{name: "prompts/get", era: everyEra, feature: "prompts", named: true, executes: true, handlers: true,
		params: func() paramsOf { return new(getPromptParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return x.serveGetPrompt(ctx, x.d.params.(*getPromptParams))
		}},
	{name: "resources/list", era: everyEra, feature: "resources",
		listed: func(r *registry) bool { return r.resourcesHidden },
		params: func() paramsOf { return new(listParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return x.serveListResources(ctx, x.d.params.(*listParams))
		}},
	{name: "resources/templates/list", era: everyEra, feature: "resources",
		listed: func(r *registry) bool { return r.resourcesHidden },
		params: func() paramsOf { return new(listParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return x.serveListTemplates(ctx, x.d.params.(*listParams))
		}},
	{name: "resources/read", era: everyEra, feature: "resources", named: true, executes: true, handlers: true,
		params: func() paramsOf { return new(readResourceParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return x.serveReadResource(ctx, x.d.params.(*readResourceParams))
		}},
	{name: "completion/complete", era: everyEra, feature: "completions", handlers: true,
		params: func() paramsOf { return new(completeParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return x.serveComplete(ctx, x.d.params.(*completeParams))
		}},

	{name: MethodListen, era: modernEra,
		params: func() paramsOf { return new(listenParams) },
		serve: func(x *exchange, ctx context.Context) Answer {
			return x.serveListen(ctx, x.d.params.(*listenParams))
		}},
}

// protocolMethod returns the protocol's row of the method name, nil for a
// name the protocol does not define. It takes the name as a string or as
// the bytes of a body, and makes no string of them.
func protocolMethod[N string | []byte](name N) *methodInfo {
	for i := range protocolMethods {
		if m := &protocolMethods[i]; len(m.name) == len(name) && m.name == string(name) {
			return m
		}
	}
	return nil
}

// IsProtocolMethod reports whether method is one the protocol defines
// (the method table's). A metric dimension may name these; a peer's
// invention it may not.
func IsProtocolMethod(method string) bool {
	return protocolMethod(method) != nil
}

// served returns the request's row when the server serves it to a
// request of this era (legacy or not): known, of the era, and of a feature
// the server advertises. nil means unknown.
func (x *exchange) served() *methodInfo {
	m := x.d.row
	if m == nil {
		return nil
	}
	if e := modernEra; x.legacy && m.era&legacyEra == 0 || !x.legacy && m.era&e == 0 {
		return nil
	}
	if m.feature != "" && !x.reg.has(m.feature) {
		return nil
	}
	if m.name == MethodListen && !x.listens() {
		// A buffered door cannot hold the stream: the method is not
		// offered there, as the protocol allows a server that does not
		// advertise listChanged or subscribe.
		return nil
	}
	return m
}
