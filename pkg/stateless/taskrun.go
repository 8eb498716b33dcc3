package stateless

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/canon"
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
//
// A keyed call's task has an id derived from its key (keyedTaskID), so
// that the call makes one task however it is retried: when the id is
// taken by a task of the same caller, tool and key — this call's own
// write, landed though the store's acknowledgement was lost, or the task
// a first call stored before its instance died with its claim still in
// progress — that task is the answer, and it is handed to a worker again
// if none holds it (a second delivery is fenced).
func (x *exchange) createTask(ctx context.Context, t *registeredTool, args json.RawMessage) *Response {
	to := x.s.tasks
	ctx = x.bounded(ctx)
	now := time.Now()
	rec := &TaskRecord{
		ID: newTaskID(), Version: 1, Principal: x.call.Principal, Tool: t.def.Name, Status: TaskWorking,
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(to.TTL),
		Arguments: args, ProtocolVersion: x.version, Capabilities: x.call.capsRaw, IdempotencyKey: x.call.IdempotencyKey,
		State: x.call.state, HasState: x.call.hasState, Responses: x.call.inputResponses,
		LeaseUntil: now.Add(to.DispatchGrace),
	}
	keyed := rec.IdempotencyKey != "" || t.def.IdempotentByArguments
	if keyed {
		rec.ID = keyedTaskID(rec.Principal, rec.Tool, rec.IdempotencyKey, args)
	}
	// Everything the record keeps counts, the client's capabilities
	// included: the bound is on what is stored.
	if n := rec.StoredSize(); n > maxTaskCall {
		return x.refuse(x.d.id, mcperr.Wrap(mcperr.MalformedParams, fmt.Errorf("a call of %d bytes is too large to run as a task (at most %d)", n, maxTaskCall)).
			WithData(map[string]any{"reason": "task_call_too_large", "maxBytes": maxTaskCall}))
	}
	dispatch := true
	switch err := to.Store.Create(ctx, rec); {
	case errors.Is(err, ErrTaskExists):
		found, lerr := to.Store.Load(ctx, rec.ID)
		if lerr != nil || found.Principal != rec.Principal || found.Tool != rec.Tool || found.IdempotencyKey != rec.IdempotencyKey {
			return x.refuse(x.d.id, mcperr.NewRetryable(mcperr.DependencyFailure, time.Second, fmt.Errorf("creating the task: %w", errors.Join(err, lerr))))
		}
		rec, dispatch = found, found.Status == TaskWorking && found.Owner == ""
		x.o.Kind = "task_found"
	case errors.Is(err, ErrTaskTooLarge):
		return x.refuse(x.d.id, taskWriteRefusal(err))
	case err != nil:
		return x.refuse(x.d.id, mcperr.NewRetryable(mcperr.DependencyFailure, time.Second, fmt.Errorf("creating the task: %w", err)))
	}
	if dispatch {
		if err := x.s.dispatchTask(ctx, rec.ID); err != nil {
			if !keyed {
				// No retry can find this task: end it.
				_, _ = mutateTask(context.WithoutCancel(ctx), to.Store, rec.ID, func(r *TaskRecord, _ time.Time) bool {
					if r.Status.Terminal() {
						return false
					}
					failTask(r, mcperr.Wrap(mcperr.DependencyFailure, nil), "No worker could be started for the task.")
					return true
				})
			}
			// A keyed one waits for the retry, which finds it and hands
			// it out again.
			return x.refuse(x.d.id, mcperr.NewRetryable(mcperr.DependencyFailure, time.Second, fmt.Errorf("dispatching the task: %w", err)))
		}
	}
	if x.o.Kind == "" {
		x.o.Kind = "task"
	}
	return x.result(preEncoded(appendTask(nil, to, rec, false)), &resultFields{resultTyp: "task"})
}

// keyedTaskID is the id of the task of a keyed call: 192 bits of SHA-256
// over the caller, the tool, the key ("" for a tool deduplicated by its
// arguments) and the arguments' canonical digest, base64url, as
// newTaskID's are. The same key with other arguments is another task
// (and, with a claim, refused as a conflict before this). The id is as
// hard to guess as the key and the arguments, and bound to the principal
// like every task: whoever could name it could as well send the keyed
// call again and have its CreateTaskResult replayed.
func keyedTaskID(principal, tool, key string, args json.RawMessage) string {
	h := sha256.New()
	for _, part := range []string{"io.github.serverless-mcp/task", principal, tool, key} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	d := canon.Digest(args)
	h.Write(d[:])
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:24])
}

// dispatchTask hands the task to a worker: TaskOptions.Dispatch, or a
// goroutine of this process.
func (s *Server) dispatchTask(ctx context.Context, id string) error {
	if d := s.tasks.Dispatch; d != nil {
		return d(ctx, id)
	}
	go s.RunTask(context.Background(), id) //nolint:errcheck // a failed run is re-driven by tasks/get
	return nil
}
