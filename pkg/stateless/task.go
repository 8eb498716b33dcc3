package stateless

import (
	"context"
	"errors"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// ExtensionTasks is the identifier of the tasks extension (SEP-2663): a
// tools/call may answer with a task handle, which the client polls with
// tasks/get, feeds input with tasks/update and stops with tasks/cancel.
// Package tasks serves it, through the server's seams: an execution
// interceptor that makes a call a task (one that provides TaskRuns) and
// its methods (AddMethod).
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// TaskSupport says whether a tool's calls run as tasks of the tasks
// extension. The extension has no wire declaration of it: the server
// alone decides, per call.
type TaskSupport uint8

const (
	// TaskSupportForbidden: the call is always answered in its request (the
	// default).
	TaskSupportForbidden TaskSupport = iota
	// TaskSupportOptional: the call becomes a task when the client declares the
	// extension on it, and is answered in its request otherwise.
	TaskSupportOptional
	// TaskSupportRequired: the call always becomes a task; a client that does not
	// declare the extension is refused with -32021 naming it, before
	// anything runs.
	TaskSupportRequired
)

// TaskRun describes the run of a task a handler is part of; see
// [ToolRequest.Task].
type TaskRun struct {
	// ID is the task's id.
	ID string
	// Attempt counts the runs of the task, from 1: a run after an input
	// round, or after a worker died, is another.
	Attempt int
}

// runsAsTask decides whether a tools/call of t becomes a task: when the
// tool supports tasks, an interceptor serves them and the client declared
// the extension on this request. A tool that only runs as a task, called
// by a client that did not declare it, is refused -32021 naming it.
func runsAsTask(x *exchange, t *registeredTool) (bool, *mcperr.Error) {
	if t.def.TaskSupport == TaskSupportForbidden || !x.s.taskRuns {
		return false, nil
	}
	if !x.legacy && x.call.Declares(ExtensionTasks) {
		return true, nil
	}
	if t.def.TaskSupport == TaskSupportRequired {
		return false, mcperr.NewMissingCapability(map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}})
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
