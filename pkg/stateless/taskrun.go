package stateless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// runsAsTask decides whether a tools/call of t becomes a task: when the
// tool supports tasks, the server serves them and the client declared the
// extension on this request. A tool that only runs as a task, called by a
// client that did not declare it, is refused -32021 naming it.
func runsAsTask(x *exchange, t *registeredTool) (bool, *mcperr.Error) {
	if t.def.TaskSupport == TaskForbidden || x.s.tasks == nil {
		return false, nil
	}
	if !x.legacy && declaresTasks(&x.call) {
		return true, nil
	}
	if t.def.TaskSupport == TaskRequired {
		return false, missingTasksExtension()
	}
	return false, nil
}

// errStartTask is what the request's part of a task call returns when the
// task is to be created: BeforeTask, if any, let it through.
var errStartTask = errors.New("stateless: start the task")

// beforeTask is the handler run in the request of a call that becomes a
// task: the tool's BeforeTask, then the signal to create it.
func beforeTask(t *registeredTool) ToolHandler {
	return func(ctx context.Context, req *ToolRequest) (*CallToolResult, error) {
		if t.def.BeforeTask != nil {
			if err := t.def.BeforeTask(ctx, req); err != nil {
				return nil, err
			}
		}
		return nil, errStartTask
	}
}

// createTask stores the call as a new task, hands it to a worker and
// answers with it. The answer leaves only once the task is stored, so a
// tasks/get right after it finds it; a task no worker could be given is
// failed and the call refused retryably.
func createTask(x *exchange, ctx context.Context, t *registeredTool, args json.RawMessage) *Response {
	to := x.s.tasks
	ctx = bounded(x, ctx)
	now := time.Now()
	rec := &TaskRecord{
		ID: newTaskID(), Version: 1, Principal: x.call.Principal, Tool: t.def.Name, Status: TaskWorking,
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(to.TTL),
		Arguments: args, ProtocolVersion: x.version, Capabilities: x.call.capsRaw, IdempotencyKey: x.call.IdempotencyKey,
		State: x.call.state, HasState: x.call.hasState, Responses: x.call.inputResponses,
		LeaseUntil: now.Add(to.DispatchGrace),
	}
	// Everything the record keeps counts, the client's capabilities
	// included: the bound is on what is stored.
	if n := rec.StoredSize(); n > maxTaskCall {
		return x.refuse(x.d.id, mcperr.Wrap(mcperr.MalformedParams, fmt.Errorf("a call of %d bytes is too large to run as a task (at most %d)", n, maxTaskCall)).
			WithData(map[string]any{"reason": "task_call_too_large", "maxBytes": maxTaskCall}))
	}
	if err := to.Store.Create(ctx, rec); err != nil {
		if errors.Is(err, ErrTaskTooLarge) {
			return x.refuse(x.d.id, taskWriteRefusal(err))
		}
		return x.refuse(x.d.id, mcperr.NewRetryable(mcperr.DependencyFailure, time.Second, fmt.Errorf("creating the task: %w", err)))
	}
	if err := dispatchTask(x.s, ctx, rec.ID); err != nil {
		_, _ = mutateTask(context.WithoutCancel(ctx), to.Store, rec.ID, func(r *TaskRecord, _ time.Time) bool {
			if r.Status.Terminal() {
				return false
			}
			failTask(r, mcperr.Wrap(mcperr.DependencyFailure, nil), "No worker could be started for the task.")
			return true
		})
		return x.refuse(x.d.id, mcperr.NewRetryable(mcperr.DependencyFailure, time.Second, fmt.Errorf("dispatching the task: %w", err)))
	}
	x.o.Kind = "task"
	return x.result(preEncoded(appendTask(nil, to, rec, false)), &resultFields{resultTyp: "task"})
}

// dispatchTask hands the task to a worker: TaskOptions.Dispatch, or a
// goroutine of this process.
func dispatchTask(s *Server, ctx context.Context, id string) error {
	if d := s.tasks.Dispatch; d != nil {
		return d(ctx, id)
	}
	go s.RunTask(context.Background(), id) //nolint:errcheck // a failed run is re-driven by tasks/get
	return nil
}
