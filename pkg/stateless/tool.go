package stateless

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// Tool describes a tool. InputSchema and OutputSchema may be a
// json.RawMessage or any value that marshals to a JSON Schema object (a
// *jsonschema.Schema, say); [AddTool] takes them from Options.ToolSchemas
// or infers them from Go types when nil.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	Icons        []Icon           `json:"icons,omitempty"`
	InputSchema  any              `json:"inputSchema"`
	OutputSchema any              `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	Meta         Meta             `json:"_meta,omitempty"`

	// Visible, if set, decides per caller whether the tool exists at all.
	// A hidden tool is absent from tools/list and answers tools/call
	// exactly as an unknown tool does.
	Visible Visibility `json:"-"`

	// IdempotentByArguments declares that two calls with the same
	// canonical arguments are the same operation, so a call without an
	// idempotency key is deduplicated by a digest of its arguments.
	IdempotentByArguments bool `json:"-"`

	// EnlistedEffectsOnly declares that the tool has no effect but the
	// writes its handler enlists in its call's idempotency claim (package
	// claims: claims.Enlist): it calls no other service, makes no other
	// write, sends nothing, and its answer depends on what it reads only
	// as far as those writes' conditions check it. A keyed call of such a
	// tool then runs its handler before anything is claimed, and the
	// claim, the writes and the stored result are one conditional write:
	// one DynamoDB request for a first call and one for a replay. When a
	// tool may not declare it: docs/idempotency.md.
	EnlistedEffectsOnly bool `json:"-"`

	// Scopes are the OAuth scopes a token must grant to call the tool
	// when the endpoint is protected (Options.Auth); a call without them
	// is refused 403 insufficient_scope, naming them all.
	Scopes []string `json:"-"`

	// MaxDuration is the longest the tool runs: its handler's context ends
	// then (or earlier, at the request's deadline less
	// Options.DeadlineMargin), and a handler still running is abandoned and
	// the call refused with a retryable Timeout. An idempotency claim's
	// lease is this plus a small margin, so a retry is refused "in
	// progress" for about as long as the tool can run, no longer. Default
	// DefaultMaxDuration; keep it well under the function's timeout.
	MaxDuration time.Duration `json:"-"`

	// Inline runs the handler on the request's goroutine wherever it is
	// answered. By default it runs there only when the answer can leave
	// before the handler returns — onto a stream that can be ended early
	// ([Ender]: net/http's, a Lambda response stream's), or through
	// [Server.HandleEarly] (package runner's Lambda runtime) — a timer
	// standing ready to answer it in-band at its deadline. Through
	// [Server.Handle], which must return the answer, it runs apart, so
	// that one ignoring its context can be abandoned at the deadline and
	// the call answered in-band; the hand-off costs a few microseconds
	// (waking an idle processor), much of a call without I/O. Set it for
	// a handler that returns once its context is done, as AWS SDK,
	// net/http and database/sql calls do: one that returns after its
	// deadline is answered then, the overrun logged as a fault.
	Inline bool `json:"-"`

	// TaskSupport says whether the tool's calls run as tasks of the tasks
	// extension (package tasks, whose interceptor the server must have):
	// answered at once with a task handle, the handler run by a worker
	// for up to tasks.Options.MaxRun. Default TaskSupportForbidden.
	TaskSupport TaskSupport `json:"-"`

	// BeforeTask, if set, runs in the request of a call that is to become
	// a task, before the task is created: it may gather input with
	// InputRequired rounds (answered in-band, as a handler's are) or
	// refuse the call with an error. When it returns nil the task is
	// created, and the handler sees the last round's answers and state.
	BeforeTask func(ctx context.Context, req *ToolRequest) error `json:"-"`
}

// DefaultMaxDuration is the MaxDuration of a tool that declares none.
const DefaultMaxDuration = 10 * time.Second

// ReadOnly reports whether the tool declares it changes nothing.
func (t *Tool) ReadOnly() bool { return t.Annotations != nil && t.Annotations.ReadOnlyHint }

// ToolRequest is a tools/call request as a handler sees it.
type ToolRequest struct {
	*Call
	// Name is the tool's name.
	Name string
	// Arguments are the call's arguments, validated against the input
	// schema; "{}" when the client sent none.
	Arguments json.RawMessage
	// Task is the task this run of the handler belongs to, when the call
	// runs as a task; nil when it is answered in its request.
	Task *TaskRun
}

// ToolHandler answers tools/call for one tool. Return a [*mcperr.ToolError]
// for a failure the model should see (an isError result), an
// [*InputRequired] to ask the client for input, or a [*mcperr.Error] to
// refuse the request. Any other error becomes an isError result carrying
// the error's text.
type ToolHandler func(ctx context.Context, req *ToolRequest) (*CallToolResult, error)

// TypedToolHandler is a tool handler whose arguments are decoded into In
// and whose structured result is Out.
type TypedToolHandler[In, Out any] func(ctx context.Context, req *ToolRequest, in In) (*CallToolResult, Out, error)

type registeredTool struct {
	def     Tool
	handler ToolHandler  // raw, inside the tool interceptors
	raw     ToolHandler  // as registered
	srv     *Server      // whose options say where schemas come from
	inType  reflect.Type // a typed tool's In, when its input schema is not given
	outType reflect.Type // a typed tool's Out, when its output schema is not given
	// inferred are the typed tool's input and output schemas when the
	// server has no engine and no generated schema for it: inferred
	// (inferFlat) at registration, which must refuse a type that is not
	// flat, and kept for prepare rather than inferred twice.
	inferred [2][]byte

	// What the schemas make — found, compiled and encoded on first use
	// (prepare), not at registration: a cold start pays for none of it.
	// Server.Verify prepares every tool at once, for tests.
	once    sync.Once
	err     error
	input   *schemaValidator
	output  *schemaValidator // nil: no output schema
	encoded []byte           // the tool as listed
	params  []paramHeader    // x-mcp-header annotations
}

// prepare resolves the tool's schemas once; every later call returns at
// once with the same outcome.
func (rt *registeredTool) prepare() error {
	rt.once.Do(func() {
		if err := rt.compile(); err != nil {
			rt.err = fmt.Errorf("stateless: tool %q: %w", rt.def.Name, err)
		}
	})
	return rt.err
}

// AddTool registers a tool whose InputSchema is given. It panics if the
// tool is malformed or its name is taken, as [http.ServeMux.Handle] does
// for a conflicting pattern: both are programming errors.
func (s *Server) AddTool(t *Tool, h ToolHandler) {
	if t.InputSchema == nil {
		panic(fmt.Sprintf("stateless: tool %q has no input schema", t.Name))
	}
	rt, err := newRegisteredTool(s, t, h)
	if err != nil {
		panic(err)
	}
	addTool(s, rt)
}

func addTool(s *Server, rt *registeredTool) {
	if rt.def.TaskSupport != TaskSupportForbidden && !s.taskRuns {
		panic(fmt.Sprintf("stateless: tool %q runs as a task but no interceptor in use runs tasks (Provides.TaskRuns: package tasks's)", rt.def.Name))
	}
	update(s, func(r *registry) {
		rt.raw = rt.handler
		rt.handler = interceptTool(s, &rt.def, rt.raw)
		var ok bool
		r.tools, ok = insertSorted(r.tools, rt, func(t *registeredTool) string { return t.def.Name })
		if !ok {
			panic(fmt.Sprintf("stateless: tool %q registered twice", rt.def.Name))
		}
		if rt.def.Visible != nil {
			r.toolsHidden = true
		}
	})
}

// AddTool registers a typed tool on s. Unless t gives them, the input
// schema is In's and the output schema Out's (none when Out is any),
// taken from Options.ToolSchemas or else inferred by
// Options.SchemaEngine, or, with no engine, by the server itself when the
// type is flat (see [SchemaEngine]); a type that is not flat, with
// neither a generated schema nor an engine, panics here, naming the
// fixes. Schemas are compiled on the tool's first use (or Server.Verify,
// which tests call): a schema that cannot be compiled then refuses the
// tool's calls as an internal error, and Verify reports it. Arguments are
// validated against the input schema before h runs; a failure is an
// isError result the model can correct. The structured result is
// validated against the output schema.
func AddTool[In, Out any](s *Server, t *Tool, h TypedToolHandler[In, Out]) {
	var rt *registeredTool
	handler := func(ctx context.Context, req *ToolRequest) (*CallToolResult, error) {
		// Member names match exactly, as the schema validator matched
		// them: a case variant of a property is an unknown member, not
		// that property.
		var in In
		if err := jsonv2.Unmarshal(req.Arguments, &in); err != nil {
			return nil, mcperr.NewInvalidArguments("arguments do not decode: " + err.Error())
		}
		res, out, err := h(ctx, req, in)
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = &CallToolResult{}
		}
		if rt.output != nil && res.StructuredContent == nil && !res.IsError {
			res.StructuredContent = out
		}
		return res, nil
	}
	rt, err := newRegisteredTool(s, t, handler)
	if err != nil {
		panic(err)
	}
	if t.InputSchema == nil {
		rt.inType = reflect.TypeFor[In]()
		if !objectType(rt.inType) {
			panic(fmt.Sprintf("stateless: tool %q: its input type %s is not an object: a tool's arguments are a JSON object, so give it a struct (or a map with string keys), or an InputSchema", t.Name, rt.inType))
		}
	}
	if t.OutputSchema == nil && reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		rt.outType = reflect.TypeFor[Out]()
		if !objectType(rt.outType) {
			panic(fmt.Sprintf("stateless: tool %q: its output type %s is not an object: structured content is a JSON object, so give it a struct (or a map with string keys), any for none, or an OutputSchema", t.Name, rt.outType))
		}
	}
	if rt.inType != nil || rt.outType != nil {
		// A generated file that does not read is a mistake to name now,
		// not at the first call.
		generated, err := s.schemas.has(t.Name)
		if err != nil {
			panic(fmt.Sprintf("stateless: tool %q: %v", t.Name, err))
		}
		if !generated && s.opts.SchemaEngine == nil {
			// So is a type whose schema no one can infer: with no
			// engine, a type must be flat, which is cheap to check.
			rt.inferred[0] = mustInferFlat(t.Name, "input", rt.inType)
			rt.inferred[1] = mustInferFlat(t.Name, "output", rt.outType)
		}
	}
	addTool(s, rt)
}

// mustInferFlat returns typ's schema as inferFlat infers it, nil for no
// type, or panics, saying why, when it cannot be inferred with no engine.
func mustInferFlat(tool, which string, typ reflect.Type) []byte {
	if typ == nil {
		return nil
	}
	raw, ok, err := inferFlat(typ)
	if err == nil && !ok {
		err = errNeedsEngine(typ)
	}
	if err != nil {
		panic(fmt.Sprintf("stateless: tool %q: %s schema: %v", tool, which, err))
	}
	return raw
}

// objectType reports whether values of t encode as a JSON object: a
// struct, a map with string keys, or a pointer to either.
func objectType(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct || t.Kind() == reflect.Map && t.Key().Kind() == reflect.String
}

// newRegisteredTool checks what is cheap to check at once (the name, the
// handler) and leaves the schemas to prepare.
func newRegisteredTool(s *Server, t *Tool, h ToolHandler) (*registeredTool, error) {
	if !validToolName(t.Name) {
		return nil, fmt.Errorf("stateless: tool name %q: want 1-128 characters of [A-Za-z0-9_.-]", t.Name)
	}
	if h == nil {
		return nil, fmt.Errorf("stateless: tool %q has no handler", t.Name)
	}
	return &registeredTool{def: *t, handler: h, srv: s}, nil
}

// compile finds, compiles and checks the tool's schemas and encodes the
// tool as it is listed.
func (rt *registeredTool) compile() error {
	s, t := rt.srv, &rt.def
	raw, err := toolSchema(s, t.Name, t.InputSchema, rt.inType, rt.inferred[0], false)
	if err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	if rt.params, err = readInputSchema(raw); err != nil {
		return err
	}
	if rt.input, err = compileSchema(raw, s.opts.SchemaEngine); err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	t.InputSchema = json.RawMessage(raw)
	if t.OutputSchema != nil || rt.outType != nil {
		raw, err := toolSchema(s, t.Name, t.OutputSchema, rt.outType, rt.inferred[1], true)
		if err != nil {
			return fmt.Errorf("output schema: %w", err)
		}
		if rt.output, err = compileSchema(raw, s.opts.SchemaEngine); err != nil {
			return fmt.Errorf("output schema: %w", err)
		}
		t.OutputSchema = json.RawMessage(raw)
	}
	listed := *t
	if meta := s.listedMeta(t); meta != nil {
		listed.Meta = meta
	}
	if rt.encoded, err = json.Marshal(&listed); err != nil {
		return fmt.Errorf("does not marshal: %w", err)
	}
	return nil
}
