package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/ratelimit"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Options configure the tasks extension. Store is required; every other
// field has a default.
type Options struct {
	// Store keeps the tasks: DynamoDB or Memory.
	Store Store

	// Dispatch hands the task with id to a worker, which calls
	// [Extension.Run] with it: on Lambda an asynchronous invocation of the
	// function itself (Lambda.Dispatch). nil runs the worker in this
	// process, in a goroutine: right for a local server, wrong on Lambda,
	// which freezes the process between invocations.
	Dispatch func(ctx context.Context, id string) error

	// TTL is how long a task is kept from its creation (its ttlMs);
	// tasks/get of an older one answers as for an unknown task. Default
	// one hour.
	TTL time.Duration

	// PollInterval is the pollIntervalMs suggested to clients. Default 1s.
	PollInterval time.Duration

	// MaxRun bounds one run of a task's handler, besides the worker's own
	// deadline (on Lambda, the function's timeout less the server's
	// DeadlineMargin). Default 15 minutes, Lambda's longest
	// invocation.
	MaxRun time.Duration

	// DispatchGrace is how long a dispatched task may wait for a worker to
	// take it before tasks/get dispatches it again. Default one minute.
	DispatchGrace time.Duration

	// MaxAttempts bounds the runs a task may start: a task whose worker
	// died (its lease lapsed) is dispatched again on the next tasks/get,
	// up to this many runs in all; then it fails. Default 3.
	MaxAttempts int

	// CancelCheck is how often a running worker reads its task, to see a
	// tasks/cancel and stop the handler. Default 1s.
	CancelCheck time.Duration

	// LiveTasks bounds the tasks one caller (stateless.Call.QuotaKey: its
	// principal, or an anonymous caller's address) may hold live —
	// working or waiting for input — at once; a call that would start
	// one more is refused RateLimited, retryably, and starts nothing.
	// Each live task holds a slot in Slots until it ends or expires.
	// 0 leaves the number unbounded.
	LiveTasks int
	// Slots keep the live tasks' slots: ratelimit.DynamoDBSlots to bound
	// a caller across instances; nil keeps them in this process.
	Slots ratelimit.Slots
}

func (o *Options) withDefaults() *Options {
	c := *o
	if c.TTL <= 0 {
		c.TTL = time.Hour
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.MaxRun <= 0 {
		c.MaxRun = 15 * time.Minute
	}
	if c.DispatchGrace <= 0 {
		c.DispatchGrace = time.Minute
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	if c.CancelCheck <= 0 {
		c.CancelCheck = time.Second
	}
	return &c
}

// Extension serves the tasks extension on a stateless server, through its
// seams, installed in one call (Install): an execution interceptor makes
// a call of a tool with a TaskSupport a task, the extension's methods
// (tasks/get, tasks/update, tasks/cancel) are the server's own, and a
// worker runs each task's handler through Server.Invoke (Run). The
// protocol package keeps no task of its own.
//
//	srv := stateless.NewServer(info, &stateless.Options{
//		Interceptors: []stateless.Interceptor{guard.Interceptor()}})
//	tasks.New(tasks.Options{Store: store}).Install(srv)
//
// The claims Guard's interceptor comes first, outside this one, so that a
// keyed call's claim stores its CreateTaskResult and a keyed retry is
// answered with the same task on any instance.
type Extension struct {
	opts *Options
	srv  *stateless.Server
}

// New returns the extension with opts; it panics without a Store.
func New(opts Options) *Extension {
	if opts.Store == nil {
		panic("tasks: Options needs a Store")
	}
	o := opts.withDefaults()
	if o.LiveTasks > 0 {
		if o.Slots == nil {
			o.Slots = &ratelimit.MemorySlots{}
		}
		o.Store = &liveLimit{Store: o.Store, slots: o.Slots, max: o.LiveTasks, ttl: o.TTL, now: time.Now}
	}
	return &Extension{opts: o}
}

// Install serves the extension on srv, in one call, before srv answers
// its first request: its execution interceptor joins srv's (after those
// srv has: the claims Guard's comes first, outside it, so that a keyed
// call's claim stores its CreateTaskResult), its methods (tasks/get,
// tasks/update, tasks/cancel) become srv's own, and srv is the server
// whose tools the worker runs. Register the tools that run as tasks
// after it. It panics when called twice.
func (x *Extension) Install(srv *stateless.Server) {
	if x.srv != nil {
		panic("tasks: Install called twice")
	}
	x.srv = srv
	x.opts.Store = &announcing{Store: x.opts.Store, x: x}
	srv.Use(stateless.Interceptor{Execute: x.execute, Provides: stateless.Provides{TaskRuns: true, ListenFilters: []stateless.ListenFilter{x.listenFilter()}}})
	named := &stateless.MethodOptions{Target: "taskId", Extension: stateless.ExtensionTasks}
	stateless.AddMethod(srv, "tasks/get", x.get, named)
	stateless.AddMethod(srv, "tasks/update", x.update, named)
	stateless.AddMethod(srv, "tasks/cancel", x.cancel, named)
}

// errNotServing is the fault of a worker whose extension was installed
// on no server.
var errNotServing = errors.New("tasks: the extension is installed on no server (Extension.Install)")

// execute is the extension's Execute: a call that becomes a task runs
// the request's part (the tool's BeforeTask and its input rounds); once
// that lets it through, the task is created and is the answer.
func (x *Extension) execute(ctx context.Context, e *stateless.Execution, next func(context.Context) *stateless.Answer) *stateless.Answer {
	if !e.Task {
		return next(ctx)
	}
	a := next(ctx)
	if !a.StartsTask() {
		return a
	}
	return x.create(ctx, e)
}

// create stores the call as a new task, hands it to a worker and answers
// with it. The answer leaves only once the task is stored, so a tasks/get
// right after it finds it; a task no worker could be given is failed and
// the call refused retryably.
//
// A keyed call's task has an id derived from its key (keyedID), so that
// the call makes one task however it is retried: when the id is taken by
// a task of the same caller, tool and key — this call's own write, landed
// though the store's acknowledgement was lost, or the task a first call
// stored before its instance died with its claim still in progress — that
// task is the answer, and it is handed to a worker again if none holds it
// (a second delivery is fenced).
func (x *Extension) create(ctx context.Context, e *stateless.Execution) *stateless.Answer {
	to, c := x.opts, e.Call
	ctx, cancel := context.WithDeadline(ctx, e.Deadline)
	defer cancel()
	now := time.Now()
	state, hasState := c.State()
	rec := &Record{
		ID: newID(), Version: 1, Principal: c.Principal, Tool: e.Tool.Name, Status: StatusWorking,
		Quota:     quotaOf(c),
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(to.TTL),
		Arguments: e.Arguments, ProtocolVersion: c.ProtocolVersion, Capabilities: c.CapabilitiesJSON(), IdempotencyKey: e.Key,
		State: state, HasState: hasState, Responses: c.InputResponses(),
		LeaseUntil: now.Add(to.DispatchGrace),
	}
	keyed := rec.IdempotencyKey != "" || e.Tool.IdempotentByArguments
	if keyed {
		rec.ID = keyedID(rec.Principal, rec.Tool, rec.IdempotencyKey, e.Arguments)
	}
	// Everything the record keeps counts, the client's capabilities
	// included: the bound is on what is stored.
	if n := rec.StoredSize(); n > maxCall {
		return stateless.Refusal(mcperr.Wrap(mcperr.KindMalformedParams, fmt.Errorf("a call of %d bytes is too large to run as a task (at most %d)", n, maxCall)).
			WithData(map[string]any{"reason": "task_call_too_large", "maxBytes": maxCall}))
	}
	dispatch, kind := true, "task"
	switch err := to.Store.Create(ctx, rec); {
	case errors.Is(err, ErrExists):
		found, lerr := to.Store.Load(ctx, rec.ID)
		if lerr != nil || found.Principal != rec.Principal || found.Tool != rec.Tool || found.IdempotencyKey != rec.IdempotencyKey {
			return stateless.Refusal(mcperr.NewRetryable(mcperr.KindDependencyFailure, time.Second, fmt.Errorf("creating the task: %w", errors.Join(err, lerr))))
		}
		rec, dispatch, kind = found, found.Status == StatusWorking && found.Owner == "", "task_found"
	case errors.Is(err, ErrTooLarge):
		return stateless.Refusal(writeRefusal(err))
	case errors.Is(err, ErrLiveTasks), errors.Is(err, ErrShare):
		// The caller's own limit: its refusal, not a fault of the server's.
		return stateless.Refusal(mcperr.NewRetryable(mcperr.KindRateLimited, liveRetryAfter, err))
	case err != nil:
		return stateless.Refusal(mcperr.NewRetryable(mcperr.KindDependencyFailure, time.Second, fmt.Errorf("creating the task: %w", err)))
	}
	if dispatch {
		if err := x.dispatch(ctx, rec.ID); err != nil {
			if !keyed {
				// No retry can find this task: end it.
				_, _ = mutate(context.WithoutCancel(ctx), to.Store, rec.ID, func(r *Record, _ time.Time) bool {
					if r.Status.Terminal() {
						return false
					}
					failTask(r, mcperr.Wrap(mcperr.KindDependencyFailure, nil), "No worker could be started for the task.")
					return true
				})
			}
			// A keyed one waits for the retry, which finds it and hands
			// it out again.
			return stateless.Refusal(mcperr.NewRetryable(mcperr.KindDependencyFailure, time.Second, fmt.Errorf("dispatching the task: %w", err)))
		}
	}
	a := e.Result(appendTask(nil, to, rec, false), "task")
	e.Note(stateless.Note{Kind: kind})
	return a
}

// quotaOf is the quota key a task of c records: none when it is the
// principal.
func quotaOf(c *stateless.Call) string {
	if k := c.QuotaKey(); k != c.Principal {
		return k
	}
	return ""
}

// dispatch hands the task to a worker: Options.Dispatch, or a goroutine
// of this process.
func (x *Extension) dispatch(ctx context.Context, id string) error {
	if d := x.opts.Dispatch; d != nil {
		return d(ctx, id)
	}
	go x.Run(context.Background(), id) //nolint:errcheck // a failed run is re-driven by tasks/get
	return nil
}
